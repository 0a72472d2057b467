"""What a fleet's own VMs hold of a sized reservation is not free for its grows (vm_core.fleet.offers
`held_by_members`): a Nebius capacity block states its size, a Crusoe reservation what is free."""

from __future__ import annotations

from vm_core.fleet.offers import OfferSet, held_by_members
from vm_core.fleet.store import MemberRecord, MemberState
from vm_core.model import Offer

BLOCK = "capacityblockgroup-e00h100block000001"


class Sized:
    """A provider that cannot list its reservations (Nebius): its reserved offers state their size."""

    name = "nebius"


class Listing:
    """A provider that lists its reservations (Crusoe): its reserved offers say what is free."""

    name = "crusoe"

    def list_reservations(self) -> list[object]:
        return []


def offer(provider: str, reservation: str, capacity: int | None) -> Offer:
    return Offer(provider, "eu-north1", "H100", 8, "gpu-h100-sxm/8gpu", 16.8, capacity, reservation_id=reservation)


def member(slot: int, provider: str, reservation: str, state: MemberState = MemberState.RUNNING) -> MemberRecord:
    return MemberRecord("f", slot, 1, provider, f"f--id-{slot}", region="eu-north1", reservation_id=reservation,
                        state=state)


PROVIDERS = {"nebius": Sized(), "crusoe": Listing()}


def capacities(offers: OfferSet) -> list[tuple[int | None, bool]]:
    return [(o.capacity, o.available) for o in offers.offers]


def test_members_on_a_sized_block_are_taken_off_its_size() -> None:
    offers = OfferSet([offer("nebius", BLOCK, 2), offer("nebius", "", None)])
    one = held_by_members(offers, [member(0, "nebius", BLOCK)], PROVIDERS)
    assert capacities(one) == [(1, True), (None, True)]
    full = held_by_members(offers, [member(0, "nebius", BLOCK), member(1, "nebius", BLOCK)], PROVIDERS)
    assert capacities(full) == [(0, False), (None, True)]


def test_gone_members_hold_nothing_and_free_capacity_is_left_as_the_cloud_says() -> None:
    offers = OfferSet([offer("nebius", BLOCK, 2), offer("crusoe", "804bf3a2", 4), offer("nebius", "other", None)])
    members = [member(0, "nebius", BLOCK, MemberState.DESTROYED), member(1, "nebius", BLOCK, MemberState.MISSING),
               member(2, "nebius", BLOCK, MemberState.FAILED), member(3, "crusoe", "804bf3a2"),
               member(4, "nebius", "other")]
    assert capacities(held_by_members(offers, members, PROVIDERS)) == [(2, True), (4, True), (None, True)]
