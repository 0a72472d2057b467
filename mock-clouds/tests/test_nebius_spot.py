"""Nebius mock: preemptible (spot) instances, the `pricing_model` oneof, BatchGet and
ListInstancesByNVLInstanceGroup."""

from __future__ import annotations

import time

import grpc
import pytest
from mock_clouds.core.models import Provider
from mock_clouds.nebius import testkit
from mock_clouds.nebius._pb.nebius.common import v1 as common
from mock_clouds.nebius._pb.nebius.compute import v1 as compute

State = compute.InstanceStatusInstanceState
STOP = compute.PreemptibleSpecPreemptionPolicy.STOP
OTHER_TENANT = "tenant-e00zz9yy8xx7ww6vv5"


def _created(nebius, name: str, **spec_fields) -> compute.Instance:
    op = nebius.client.wait(nebius.create(name, testkit.instance_spec(**spec_fields)))
    assert op.status.code == 0, op.status
    return nebius.get(op.resource_id)


def _running(nebius, instance_id: str) -> compute.Instance:
    deadline = time.monotonic() + testkit.DEFAULT_TIMEOUT
    while time.monotonic() < deadline:
        instance = nebius.get(instance_id)
        if instance.status.state == State.RUNNING:
            return instance
        time.sleep(0.01)
    raise AssertionError(f"{instance_id} never ran")


@pytest.mark.parametrize(
    "pricing",
    [
        {"follows_spot_price": compute.FollowsSpotPriceSpec()},
        {"spot_pricing_policy": compute.SpotPricingPolicySpec(id="pricingpolicy-e00max")},
        {
            "preemptible": compute.PreemptibleSpec(on_preemption=STOP),
            "follows_spot_price": compute.FollowsSpotPriceSpec(),
        },
    ],
)
def test_pricing_model_round_trips(nebius, pricing) -> None:
    instance = _created(nebius, "spot", **pricing)
    for name, value in pricing.items():
        assert getattr(instance.spec, name) == value
    assert instance.spec.on_demand is None


def test_on_demand_is_the_default_and_stays_unset(nebius) -> None:
    explicit = _created(nebius, "explicit", on_demand=compute.OnDemandSpec())
    implicit = _created(nebius, "implicit")
    assert explicit.spec.on_demand == compute.OnDemandSpec() and implicit.spec.on_demand is None


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"on_demand": compute.OnDemandSpec(), "preemptible": compute.PreemptibleSpec(on_preemption=STOP)},
         "spec.on_demand"),
        ({"spot_pricing_policy": compute.SpotPricingPolicySpec()}, "spec.spot_pricing_policy.id"),
    ],
)
def test_contradictory_or_incomplete_pricing_is_invalid(nebius, fields, path) -> None:
    failed = testkit.failure(nebius.client.instances.create, testkit.create_request(
        nebius.project, "bad-pricing", testkit.instance_spec(**fields)
    ))
    assert failed.code == grpc.StatusCode.INVALID_ARGUMENT
    assert path in str(failed.error.to_dict())


def test_a_preemptible_instance_without_a_pricing_model_is_refused(nebius) -> None:
    """The live API: `INVALID_ARGUMENT: spec.pricing_model - pricing model must be specified for a preemptible
    instance` (real-clouds.md §2, the spot row; "Preemptible VMs require follows_spot_price or
    spot_pricing_policy", the `nebius` 0.6.29 field doc). The peers always send one (SkyPilot
    `sky/provision/nebius/utils.py:709`, dstack `backends/nebius/resources.py:390-391`)."""
    spec = testkit.instance_spec(preemptible=compute.PreemptibleSpec(on_preemption=STOP))
    failed = testkit.failure(nebius.client.instances.create, testkit.create_request(nebius.project, "no-model", spec))
    assert failed.code == grpc.StatusCode.INVALID_ARGUMENT
    assert failed.message == "spec.pricing_model - pricing model must be specified for a preemptible instance"
    assert [(v.field, v.message) for v in failed.error.bad_request.violations] == [
        ("spec.pricing_model", "pricing model must be specified for a preemptible instance")
    ]


def test_a_spot_instance_cannot_become_on_demand(nebius) -> None:
    instance = _created(nebius, "stays-spot", follows_spot_price=compute.FollowsSpotPriceSpec())
    spec = testkit.instance_spec(on_demand=compute.OnDemandSpec())
    request = compute.UpdateInstanceRequest(metadata=common.ResourceMetadata(id=instance.metadata.id), spec=spec)
    failed = testkit.failure(nebius.client.instances.update, request)
    assert failed.code == grpc.StatusCode.INVALID_ARGUMENT and "spec.pricing_model" in str(failed.error.to_dict())


