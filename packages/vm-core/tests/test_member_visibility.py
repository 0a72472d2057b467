"""One definition of the members a fleet's views list (fleet.inspect.VISIBLE) and of a member's JSON (the
instance schema of `vm list`, model.Instance.to_json)."""

from __future__ import annotations

import json

from vm_core.api.fleet_reports import FleetList
from vm_core.cli.fleet_views import RUNNING, fleet_list
from vm_core.cli.output import JSON, Output
from vm_core.fleet.inspect import SHOWN, VISIBLE
from vm_core.fleet.store import MAY_EXIST, FleetRecord, FleetState, MemberRecord, MemberState
from vm_core.model import Instance, InstanceState

FLEET = FleetRecord(name="train", gpu="H100", gpu_count=8, count=9, min_count=1, strategy="spread",
                    state=FleetState.ACTIVE, fleet_id="f-1")


def _members() -> list[MemberRecord]:
    return [MemberRecord(fleet="train", slot=slot, attempt=0, provider="example", name=f"train-{slot}",
                         state=state, instance_id=f"i-{slot}" if state is not MemberState.INTENT else "",
                         price_per_hour=2.0) for slot, state in enumerate(MemberState)]


def test_visible_members_are_the_live_ones_and_the_missing() -> None:
    assert MAY_EXIST | {MemberState.RELEASED, MemberState.MISSING} == VISIBLE
    assert SHOWN < VISIBLE and not VISIBLE & {MemberState.FAILED, MemberState.DESTROYED}


def test_fleet_list_shows_exactly_the_visible_members_in_the_instance_schema(capsys) -> None:
    fleet_list(Output(JSON), FleetList(fleets=[(FLEET, _members())]))
    [doc] = json.loads(capsys.readouterr().out)
    assert [m["name"] for m in doc["members"]] == [m.name for m in _members() if m.state in VISIBLE]
    schema = set(Instance("p", "i", "n", InstanceState.RUNNING, "H100", 8, "r", "s").to_json())
    assert all(set(m) == schema for m in doc["members"])
    running = [m for m in doc["members"] if m["state"] == RUNNING]
    assert doc["price_per_hour"] == 2.0 * len(running) and running


def test_fleet_list_shows_a_running_member_the_ledger_last_saw_stopped_as_stopped_without_a_price(capsys) -> None:
    running = [m for m in _members() if m.state is MemberState.RUNNING]
    seen = {(m.provider, m.instance_id): InstanceState.STOPPED.value for m in running}
    fleet_list(Output(JSON), FleetList(fleets=[(FLEET, _members())], seen=seen))
    [doc] = json.loads(capsys.readouterr().out)
    shown = {m["name"]: m for m in doc["members"]}
    assert all(shown[m.name]["state"] == "stopped" and shown[m.name]["price_per_hour"] is None for m in running)
