"""The SDK against the in-process Nebius mock over the wire: lifecycle, operations, paging, platforms,
reservation policies."""

from __future__ import annotations

import pytest
from nebius_sdk import InstanceStatusSummary, NotFound, Operation
from nebius_sdk.models import (
    InstanceState,
    ReservationPolicyPolicy,
    instance_state,
    is_preemptible,
    private_ip,
    public_ip,
)

H100 = ("gpu-h100-sxm", "1gpu-16vcpu-200gb")
CPU = ("cpu-d3", "4vcpu-16gb")
H100_BLOCK = "capacityblockgroup-e00h100block000001"
WAIT = 60.0  # generous: the mock finishes a 120 s create in 0.24 s


def test_full_lifecycle(client) -> None:
    op = client.begin_create_instance("vm-life", *H100, labels={"fleet": "f1"})
    assert op.id.startswith("computeoperation-") and op.resource_id.startswith("computeinstance-")
    assert client.find_instance("vm-life").metadata.id == op.resource_id  # visible while creating

    instance = op.result(timeout=WAIT)
    assert op.done() and op.successful() and op.status() == "succeeded"
    assert op.rpc_status is not None and op.rpc_status.code == 0
    assert instance_state(instance) is InstanceState.RUNNING
    assert instance.metadata.labels == {"fleet": "f1"}
    assert public_ip(instance).count(".") == 3 and "/" not in public_ip(instance)
    assert private_ip(instance).startswith("10.")
    assert [i.metadata.id for i in client.list_instances()] == [op.resource_id]

    stopped = client.begin_stop_instance(op.resource_id).result(timeout=WAIT)
    assert instance_state(stopped) is InstanceState.STOPPED
    started = client.begin_start_instance(op.resource_id).result(timeout=WAIT)
    assert instance_state(started) is InstanceState.RUNNING

    client.delete_instance(op.resource_id, wait_timeout=WAIT)
    with pytest.raises(NotFound):
        client.get_instance(op.resource_id)
    assert client.find_instance("vm-life") is None
    gone = client.begin_delete_instance(op.resource_id)  # already gone: a finished Operation
    assert gone.done() and (gone.id, gone.resource_id, gone.status()) == ("", op.resource_id, "succeeded")
    assert gone.result(timeout=0) is None
    with pytest.raises(NotFound):
        client.begin_delete_instance(op.resource_id, missing_ok=False)


def test_created_stopped_instance_stays_stopped(client) -> None:
    instance = client.begin_create_instance("vm-stopped", *CPU, stopped=True).result(timeout=WAIT)
    assert instance_state(instance) is InstanceState.STOPPED and instance.spec.stopped


def test_operation_resumes_from_its_id_in_another_client(client, client_factory, nebius_endpoint) -> None:
    op = client.begin_create_instance("vm-resume", *CPU)
    client.close()  # the first "process" goes away; the cloud operation keeps running
    later = client_factory(nebius_endpoint)
    resumed = later.resume_operation(op.continuation_token())
    assert isinstance(resumed, Operation) and resumed.resource_id == op.resource_id
    assert resumed.result(timeout=WAIT).metadata.name == "vm-resume"

    delete = later.begin_delete_instance(op.resource_id)
    assert later.resume_operation(delete.continuation_token()).result(timeout=WAIT) is None  # a delete yields None


def test_resume_operation_of_unknown_id_is_not_found(client) -> None:
    with pytest.raises(NotFound):
        client.resume_operation("computeoperation-e00doesnotexist00")


def test_list_instances_pages(client) -> None:
    names = [f"vm-page-{i}" for i in range(5)]
    for name in names:
        client.begin_create_instance(name, *CPU, stopped=True)
    pages = list(client.list_instances(page_size=2).by_page())
    assert [len(p) for p in pages] == [2, 2, 1]
    assert pages[-1].next_token == "" and all(p.next_token for p in pages[:-1])
    assert [i.metadata.name for i in client.list_instances(page_size=2)] == names
    resumed = client.list_instances(page_size=2).by_page(continuation_token=pages[0].next_token)
    assert [i.metadata.name for page in resumed for i in page] == names[2:]


def test_operations_are_listed_by_parent_and_by_resource(client) -> None:
    """By parent newest first, as SkyPilot reads them (`sky/provision/nebius/utils.py:741`: the first listed for an
    instance is its most recent; real-clouds.md Part 2 D10), across pages."""
    op = client.begin_create_instance("vm-ops", *CPU)
    op.wait(timeout=WAIT)
    stop = client.begin_stop_instance(op.resource_id)
    stop.wait(timeout=WAIT)
    by_parent = list(client.list_operations_by_parent(page_size=1))
    assert [o.id for o in by_parent] == [stop.id, op.id]
    assert all(o.done() for o in by_parent)
    assert [o.id for o in client.list_operations(op.resource_id)] == [op.id, stop.id]


