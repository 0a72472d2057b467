"""The responses the Nebius mock frames itself from instances already encoded (wire.list_instances_response,
wire.batch_get_response) are byte for byte what betterproto2 encodes for the same messages, and decode as them."""

from __future__ import annotations

from mock_clouds.core.models import Provider
from mock_clouds.nebius import render, testkit, wire
from mock_clouds.nebius._pb.google.protobuf import Any
from mock_clouds.nebius._pb.google.rpc import Status
from mock_clouds.nebius._pb.nebius.common import v1 as common
from mock_clouds.nebius._pb.nebius.compute import v1 as compute


def _instance(n: int) -> compute.Instance:
    """An instance big enough that its length takes a varint of two bytes."""
    return compute.Instance(
        metadata=common.ResourceMetadata(id=f"computeinstance-e00{n:015d}", parent_id="project-e00abc",
                                         name=f"fleet-{n}", resource_version=n + 1, labels={"vm-fleet": "f"}),
        spec=compute.InstanceSpec(resources=compute.ResourcesSpec(platform="gpu-h100-sxm",
                                                                  preset="8gpu-128vcpu-1600gb"),
                                  cloud_init_user_data="#cloud-config\n" + "x" * 300),
        status=compute.InstanceStatus(state=compute.InstanceStatusInstanceState.RUNNING, reconciling=n % 2 == 0),
    )


def test_a_list_response_framed_from_encoded_instances_is_the_list_response() -> None:
    instances = [_instance(n) for n in range(3)]
    for token in ("", "next-page"):
        framed = bytes(wire.list_instances_response([bytes(i) for i in instances], token))
        assert framed == bytes(compute.ListInstancesResponse(items=instances, next_page_token=token))
        assert compute.ListInstancesResponse.FromString(framed).items == instances
    assert bytes(wire.list_instances_response([], "")) == b""


def test_a_batch_get_response_framed_from_encoded_instances_and_errors_is_the_batch_get_response() -> None:
    found = _instance(7)
    missing = Status(code=5, message="instance computeinstance-e00missing not found",
                     details=[Any(type_url="type.googleapis.com/nebius.common.v1.ServiceError", value=b"\x0a\x01x")])
    results = [(found.metadata.id, bytes(found)), ("computeinstance-e00missing", missing)]
    framed = bytes(wire.batch_get_response(results))
    expected = compute.BatchGetResponse(items={
        found.metadata.id: compute.BatchGetResponseBatchGetResult(instance=found),
        "computeinstance-e00missing": compute.BatchGetResponseBatchGetResult(error=missing),
    })
    assert framed == bytes(expected)
    decoded = compute.BatchGetResponse.FromString(framed).items
    assert decoded[found.metadata.id].instance == found
    assert decoded["computeinstance-e00missing"].error == missing


def test_an_instance_rendered_from_its_create_request_is_the_instance_rendered_from_its_record(
        nebius, monkeypatch) -> None:
    created = nebius.create("spec-as-sent")
    stopped_clock = nebius.world.now()
    monkeypatch.setattr(nebius.world, "now", lambda: stopped_clock)  # the state shown stays what it is
    with nebius.world.read() as world:
        vm = world.vm(Provider.NEBIUS, created.resource_id)
        assert vm is not None and vm.id in render._SPECS[world]  # kept by the create, as the request encoded it
        first = render.instance_bytes(world, vm)
        render._ENCODED.clear()
        render._SPECS.clear()
        again = render.instance_bytes(world, vm)  # everything from the record
        assert first == again == bytes(render.instance(world, vm))
    assert compute.Instance.FromString(first).spec.resources.platform == testkit.H100[0]
    spec = testkit.instance_spec()
    assert wire.sole_message_field(bytes(compute.CreateInstanceRequest(spec=spec)), 2) == bytes(spec)
    assert wire.sole_message_field(b"\x12\x00\x12\x00", 2) is None  # repeated: protobuf would merge the two
    assert wire.sole_message_field(b"\x10\x01", 2) is None  # not length delimited
