"""Models: forward compatibility (unknown fields and states) and request encoding (pure)."""

from __future__ import annotations

import msgspec
from crusoe_sdk import ById, Instance, InstanceState, LowestCost, OnDemand, OperationState
from crusoe_sdk.models import CreateInstanceRequest, ItemsPage, OperationRecord, Project

INSTANCE = b"""{
  "id": "ca39e669", "project_id": "p1", "name": "vm", "type": "a100.2x", "location": "us-east1-a",
  "state": "STATE_HIBERNATING", "created_at": "2021-12-03T19:58:34Z", "updated_at": "2023-08-14T09:00:35Z",
  "billing_type": "On-demand", "reservation_id": "", "a_field_from_2030": {"x": 1},
  "network_interfaces": [{"ips": [{"private_ipv4": {"address": "10.1.2.3"},
                                   "public_ipv4": {"address": "121.0.0.9", "type": "dynamic", "new": 1}}]}]
}"""


def test_unknown_fields_are_ignored_and_unknown_states_become_unknown() -> None:
    vm = msgspec.json.decode(INSTANCE, type=Instance)
    assert vm.state is InstanceState.UNKNOWN
    assert (vm.public_ipv4, vm.private_ipv4) == ("121.0.0.9", "10.1.2.3")
    assert vm.created_at is not None and vm.created_at.year == 2021
    assert InstanceState("STATE_NEW_THING") is InstanceState.UNKNOWN


def test_known_states() -> None:
    assert InstanceState("STATE_RUNNING") is InstanceState.RUNNING
    assert InstanceState.STOPPED.is_stopped and InstanceState.SHUTOFF.is_stopped
    assert not InstanceState.SHUTDOWN.is_stopped  # libvirt: being shut down
    assert InstanceState.DELETING.is_gone


def test_operation_record() -> None:
    raw = b'{"operation_id": "OP", "state": "PAUSED", "metadata": {"id": "vm-1", "operation_name": "x"}}'
    record = msgspec.json.decode(raw, type=OperationRecord)
    assert record.state is OperationState.UNKNOWN and not record.state.is_terminal
    assert record.resource_id == "vm-1" and record.error.code == ""
    failed = OperationRecord(operation_id="OP", state=OperationState.FAILED,
                             result={"code": "out_of_stock", "message": "none left"})
    assert (failed.error.code, failed.error.message) == ("out_of_stock", "none left")


def test_a_project_may_have_null_resources() -> None:
    raw = b'{"items": [{"id": "p", "name": "n", "resources": null}]}'
    page = msgspec.json.decode(raw, type=ItemsPage[Project])
    assert page.items[0].resources is None and page.next_page_token == ""


def test_reservation_specifications_on_the_wire() -> None:
    assert LowestCost().to_wire() == {"selection_strategy": "lowest_cost"}
    assert OnDemand().to_wire() == {"selection_strategy": "on_demand"}
    assert ById("r-1").to_wire() == {"id": "r-1"}


def test_create_request_omits_empty_fields() -> None:
    body = CreateInstanceRequest(name="n", type="t", location="l", ssh_public_key="k",
                                 reservation_specification=OnDemand().to_wire())
    assert msgspec.json.decode(msgspec.json.encode(body)) == {
        "name": "n", "type": "t", "location": "l", "ssh_public_key": "k",
        "reservation_specification": {"selection_strategy": "on_demand"},
    }
