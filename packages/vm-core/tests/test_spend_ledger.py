"""The spend ledger kept in the fleet store: fleet members entered with their record, observations split
intervals, a complete listing closes what it no longer shows."""

from __future__ import annotations

from pathlib import Path

from vm_core.fleet.store import FleetRecord, MemberRecord, MemberState, SqliteFleetStore
from vm_core.spend.ledger import Interval, LedgerVm, Observation, Pricing


def _store(tmp_path: Path) -> SqliteFleetStore:
    return SqliteFleetStore(tmp_path / "fleets.db")


def _vm(instance_id: str = "i-1", created_at: float = 1000.0) -> LedgerVm:
    return LedgerVm("crusoe", "acct", instance_id, "solo", "a100.1x", "us-east1-a", "A100", 1, Pricing.ON_DEMAND,
                    "", "", "", "default", "ana@box", created_at)


def _spans(intervals: list[Interval]) -> list[tuple[float, float | None, str, float | None]]:
    return [(i.started_at, i.ended_at, i.state, i.price_per_hour) for i in intervals]


def test_a_fleet_member_is_entered_with_its_record_and_closed_when_destroyed(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.create_fleet(FleetRecord("train", "H100", 8, 1, 1, "cheapest", fleet_id="f-1", profile="team",
                                   created_by="ana@box", accounts={"nebius": "tenant-1"}))
    store.add_member(MemberRecord("train", 0, 0, "nebius", "train-0"))
    assert store.ledger_vms() == []  # an intent has no VM vm knows of
    store.update_member("train", 0, 0, state=MemberState.CREATING, instance_id="computeinstance-1",
                        shape="gpu-h100-sxm/8gpu-128vcpu-1600gb", region="eu-north1", price_per_hour=23.6)
    store.update_member("train", 0, 0, state=MemberState.RUNNING)
    store.update_member("train", 0, 0, state=MemberState.DESTROYED)
    [vm] = store.ledger_vms()
    assert (vm.provider, vm.account, vm.instance_id, vm.fleet, vm.fleet_id, vm.profile, vm.created_by) == (
        "nebius", "tenant-1", "computeinstance-1", "train", "f-1", "team", "ana@box")
    assert vm.gpu == "H100" and vm.gpu_count == 8 and vm.pricing is Pricing.ON_DEMAND and vm.closed_at is not None
    states = [(i.state, i.price_per_hour) for i in store.ledger_intervals()]
    assert states == [("creating", 23.6), ("running", 23.6)]
    assert store.ledger_intervals()[-1].ended_at == vm.closed_at


def test_observations_split_intervals_by_state_and_price(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.record_vm(_vm(), "running", price_per_hour=2.0, source="create")
    store.observe([Observation("crusoe", "acct", "i-1", "running", 1500.0, "list")])  # nothing changed
    store.observe([Observation("crusoe", "acct", "i-1", "stopped", 2000.0, "stop")])
    store.observe([Observation("crusoe", "acct", "i-1", "running", 3000.0, "start", 1.5, Pricing.RESERVATION)])
    store.observe([Observation("crusoe", "acct", "i-1", "terminated", 4000.0, "destroy")])
    store.observe([Observation("crusoe", "acct", "i-1", "running", 5000.0, "list")])  # closed: not reopened
    assert _spans(store.ledger_intervals()) == [(1000.0, 2000.0, "running", 2.0), (2000.0, 3000.0, "stopped", 2.0),
                                                (3000.0, 4000.0, "running", 1.5)]
    assert store.ledger_intervals()[-1].pricing is Pricing.RESERVATION
    assert store.ledger_vms()[0].closed_at == 4000.0


def test_an_unknown_vm_is_never_entered_and_a_record_is_kept_once(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.observe([Observation("crusoe", "acct", "not-ours", "running", 1000.0, "list")])
    store.record_vm(_vm(), "running", price_per_hour=2.0, source="create")
    store.record_vm(_vm(created_at=1200.0), "stopped", price_per_hour=9.0, source="create")
    assert [v.instance_id for v in store.ledger_vms()] == ["i-1"]
    assert _spans(store.ledger_intervals()) == [(1000.0, None, "running", 2.0)]


def test_a_complete_listing_closes_the_vms_it_no_longer_shows(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.record_vm(_vm("i-1"), "running", price_per_hour=2.0, source="create")
    store.record_vm(_vm("i-2"), "running", price_per_hour=2.0, source="create")
    assert store.close_absent("crusoe", "acct", ["i-2"], 1800.0, "list") == 1
    assert store.close_absent("crusoe", "other-account", [], 1800.0, "list") == 0
    assert [v.instance_id for v in store.ledger_vms(open_only=True)] == ["i-2"]
    assert _spans(store.ledger_intervals(since=1900.0)) == [(1000.0, None, "running", 2.0)]
    assert _spans(store.ledger_intervals(until=900.0)) == []


def _version_6_store(path: Path) -> None:
    """A store as vm of schema version 6 left it: a fleet with a running member, no ledger."""
    import sqlite3

    from vm_core.fleet import schema

    db = sqlite3.connect(path)
    for version in range(1, 7):
        for statement in schema.MIGRATIONS[version]:
            db.execute(statement)
    db.execute(schema.VERSION_TABLE)
    db.execute("INSERT INTO schema_version (version) VALUES (6)")
    db.execute("INSERT INTO fleets (name, gpu, gpu_count, requested_count, min_count, strategy, providers, region, "
               "reservation, state, message, owner_pid, created_at, updated_at, fleet_id, accounts) VALUES "
               "('old', 'H100', 8, 1, 1, 'spread', NULL, NULL, 'auto', 'active', '1 of 1 running', 0, 1700000000.0, "
               "1700000000.0, 'f-old', '{\"crusoe\": \"project 1\"}')")
    db.execute("INSERT INTO members VALUES ('old', 0, 1, 'crusoe', 'old-0', 'us-east1-a', 'h100-80gb-sxm-ib.8x', '', "
               "'running', 'vm-1', '', 31.2, '', 1700000000.0, 1700000000.0)")
    db.commit()
    db.close()


def test_a_version_6_store_migrates_with_an_empty_ledger_and_defaults_for_the_new_fleet_fields(
        tmp_path: Path) -> None:
    from vm_core.fleet import schema
    from vm_core.fleet.store import OnBudget

    _version_6_store(tmp_path / "fleets.db")
    store = _store(tmp_path)
    old = store.get_fleet("old")
    assert old is not None and (old.budget, old.on_budget, old.maintain, old.spot, old.wait_until) == (
        None, OnBudget.STOP, False, False, None)
    assert store.ledger_vms() == [] and store._db.execute("SELECT version FROM schema_version").fetchall() == [
        (schema.LATEST,)]
    store.update_member("old", 0, 1, state=MemberState.DESTROYED)  # a member of before: closed, never entered
    assert store.ledger_vms() == []
    store.update_fleet("old", budget=100.0, on_budget=OnBudget.DESTROY, maintain=True)
    assert (store.get_fleet("old").budget, store.get_fleet("old").on_budget) == (100.0, OnBudget.DESTROY)


def test_a_spot_member_is_entered_as_spot_and_an_on_demand_one_of_the_same_fleet_as_on_demand(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.create_fleet(FleetRecord("mix", "H100", 8, 2, 2, "spread", spot=True, on_demand_base=1))
    for slot, spot in ((0, False), (1, True)):
        store.add_member(MemberRecord("mix", slot, 0, "nebius", f"mix-{slot}", spot=spot))
        store.update_member("mix", slot, 0, state=MemberState.RUNNING, instance_id=f"computeinstance-{slot}")
    assert [m.spot for m in store.members("mix")] == [False, True]
    assert [(v.instance_id, v.pricing) for v in store.ledger_vms()] == [
        ("computeinstance-0", Pricing.ON_DEMAND), ("computeinstance-1", Pricing.SPOT)]