def test_platforms(client) -> None:
    platforms = {p.metadata.name: p for p in client.list_platforms(page_size=2)}
    assert "gpu-h100-sxm" in platforms and "cpu-d3" in platforms
    presets = [p.name for p in platforms["gpu-h100-sxm"].spec.presets]
    assert "1gpu-16vcpu-200gb" in presets
    assert client.get_platform("gpu-h100-sxm").spec.presets[0].resources.gpu_count >= 1
    with pytest.raises(NotFound):
        client.get_platform("gpu-z999")


def test_platforms_state_the_memory_of_one_gpu(client) -> None:
    """`PlatformSpec.gpu_memory_gigabytes` is what gpuhunt matches against the GPU's known memory
    (gpuhunt `src/gpuhunt/providers/nebius.py:168-179`; real-clouds.md Part 2 D5): 80 GB for an H100."""
    memory = {p.metadata.name: p.spec.gpu_memory_gigabytes for p in client.list_platforms()}
    assert (memory["gpu-h100-sxm"], memory["gpu-h200-sxm"], memory["gpu-l40s-d"], memory["cpu-d3"]) == (80, 141, 48, 0)


@pytest.mark.parametrize(
    ("reservation", "ids", "expected_block"),
    [
        (None, (), H100_BLOCK),  # AUTO (unset): any matching block first
        (ReservationPolicyPolicy.STRICT, (H100_BLOCK,), H100_BLOCK),
        (ReservationPolicyPolicy.FORBID, (), ""),
    ],
)
def test_reservation_policy_is_honoured(client, reservation, ids, expected_block) -> None:
    op = client.begin_create_instance("vm-res", *H100, reservation=reservation, reservation_ids=ids)
    instance = op.result(timeout=WAIT)
    assert instance.status.reservation_id == expected_block
    if reservation is not None:
        assert instance.spec.reservation_policy.policy is reservation


def test_debug_log_names_each_call_and_its_request_id(client, caplog) -> None:
    import logging

    caplog.set_level(logging.DEBUG, logger="nebius_sdk")
    list(client.list_instances())
    [record] = [r for r in caplog.records if "InstanceService/List" in r.getMessage()]
    assert "request id " in record.getMessage() and "request id ," not in record.getMessage()


def test_batch_get_instances_maps_ids_to_instances_or_errors(client) -> None:
    ids = [client.begin_create_instance(f"vm-batch-{i}", *CPU).resource_id for i in range(2)]
    gone = client.begin_create_instance("vm-batch-gone", *CPU).resource_id
    client.delete_instance(gone, wait_timeout=WAIT)
    found = client.batch_get_instances([*ids, gone, ids[0]])
    assert set(found) == {*ids, gone}
    assert [found[i].metadata.name for i in ids] == ["vm-batch-0", "vm-batch-1"]
    assert isinstance(found[gone], NotFound)
    assert client.batch_get_instances([]) == {}


def test_batch_get_instance_statuses_reads_what_batch_get_instances_reads(client) -> None:
    ids = [client.begin_create_instance(f"vm-status-{i}", *CPU).result(timeout=WAIT).metadata.id for i in range(2)]
    gone = client.begin_create_instance("vm-status-gone", *CPU).resource_id
    client.delete_instance(gone, wait_timeout=WAIT)
    statuses = client.batch_get_instance_statuses([*ids, gone, ids[0]])
    full = client.batch_get_instances([*ids, gone])
    assert set(statuses) == {*ids, gone}
    assert {i: (statuses[i].state, statuses[i].reconciling) for i in ids} == {
        i: (full[i].status.state, full[i].status.reconciling) for i in ids
    }
    assert all(isinstance(statuses[i], InstanceStatusSummary) for i in ids)
    assert isinstance(statuses[gone], NotFound)
    assert client.batch_get_instance_statuses([]) == {}


def test_preemptible_and_spot_pricing_policy(client) -> None:
    spot = client.begin_create_instance(
        "vm-spot", *H100, preemptible=True, spot_pricing_policy_id="pricingpolicy-e00cap"
    ).result(timeout=WAIT)
    regular = client.begin_create_instance("vm-regular", *H100).result(timeout=WAIT)
    assert is_preemptible(spot) and not is_preemptible(regular)
    assert spot.spec.spot_pricing_policy.id == "pricingpolicy-e00cap" and spot.spec.preemptible is not None
    with pytest.raises(ValueError, match="needs preemptible"):
        client.begin_create_instance("vm-bad", *H100, spot_pricing_policy_id="pricingpolicy-e00cap")
