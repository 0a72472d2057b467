"""Cluster placement is a pure function: offers in, the places that can hold the whole fleet out."""

from __future__ import annotations

from vm_core.fleet.cluster import Group, cluster_groups, groups, largest_fits, no_place_text
from vm_core.fleet.strategies import Blocked, FleetRequest
from vm_core.model import Offer, ReservationMode, ReservationRequest


def offer(provider: str, price: float, capacity: int | None, *, region: str = "r1", reservation: str = "",
          available: bool = True, gpus: int = 8) -> Offer:
    return Offer(provider=provider, region=region, gpu="H100", gpu_count=gpus, shape=f"{provider}-{gpus}x",
                 price_per_hour=price, capacity=capacity, available=available, reservation_id=reservation)


CRUSOE_RES = offer("crusoe", 21.20, 4, region="us-east1-a", reservation="res-c")
CRUSOE = offer("crusoe", 31.20, 4, region="us-east1-a")
CRUSOE_SOUTH = offer("crusoe", 31.20, 2, region="us-southcentral1-a")
NEBIUS = offer("nebius", 23.60, None, region="eu-north1")
LAMBDA = offer("lambda", 23.92, None, region="us-west-3")
ALL = [CRUSOE, CRUSOE_SOUTH, CRUSOE_RES, NEBIUS, LAMBDA]


def request(count: int, **kwargs) -> FleetRequest:
    return FleetRequest(gpu="H100", count=count, gpu_count=8, **kwargs)


def places(found: list[Group]) -> list[tuple[str, str, str]]:
    return [(g.offer.provider, g.offer.region, g.offer.reservation_id) for g in found]


def test_the_cheapest_place_that_holds_the_whole_fleet_comes_first() -> None:
    found = cluster_groups(ALL, request(3), Blocked())
    assert places(found) == [("crusoe", "us-east1-a", "res-c"), ("nebius", "eu-north1", ""),
                             ("lambda", "us-west-3", ""), ("crusoe", "us-east1-a", "")]


def test_a_reservation_wins_a_tie_then_published_capacity() -> None:
    unknown = offer("nebius", 21.20, None, region="eu-north1")
    known = offer("lambda", 21.20, 9, region="us-west-3")
    found = cluster_groups([unknown, known, CRUSOE_RES], request(2), Blocked())
    assert [g.offer.provider for g in found] == ["crusoe", "lambda", "nebius"]


def test_capacity_limits_which_places_can_hold_the_fleet() -> None:
    found = cluster_groups(ALL, request(4), Blocked())
    assert ("crusoe", "us-southcentral1-a", "") not in places(found)  # room for 2 only
    assert places(cluster_groups(ALL, request(5), Blocked())) == [("nebius", "eu-north1", ""),
                                                                  ("lambda", "us-west-3", "")]


def test_unknown_capacity_may_hold_any_fleet() -> None:
    found = cluster_groups([NEBIUS], request(500), Blocked())
    assert places(found) == [("nebius", "eu-north1", "")]
    assert found[0].may_hold(500) and found[0].take(500) == 500 and found[0].capacity is None


def test_a_reservation_is_a_place_of_its_own() -> None:
    other = offer("crusoe", 23.20, 2, region="us-east1-a", reservation="res-d")
    found = groups([CRUSOE, CRUSOE_RES, other], request(2), Blocked())
    assert places(found) == [("crusoe", "us-east1-a", "res-c"), ("crusoe", "us-east1-a", "res-d"),
                             ("crusoe", "us-east1-a", "")]
    assert places(cluster_groups([CRUSOE, CRUSOE_RES, other], request(3), Blocked())) == [
        ("crusoe", "us-east1-a", "res-c"), ("crusoe", "us-east1-a", "")]
    on_demand = request(2, reservation=ReservationRequest(ReservationMode.NONE))
    assert places(cluster_groups([CRUSOE, CRUSOE_RES, other], on_demand, Blocked())) == [
        ("crusoe", "us-east1-a", "")]


def test_blocked_scopes_are_not_places() -> None:
    assert ("crusoe", "us-east1-a", "res-c") not in places(
        cluster_groups(ALL, request(2), Blocked().with_offer(CRUSOE_RES)))
    assert all(g.offer.region != "us-east1-a" for g in cluster_groups(
        ALL, request(2), Blocked().with_region("crusoe", "us-east1-a")))
    assert places(cluster_groups(ALL, request(2), Blocked(providers=frozenset({"crusoe", "nebius"})))) == [
        ("lambda", "us-west-3", "")]


def test_sold_out_and_wrong_sizes_are_not_places() -> None:
    empty = offer("crusoe", 1.0, 0, region="x")
    gone = offer("crusoe", 1.0, 5, region="y", available=False)
    small = offer("crusoe", 1.0, 5, region="z", gpus=1)
    assert cluster_groups([empty, gone, small], request(1), Blocked()) == []


def test_min_count_adds_places_that_hold_at_least_the_minimum_most_first() -> None:
    found = cluster_groups([CRUSOE, CRUSOE_SOUTH, CRUSOE_RES], request(6), Blocked(), min_count=2)
    assert [(g.offer.region, g.offer.reservation_id, g.take(6)) for g in found] == [
        ("us-east1-a", "res-c", 4), ("us-east1-a", "", 4), ("us-southcentral1-a", "", 2)]
    assert cluster_groups([CRUSOE, CRUSOE_SOUTH, CRUSOE_RES], request(6), Blocked(), min_count=5) == []


