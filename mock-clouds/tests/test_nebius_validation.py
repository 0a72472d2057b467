"""Nebius mock: request validation and malformed input (never UNKNOWN or INTERNAL)."""

from __future__ import annotations

import grpc
import pytest
from mock_clouds.nebius import testkit
from mock_clouds.nebius._pb.nebius.common import v1 as common
from mock_clouds.nebius._pb.nebius.compute import v1 as compute

CREATE = "/nebius.compute.v1.InstanceService/Create"


def _violations(nebius, request: compute.CreateInstanceRequest) -> list[str]:
    failed = testkit.failure(nebius.client.instances.create, request)
    assert failed.code == grpc.StatusCode.INVALID_ARGUMENT
    assert failed.error.service == "compute" and failed.error.code == "BadRequest"
    assert failed.status.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    return [v.field for v in failed.error.bad_request.violations]


def _raw(nebius, method: str, payload: bytes) -> grpc.RpcError:
    call = nebius.client.channel.unary_unary(method)  # bytes in, bytes out
    with pytest.raises(grpc.RpcError) as raised:
        call(payload)
    return raised.value


def test_metadata_id_must_not_be_set_on_create(nebius):
    request = testkit.create_request(nebius.project, "x")
    request.metadata.id = "computeinstance-e00chosenbyclient0"
    assert _violations(nebius, request) == ["metadata.id"]


def test_missing_parent_name_and_spec(nebius):
    assert _violations(nebius, compute.CreateInstanceRequest()) == [
        "metadata.parent_id",
        "metadata.name",
        "spec",
    ]


def test_missing_platform_and_preset(nebius):
    spec = testkit.instance_spec()
    spec.resources = compute.ResourcesSpec()
    assert _violations(nebius, testkit.create_request(nebius.project, "x", spec)) == [
        "spec.resources.platform",
        "spec.resources.preset",
    ]


@pytest.mark.parametrize(
    ("platform", "preset", "field"),
    [
        ("gpu-x999", "1gpu-16vcpu-200gb", "spec.resources.platform"),
        ("gpu-h100-sxm", "3gpu-1vcpu-1gb", "spec.resources.preset"),
        ("gpu-b200-sxm", "8gpu-160vcpu-1792gb", "spec.resources.preset"),  # us-central1 only
    ],
)
def test_unknown_or_unavailable_shape(nebius, platform, preset, field):
    request = testkit.create_request(nebius.project, "x", testkit.instance_spec(platform, preset))
    assert _violations(nebius, request) == [field]


def test_shape_of_another_region_works_in_that_regions_project(nebius):
    spec = testkit.instance_spec("gpu-b200-sxm", "8gpu-160vcpu-1792gb")
    op = nebius.client.wait(nebius.create("b200", spec, project=nebius.projects["us-central1"]))
    assert op.status.code == 0


def test_network_interface_and_boot_disk_are_required(nebius):
    spec = testkit.instance_spec()
    spec.network_interfaces = []
    spec.boot_disk = None
    assert _violations(nebius, testkit.create_request(nebius.project, "x", spec)) == [
        "spec.network_interfaces",
        "spec.boot_disk",
    ]


def test_field_patterns_and_limits(nebius):
    spec = testkit.instance_spec(hostname="-Bad-", cloud_init_user_data="x" * 40000)
    spec.network_interfaces[0].name = "Eth 0"
    spec.boot_disk.attach_mode = compute.AttachedDiskSpecAttachMode.UNSPECIFIED
    assert _violations(nebius, testkit.create_request(nebius.project, "x", spec)) == [
        "spec.network_interfaces[0].name",
        "spec.boot_disk.attach_mode",
        "spec.cloud_init_user_data",
        "spec.hostname",
    ]


def _length_delimited(field: int, data: bytes) -> bytes:
    assert len(data) < 128
    return bytes([field << 3 | 2, len(data)]) + data


def test_unknown_enum_value_is_invalid(nebius):
    spec = bytes(testkit.instance_spec()) + b"\xba\x01\x02\x08\x07"  # reservation_policy (23) {policy: 7}
    metadata = common.ResourceMetadata(parent_id=nebius.project, name="x")
    error = _raw(nebius, CREATE, _length_delimited(1, bytes(metadata)) + _length_delimited(2, spec))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    error = testkit.service_error(testkit.rpc_status(error))
    assert [v.field for v in error.bad_request.violations] == ["spec.reservation_policy.policy"]


@pytest.mark.parametrize(
    "payload",
    [
        b"\x08\x01",  # a varint where the metadata message belongs
        b"\x0a\x05ab",  # length-delimited field longer than the input
        b"\xff\xff\xff",  # truncated varint key
        b"\x0b\x00",  # wire type 3 (groups) is not used by these messages
        b"\x0a\x02\x1a\xff",  # metadata.name with invalid UTF-8
    ],
)
def test_undecodable_request_is_invalid_argument(nebius, payload):
    error = _raw(nebius, CREATE, payload)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert testkit.service_error(testkit.rpc_status(error)).code == "BadRequest"


def test_unknown_fields_are_ignored(nebius):
    payload = bytes(compute.ListInstancesRequest(parent_id=nebius.project)) + b"\xf8\x07\x01"  # field 127
    response = compute.ListInstancesResponse.FromString(
        nebius.client.channel.unary_unary("/nebius.compute.v1.InstanceService/List")(payload)
    )
    assert response.items == []


def test_oversized_message_is_rejected_by_grpc(nebius):
    request = testkit.create_request(
        nebius.project, "big", testkit.instance_spec(cloud_init_user_data="x" * (5 << 20))
    )
    failed = testkit.failure(nebius.client.instances.create, request)
    assert failed.code == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_unknown_method_is_unimplemented(nebius):
    assert (
        _raw(nebius, "/nebius.compute.v1.InstanceService/Reboot", b"").code()
        == grpc.StatusCode.UNIMPLEMENTED
    )


@pytest.mark.parametrize(
    ("instance_id", "code"),
    [
        ("", grpc.StatusCode.INVALID_ARGUMENT),
        ("computeinstance-e00doesnotexist000", grpc.StatusCode.NOT_FOUND),
        ("../../etc/passwd", grpc.StatusCode.NOT_FOUND),
        ("x" * 5000, grpc.StatusCode.NOT_FOUND),
    ],
)
def test_bad_instance_ids(nebius, instance_id, code):
    for method, request in [
        (nebius.client.instances.get, compute.GetInstanceRequest(id=instance_id)),
        (nebius.client.instances.start, compute.StartInstanceRequest(id=instance_id)),
        (nebius.client.instances.delete, compute.DeleteInstanceRequest(id=instance_id)),
    ]:
        failed = testkit.failure(method, request)
        assert failed.code == code
        assert failed.error.code in ("BadRequest", "ResourceNotFound")


def test_get_by_name_requires_a_name(nebius):
    failed = testkit.failure(
        nebius.client.instances.get_by_name, common.GetByNameRequest(parent_id=nebius.project)
    )
    assert failed.code == grpc.StatusCode.INVALID_ARGUMENT
    assert [v.field for v in failed.error.bad_request.violations] == ["name"]
