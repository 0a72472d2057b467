"""Gathering offers from every provider at once, with a short-lived cache; what a fleet's own VMs hold of them."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from ..errors import Transient, VmError
from ..model import Offer
from ..provider import Provider, SupportsReservations
from .store import MemberRecord

CACHE_SECONDS = 30.0


@dataclass
class OfferSet:
    offers: list[Offer]
    problems: dict[str, str] = field(default_factory=dict)  # provider -> why its offers are missing
    errors: dict[str, VmError] = field(default_factory=dict)  # provider -> the error behind its problem
    left_out: dict[str, str] = field(default_factory=dict)  # provider -> why it was not asked (size not sold)
    unterminable_reservations: frozenset[str] = frozenset()


class OfferCache:
    """Offers per (provider, gpu, gpu_count) for CACHE_SECONDS; one provider's failure never hides the rest."""

    def __init__(self, ttl: float = CACHE_SECONDS) -> None:
        self._ttl = ttl
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, str, int | None], tuple[float, list[Offer]]] = {}

    def gather(self, providers: Mapping[str, Provider], gpu: str, gpu_count: int | None) -> OfferSet:
        """Ask every provider concurrently (blocks on the network); failures are reported, not raised."""
        with ThreadPoolExecutor(max_workers=max(len(providers), 1)) as pool:
            futures = {name: pool.submit(self._offers, p, gpu, gpu_count) for name, p in providers.items()}
        result = OfferSet(offers=[])
        for name, future in futures.items():
            try:
                result.offers.extend(future.result())
            except VmError as exc:
                result.problems[name] = exc.message
                result.errors[name] = exc
        result.unterminable_reservations = _unterminable(providers)
        return result

    def invalidate(self, provider: str) -> None:
        with self._lock:
            self._entries = {k: v for k, v in self._entries.items() if k[0] != provider}

    def _offers(self, provider: Provider, gpu: str, gpu_count: int | None) -> list[Offer]:
        key = (provider.name, gpu, gpu_count)
        with self._lock:
            cached = self._entries.get(key)
        if cached and time.monotonic() - cached[0] < self._ttl:
            return cached[1]
        offers = _retried(lambda: provider.offers(gpu, gpu_count))
        with self._lock:
            self._entries[key] = (time.monotonic(), offers)
        return offers


def _retried(ask: Callable[[], list[Offer]], attempts: int = 3, backoff: float = 0.5) -> list[Offer]:
    """`ask()`, again after a transient failure (rate limit, lost answer), up to `attempts` times."""
    for attempt in range(attempts - 1):
        try:
            return ask()
        except Transient:
            time.sleep(backoff * 2 ** attempt)
    return ask()


def _unterminable(providers: Mapping[str, Provider]) -> frozenset[str]:
    """Reservations whose instances the cloud will not delete through its API (Lambda)."""
    found: set[str] = set()
    for provider in providers.values():
        if isinstance(provider, SupportsReservations):
            try:
                found |= {r.id for r in provider.list_reservations() if not r.terminable}
            except VmError:
                continue
    return frozenset(found)


def held_by_members(offers: OfferSet, members: Iterable[MemberRecord],
                    providers: Mapping[str, Provider]) -> OfferSet:
    """`offers` less what the fleet's own VMs (members that may exist) already hold of a reservation whose stated
    capacity is its size: a reserved offer of a provider that cannot list its reservations (not
    SupportsReservations; a Nebius capacity block sized by the contract, see Provider.offers). So a grow (scale,
    repair) never plans on a block its members fill. Other offers are as they are: there the cloud's capacity is
    what is free, the fleet's VMs already left out. Pure: reads nothing, changes nothing."""
    held = Counter((m.provider, m.region, m.reservation_id) for m in members
                   if m.state.may_exist and m.reservation_id)
    if not held:
        return offers
    adjusted = [_less(o, held[(o.provider, o.region, o.reservation_id)])
                if o.reserved and o.capacity is not None and not isinstance(providers.get(o.provider),
                                                                            SupportsReservations) else o
                for o in offers.offers]
    return replace(offers, offers=adjusted)


def _less(offer: Offer, taken: int) -> Offer:
    left = max((offer.capacity or 0) - taken, 0)
    return replace(offer, capacity=left, available=offer.available and left > 0) if taken else offer