def test_the_largest_fits_list_places_largest_first_and_unknown_last() -> None:
    fits = largest_fits(ALL, request(12))
    assert [(f.group.offer.region, f.group.offer.reservation_id, f.vms) for f in fits] == [
        ("us-east1-a", "res-c", 4), ("us-east1-a", "", 4), ("us-southcentral1-a", "", 2),
        ("eu-north1", "", None), ("us-west-3", "", None)]
    text = no_place_text(request(12), fits)
    assert text == ("no single place holds 12 H100:8 VMs; the largest: 4 in crusoe us-east1-a (reservation res-c); "
                    "4 in crusoe us-east1-a; 2 in crusoe us-southcentral1-a; ? in nebius eu-north1 (capacity "
                    "unknown); ? in lambda us-west-3 (capacity unknown)")


def test_the_largest_fits_count_what_came_up_where_a_place_was_tried() -> None:
    seen = {("nebius", "eu-north1", NEBIUS.shape, ""): 2, ("crusoe", "us-east1-a", CRUSOE.shape, ""): 3}
    fits = largest_fits(ALL, request(5), seen)
    assert [(f.group.offer.provider, f.group.offer.reservation_id, f.vms, f.seen) for f in fits][:4] == [
        ("crusoe", "res-c", 4, False), ("crusoe", "", 3, True), ("nebius", "", 2, True), ("crusoe", "", 2, False)]
    assert "3 in crusoe us-east1-a (tried: 3 came up)" in no_place_text(request(5), fits, tried=True)
    assert no_place_text(request(5), fits, tried=True).startswith("no single place held 5 H100:8 VMs; ")
    reserved = largest_fits(ALL, request(5), {("crusoe", "us-east1-a", CRUSOE.shape, "res-c"): 1})
    assert "1 in crusoe us-east1-a (reservation res-c; tried: 1 came up)" in no_place_text(request(5), reserved)


def test_a_tried_place_now_sold_out_still_counts() -> None:
    sold_out = offer("crusoe", 31.20, 0, region="us-east1-a")
    fits = largest_fits([sold_out], request(6), {("crusoe", "us-east1-a", sold_out.shape, ""): 3})
    assert [(f.vms, f.seen) for f in fits] == [(3, True)]


def test_many_places_are_cut_short() -> None:
    many = [offer("crusoe", 10.0 + i, 1, region=f"r{i}") for i in range(8)]
    text = no_place_text(request(2), largest_fits(many, request(2)))
    assert text.count(" in crusoe ") == 5 and text.endswith("; and 3 more")
    assert no_place_text(request(2), []) == "no single place holds 2 H100:8 VMs; no place sells them"


class _Gated:
    """The example cloud, with its boots held until `gate` is set and the first create of slot 1 answered by a
    lost response (Transient: the engine looks the VM up by name, finds none, and tries the slot again)."""

    def __init__(self, inner, gate) -> None:
        self._inner, self.gate, self.retried = inner, gate, False

    def __getattr__(self, name: str):
        return getattr(self._inner, name)

    def begin_create(self, spec):
        from vm_core.errors import Transient

        if spec.name.endswith("-1") and not self.retried:
            self.retried = True
            raise Transient("connection reset (the response was lost)", provider="example")
        return _HeldPending(self._inner.begin_create(spec), self.gate)


class _HeldPending:
    def __init__(self, inner, gate) -> None:
        self._inner, self._gate = inner, gate
        self.id, self.resource_id = inner.id, inner.resource_id

    def done(self) -> bool:
        return self._gate.is_set() and self._inner.done()

    def wait(self, timeout: float):
        self._gate.wait(timeout)
        return self._inner.wait(timeout)


def test_a_cluster_slot_that_fails_is_tried_again_while_the_others_still_boot(tmp_path) -> None:
    """The cluster placer handles each slot's result as it arrives: the retry of slot 1 is sent while slots 0
    and 2 still boot (their boots are held until the retry is seen, so a placer that waited for the whole batch
    would never send it)."""
    import threading
    import time

    from vm_core.fleet.cluster import Placement
    from vm_core.fleet.create import FleetCreator, FleetSpec
    from vm_core.fleet.store import FleetState, MemberState, SqliteFleetStore
    from vm_core.fleet.strategies import spread
    from vm_example_provider import plugin

    gate = threading.Event()
    provider = _Gated(plugin.connect({"path": str(tmp_path / "cloud.json"), "seconds": 0.05, "capacity": 8}), gate)
    store = SqliteFleetStore(tmp_path / "vm.db")
    creator = FleetCreator(store, {"example": provider}, spread, timeout=120, concurrency={"example": 3})
    spec = FleetSpec(name="ring", gpu="H100", count=3, min_count=3, strategy="cluster", placement=Placement.CLUSTER)
    result: dict[str, object] = {}
    creating = threading.Thread(target=lambda: result.update(report=creator.create(spec)))
    creating.start()
    try:
        deadline = time.monotonic() + 120  # a bound for a loaded machine, never reached when the engine works
        while not any(m.slot == 1 and m.attempt == 2 for m in store.members("ring")):
            assert creating.is_alive() and time.monotonic() < deadline, "slot 1 was never tried again"
            time.sleep(0.05)
        booting = {m.slot: m.state for m in store.members("ring") if m.attempt == 1 and m.slot != 1}
        assert booting == {0: MemberState.CREATING, 2: MemberState.CREATING}
    finally:
        gate.set()
        creating.join()
    report = result["report"]
    assert report.fleet.state is FleetState.ACTIVE and len(report.running) == 3
    assert report.fleet.placement is Placement.CLUSTER
