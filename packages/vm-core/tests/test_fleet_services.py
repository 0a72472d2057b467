"""The services behind the fleet, ssh and lifecycle commands, against the mock clouds: what reaping decides for each
expired fleet (fleet/reap.py), the strategy and provider look-ups and forgetting (fleet/service.py), which members
ssh reaches and how each run ends (ssh.py), and what stop/start/reboot/destroy decide before acting
(lifecycle.py). They return data; the CLI only renders it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from vm_core import lifecycle
from vm_core.errors import AuthError, CapacityError, NotFound, StrategyError, Timeout, Unsupported, UsageError
from vm_core.fleet import reap
from vm_core.fleet.create import FleetCreator, FleetSpec
from vm_core.fleet.eligibility import Enforced
from vm_core.fleet.naming import FleetIdentity, check_fleet_name, generated_name
from vm_core.fleet.service import failure_kind, forget, strategy_failed, strategy_named
from vm_core.fleet.store import FleetRecord, MemberState, SqliteFleetStore
from vm_core.fleet.strategies import cheapest
from vm_core.model import CreateSpec, Instance, InstanceState, ReservationMode, ReservationRequest
from vm_core.ssh import SSH_FAILED, Ran, fleet_members, reachable, run_everywhere

from .test_fleet_manager import BUILT_IN, cloud_vms


@pytest.fixture
def fleet(mock_clouds: Any, connect: Any, tmp_path: Path) -> tuple[SqliteFleetStore, dict[str, Any]]:
    """A store with fleet `old` (2 nebius VMs, expired at EXPIRED) and the providers it was made with."""
    store, providers = SqliteFleetStore(tmp_path / "vm.db"), {name: connect(mock_clouds, name) for name in BUILT_IN}
    spec = FleetSpec(name="old", gpu="H100", count=2, min_count=2, providers=("nebius",), ttl=3600.0)
    FleetCreator(store, providers, cheapest, timeout=60).create(spec)
    store.update_fleet("old", expires_at=EXPIRED)
    return store, providers


EXPIRED = 1000.0  # long ago: reaping does not depend on the clock


def test_reap_finds_expired_fleets_and_previews_then_destroys_them(fleet: Any, mock_clouds: Any) -> None:
    store, providers = fleet
    assert reap.due(store, now=EXPIRED - 1) == []
    [listed] = reap.due(store)
    target = reap.target(listed, store, store.get_fleet("old"), providers, "default")
    assert isinstance(target, reap.Target) and target.live == 2
    would = reap.preview(target)
    assert (would.result, would.vms, would.ok) == (reap.Result.WOULD_DESTROY, 2, True)
    assert len(cloud_vms(mock_clouds, "old")) == 2  # a preview changes nothing
    done = reap.reap(target, timeout=60)
    assert (done.result, done.vms, done.ok) == (reap.Result.DESTROYED, 2, True) and len(done.actions) == 2
    assert cloud_vms(mock_clouds, "old") == [] and store.get_fleet("old") is None
    assert reap.reap(target, timeout=60).result is reap.Result.GONE


def test_reap_skips_a_fleet_it_cannot_reach_or_that_was_replaced(fleet: Any, mock_clouds: Any) -> None:
    store, providers = fleet
    [listed] = reap.due(store)
    current = store.get_fleet("old")
    some = {name: p for name, p in providers.items() if name != "nebius"}
    unreachable = reap.target(listed, store, current, some, "work")
    assert isinstance(unreachable, reap.Outcome) and unreachable.result is reap.Result.SKIPPED
    assert unreachable.reason == "profile work cannot reach nebius, which the fleet uses" and not unreachable.ok
    other = FleetRecord(name="old", gpu="H100", gpu_count=1, count=2, min_count=2, strategy="spread",
                        fleet_id="aaaaaaaa")
    replaced = reap.target(other, store, current, providers, "default")
    assert isinstance(replaced, reap.Outcome) and replaced.reason == reap.REPLACED
    assert len(cloud_vms(mock_clouds, "old")) == 2


def test_reap_leaves_a_fleet_whose_expiry_changed_meanwhile(fleet: Any, mock_clouds: Any) -> None:
    store, providers = fleet
    [listed] = reap.due(store)
    target = reap.target(listed, store, store.get_fleet("old"), providers, "default")
    assert isinstance(target, reap.Target)
    store.update_fleet("old", expires_at=time.time() + 3600)
    kept = reap.reap(target, timeout=60)
    assert (kept.result, kept.reason) == (reap.Result.SKIPPED, "its expiry was changed meanwhile")
    assert len(cloud_vms(mock_clouds, "old")) == 2


def test_outcomes_are_shown_oldest_fleet_first() -> None:
    def record(name: str, at: float) -> FleetRecord:
        return FleetRecord(name=name, gpu="H100", gpu_count=1, count=1, min_count=1, strategy="spread",
                           created_at=at)

    outcomes = [reap.gone(record("b", 2.0)), reap.skipped(record("a", 2.0), "x"), reap.gone(record("c", 1.0))]
    assert [o.fleet.name for o in reap.in_order(outcomes)] == ["c", "a", "b"]


def test_strategies_are_looked_up_by_name_and_enforced() -> None:
    chosen = strategy_named("cheapest")
    assert isinstance(chosen, Enforced) and chosen.name == "cheapest"
    with pytest.raises(UsageError, match=r"^strategy 'nope' is unknown; available: .*cheapest"):
        strategy_named("nope")


def test_a_failed_fleet_exits_with_the_kind_all_its_failures_share() -> None:
    assert failure_kind([Timeout("a"), Timeout("b")]) is Timeout
    assert failure_kind([AuthError("a")]) is AuthError
    assert failure_kind([Timeout("a"), AuthError("b")]) is CapacityError
    assert failure_kind([]) is CapacityError


def test_forget_removes_the_record_and_names_what_is_left_running(fleet: Any, mock_clouds: Any) -> None:
    store, _ = fleet
    record, left = forget(store, "old")
    assert record.name == "old" and len(left) == 2 and all(m.state is MemberState.RUNNING for m in left)
    assert store.get_fleet("old") is None and len(cloud_vms(mock_clouds, "old")) == 2
    with pytest.raises(NotFound):
        forget(store, "old")


def test_a_strategy_failure_before_anything_was_recorded_is_the_error_itself(tmp_path: Path) -> None:
    error = StrategyError("strategy 'x' is broken")
    assert strategy_failed(SqliteFleetStore(tmp_path / "vm.db"), FleetIdentity("", ""), error) is error


def test_generated_fleet_names_are_valid() -> None:
    assert check_fleet_name(generated_name()).startswith("fleet-")


def test_ssh_reaches_the_running_members_of_a_fleet(fleet: Any) -> None:
    store, providers = fleet
    members = fleet_members(store, providers, "old")
    assert members.running == 2 and members.failures == []
    assert all(reachable(i) is i for _, i in members.targets)
    without = fleet_members(store, {"crusoe": providers["crusoe"]}, "old")
    assert without.targets == [] and [e.message for _, e in without.failures] == ["nebius is not connected"] * 2


def test_a_vm_that_does_not_run_is_not_reachable() -> None:
    stopped = Instance("nebius", "i-1", "vm-1", InstanceState.STOPPED, "H100", 1, "eu-north1", "s")
    with pytest.raises(Exception, match="is stopped") as err:
        reachable(stopped)
    assert err.value.hint is not None and err.value.hint.commands[0].args[:2] == ("start", "i-1")


def test_each_member_runs_once_and_its_lines_and_status_come_back(tmp_path: Path) -> None:
    program = tmp_path / "ssh"
    program.write_text('#!/bin/sh\necho "args $*"\necho oops >&2\nexit 3\n')
    program.chmod(0o755)
    vm = Instance("nebius", "i-1", "m-0", InstanceState.RUNNING, "H100", 1, "r", "s", public_ip="192.0.2.1",
                  ssh_user="ubuntu")
    lines: dict[str, list[tuple[str, str]]] = {"m-0": [], "m-1": []}
    ran = run_everywhere(str(program), [("m-0", vm), ("m-1", vm)], ["uptime"],
                         lambda member: lambda kind, line: lines[member].append((kind, line)))
    assert [(r.member, r.code) for r in ran] == [("m-0", 3), ("m-1", 3)]
    assert ("stderr", "oops") in lines["m-0"] and any(line.endswith("ubuntu@192.0.2.1 uptime")
                                                       for kind, line in lines["m-1"] if kind == "stdout")
    assert ran[0].failure is not None and ran[0].failure.message == "exit 3 (the command failed)"
    assert Ran("m", vm, SSH_FAILED).failure.message == "exit 255 (ssh could not connect or log in)"  # type: ignore[union-attr]
    assert Ran("m", vm, 0).failure is None


def test_lifecycle_reads_each_vm_and_sorts_out_what_needs_nothing(mock_clouds: Any, connect: Any) -> None:
    nebius = connect(mock_clouds, "nebius")
    vm = nebius.begin_create(CreateSpec(name="lc", gpu="H100", gpu_count=1,
                                        reservation=ReservationRequest(ReservationMode.NONE))).wait(60)
    gone = "computeinstance-e00doesnotexist00"
    found = lifecycle.look_up(nebius, [vm.id, gone])
    assert isinstance(found[vm.id], Instance) and isinstance(found[gone], NotFound)
    assert (lifecycle.gone_note(found[gone]), lifecycle.gone_note(found[vm.id])) == (lifecycle.NOT_FOUND_NOTE, "")
    assert lifecycle.name_of(found[vm.id]) == "lc" and lifecycle.name_of(found[gone]) == ""
    assert lifecycle.shown(found[gone], "nebius", gone).state is InstanceState.UNKNOWN
    start = lifecycle.triage(found, [vm.id, gone], InstanceState.RUNNING)
    assert [i.id for i in start.settled] == [vm.id] and [i for i, _ in start.missing] == [gone] and start.todo == []
    assert lifecycle.triage(found, [vm.id, gone], None).todo == [vm.id]


def test_lifecycle_asks_the_provider_what_it_can_do(mock_clouds: Any, connect: Any) -> None:
    crusoe, lam, nebius = (connect(mock_clouds, name) for name in BUILT_IN)
    with pytest.raises(Unsupported, match="^Lambda has no stop/start") as err:
        lifecycle.stop_start(lam, "Lambda", ["i-1"])
    assert err.value.hint is not None and [c.args[0] for c in err.value.hint.commands] == ["reboot", "destroy"]
    assert lifecycle.stop_start(nebius, "Nebius", ["i-1"]) is nebius
    with pytest.raises(Unsupported, match="cannot start strictly"):
        lifecycle.strict_start(nebius, "Nebius", ["i-1"])
    assert lifecycle.strict_start(crusoe, "Crusoe", ["i-1"]) == crusoe.begin_start_reserved
    assert callable(lifecycle.reboot(lam, "Lambda", ["i-1"], hard=False))


def test_instances_get_the_fleet_name_their_record_gives(tmp_path: Path) -> None:
    from vm_core.config import Paths, Profile
    from vm_core.fleet.location import open_store
    from vm_core.fleet.owners import FleetNames
    from vm_core.fleet.store import MemberRecord
    from vm_core.plugins import provider_plugins
    from vm_core.session import Session

    session = Session(Profile("p"), Paths(tmp_path / "config.toml", tmp_path), provider_plugins(), {}, print)
    vm = Instance("nebius", "i-1", "t--x-0", InstanceState.RUNNING, "H100", 1, "r", "s")
    other = Instance("nebius", "i-2", "mine", InstanceState.RUNNING, "H100", 1, "r", "s")
    assert FleetNames(session).apply([vm], print) == [vm]  # no store yet: nothing to read
    store = open_store(session)
    store.create_fleet(FleetRecord(name="t", gpu="H100", gpu_count=1, count=1, min_count=1,
                                   strategy="spread"))
    store.add_member(MemberRecord(fleet="t", slot=0, attempt=0, provider="nebius", name="t--x-0",
                                  state=MemberState.RUNNING, instance_id="i-1"))
    named = FleetNames(session).apply([vm, other], print)
    assert [i.fleet for i in named] == ["t", None]