def test_preemption_stops_a_preemptible_instance_which_can_be_started_again(nebius) -> None:
    """`on_preemption: STOP` is the only policy: a preempted VM is STOPPED and holds no capacity."""
    instance = _created(nebius, "preempted", preemptible=compute.PreemptibleSpec(on_preemption=STOP),
                        follows_spot_price=compute.FollowsSpotPriceSpec())
    instance_id = instance.metadata.id
    _running(nebius, instance_id)
    with nebius.world.tx() as world:
        vm = world.preempt(Provider.NEBIUS, instance_id)
        assert (vm.preempted, vm.holds_capacity) == (True, False)
    assert nebius.get(instance_id).status.state == State.STOPPED
    op = nebius.client.wait(nebius.client.instances.start(compute.StartInstanceRequest(id=instance_id)))
    assert op.status.code == 0
    _running(nebius, instance_id)
    with nebius.world.tx() as world:
        assert world.vm(Provider.NEBIUS, instance_id).preempted is False


def test_batch_get_maps_each_id_to_its_instance_or_error(nebius) -> None:
    first, second = _created(nebius, "one"), _created(nebius, "two")
    missing = "computeinstance-e00doesnotexist000"
    ids = [first.metadata.id, second.metadata.id, missing, first.metadata.id]
    response = nebius.client.instances.batch_get(compute.BatchGetRequest(instance_ids=ids))
    assert set(response.items) == {first.metadata.id, second.metadata.id, missing}
    assert response.items[first.metadata.id].instance.metadata.name == "one"
    assert response.items[second.metadata.id].instance.metadata.name == "two"
    error = response.items[missing].error
    assert error.code == grpc.StatusCode.NOT_FOUND.value[0] and response.items[missing].instance is None


def test_batch_get_of_another_tenants_instance_is_permission_denied(nebius) -> None:
    mine = _created(nebius, "mine")
    other = nebius.connect(nebius.token_of(OTHER_TENANT))
    response = other.instances.batch_get(compute.BatchGetRequest(instance_ids=[mine.metadata.id]))
    assert response.items[mine.metadata.id].error.code == grpc.StatusCode.PERMISSION_DENIED.value[0]


@pytest.mark.parametrize("count", [0, 1001])
def test_batch_get_needs_between_1_and_1000_ids(nebius, count) -> None:
    request = compute.BatchGetRequest(instance_ids=[f"computeinstance-e00x{i:013d}" for i in range(count)])
    failed = testkit.failure(nebius.client.instances.batch_get, request)
    assert failed.code == grpc.StatusCode.INVALID_ARGUMENT


def test_list_instances_by_nvl_instance_group(nebius) -> None:
    group = "computenvlinstancegroup-e00group000001"
    members = [_created(nebius, f"member-{i}", nvl_instance_group_id=group) for i in range(3)]
    _created(nebius, "outsider")
    listing = nebius.client.instances.list_instances_by_nvl_instance_group(
        compute.ListInstancesByNvlInstanceGroupRequest(nvl_instance_group_id=group, page_size=2)
    )
    assert [i.metadata.name for i in listing.items] == ["member-0", "member-1"] and listing.next_page_token
    rest = nebius.client.instances.list_instances_by_nvl_instance_group(
        compute.ListInstancesByNvlInstanceGroupRequest(
            nvl_instance_group_id=group, page_token=listing.next_page_token
        )
    )
    assert [i.metadata.id for i in rest.items] == [members[2].metadata.id] and rest.next_page_token == ""
    failed = testkit.failure(
        nebius.client.instances.list_instances_by_nvl_instance_group,
        compute.ListInstancesByNvlInstanceGroupRequest(),
    )
    assert failed.code == grpc.StatusCode.INVALID_ARGUMENT


def test_batch_get_shows_each_instance_exactly_as_get_also_after_it_changes(nebius) -> None:
    """BatchGet reuses each instance's encoding while nothing it is rendered from changed (speed only): before
    and after a change, every instance it returns is byte for byte what Get returns, and its response is byte
    for byte the BatchGetResponse built from them."""
    ids = [_created(nebius, f"vm-{i}").metadata.id for i in range(3)]
    missing = "computeinstance-e00doesnotexist000"
    raw = nebius.client.channel.unary_unary(
        "/nebius.compute.v1.InstanceService/BatchGet", compute.BatchGetRequest.SerializeToString, lambda b: b)

    def check() -> None:
        response = raw(compute.BatchGetRequest(instance_ids=[*ids, missing]))
        decoded = compute.BatchGetResponse.FromString(response)
        assert {i: bytes(decoded.items[i].instance) for i in ids} == {i: bytes(nebius.get(i)) for i in ids}
        assert decoded.items[missing].error.code == grpc.StatusCode.NOT_FOUND.value[0]
        assert response == bytes(decoded)

    check()
    nebius.client.wait(nebius.client.instances.stop(compute.StopInstanceRequest(id=ids[0])))
    check()
    assert nebius.get(ids[0]).status.state == State.STOPPED
