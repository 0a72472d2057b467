"""`Client.reservations` (`vm reservations`) and the on-demand warning of `vm create`, `vm start` and `vm fleet
create`: a VM made on-demand where a reservation it could use has room."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..calls import failure_error, fan_out
from ..errors import UsageError, VmError
from ..hints import Command, Setting, phrase
from ..model import Instance
from ..provider import ReservationListing, ReservationTerms
from .outcome import Problem
from .usage_reports import ProviderReservations, ReservationList

if TYPE_CHECKING:
    from ..provider import Provider
    from ..session import Session
    from ..spend.ledger import Interval, LedgerVm
    from ..spend.reservations import Missed, ReservationUse
    from .client import Client
    from .requests import ReservationsRequest


@dataclass
class _Read:
    """One provider's reservations, and its live VMs when it has some (to see who is on them)."""

    listing: ReservationListing
    live: list[Instance] = field(default_factory=list)


def list_reservations(client: Client, request: ReservationsRequest) -> ReservationList:
    from ..spend.reservations import ESTIMATE, period_of, reservation_use

    session = client.session
    now = session.clock()
    if request.since is not None and not request.since < now:
        raise UsageError(phrase(Setting("since"), " is not in the past: give a moment before now"))
    names = session.selected(request.provider)
    outcomes = fan_out(lambda name: _read(session.provider(name)), names, prepare=session.provider)
    failures = [(o.key, o.error) for o in outcomes if o.error]
    problem = Problem.of(failure_error(failures, len(names), "providers"), failures if len(names) > 1 else []) \
        if failures else None
    if names and len(failures) == len(names):
        return ReservationList(answered=False, problem=problem)
    read = {o.key: o.value for o in outcomes if o.value is not None}
    periods = {(name, t.info.id): period_of(t, request.since, now) for name, r in read.items()
               for t in r.listing.reservations}
    earliest = min((since for since, _ in periods.values()), default=now)
    vms, intervals = _ledger(session, earliest, now, client.warn)
    recorded = {(vm.provider, vm.instance_id): vm for vm in vms}
    uses = [reservation_use(t, r.live, recorded, intervals, *periods[(name, t.info.id)])
            for name, r in read.items() for t in r.listing.reservations]
    return ReservationList(
        reservations=sorted(uses, key=lambda u: (u.terms.info.provider, u.terms.info.id)),
        providers=[ProviderReservations(name, len(r.listing.reservations), r.listing.note) for name, r in read.items()],
        now=now, estimate=ESTIMATE, problem=problem)


def _read(provider: Provider) -> _Read:
    """The provider's reservations (one call), then, if it has any, one listing of its VMs."""
    listing = listing_of(provider)
    live = list(provider.list_instances()) if listing.reservations else []
    return _Read(listing, live)


def listing_of(provider: Provider) -> ReservationListing:
    """What `provider` can say of its reservations: their terms (SupportsReservationTerms), else their usage
    (SupportsReservations), else none with a note saying it cannot list them."""
    from ..provider import SupportsReservations, SupportsReservationTerms

    if isinstance(provider, SupportsReservationTerms):
        return provider.reservation_terms()
    if isinstance(provider, SupportsReservations):
        return ReservationListing(tuple(ReservationTerms(r) for r in provider.list_reservations()))
    return ReservationListing((), f"{provider.name} cannot list reservations")


def _ledger(session: Session, since: float, until: float,
            warn: Callable[[str], None]) -> tuple[list[LedgerVm], list[Interval]]:
    """The ledger's VMs and their intervals over [since, until]; none without a store, and a warning (fleets,
    users and idle hours not known) when the store cannot be read."""
    from ..fleet.location import existing_store

    try:
        store = existing_store(session)
        if store is None:
            return [], []
        return store.ledger_vms(), store.ledger_intervals(since, until)
    except VmError as exc:
        warn(f"the spend ledger could not be read (fleets, users and used hours not shown): {exc.message}")
        return [], []


# ------------------------------------------------------------------------------------------ on-demand warning
ON_DEMAND = "none"  # `--reservation none`: on-demand asked for by name, which `vm create` and `vm fleet create` do
# not warn about (a `vm start` of such a VM still does: nothing asked for on-demand then)


def warn_on_demand(client: Client, instances: Sequence[Instance]) -> None:
    """Warn about the on-demand VMs of `instances` (just created or started) that a reservation they could use
    had room for: their price, the reservation, its free GPUs, and the create that uses it; one warning per
    reservation. Reads a provider's reservations only when some VM of it is on-demand; a read that fails costs
    only the warning (nothing is raised)."""
    from ..spend.reservations import missed

    on_demand = [i for i in instances if not i.reserved and not i.spot and i.gpu]
    found: list[Missed] = []
    for provider in sorted({i.provider for i in on_demand}):
        try:
            uses = _room(client.session.provider(provider), [i for i in on_demand if i.provider == provider])
        except VmError:
            continue
        found += missed([i for i in on_demand if i.provider == provider], uses)
    for reservation in dict.fromkeys(m.reservation for m in found):
        client.warn(missed_text([m for m in found if m.reservation == reservation]))


def _room(target: Provider, on_demand: Sequence[Instance]) -> list[ReservationUse]:
    """The reservations of `target` of the GPU types of `on_demand`, with the GPUs used on them now (a listing
    of the VMs only where the cloud does not say). Raises VmError."""
    from ..spend.reservations import period_of, reservation_use

    fitting = [t for t in listing_of(target).reservations if any(t.info.gpu == i.gpu for i in on_demand)]
    live = list(target.list_instances()) if any(t.info.used_gpus is None for t in fitting) else []
    now = time.time()
    return [reservation_use(t, live, {}, [], *period_of(t, now, now)) for t in fitting]


def missed_text(misses: Sequence[Missed]) -> str:
    """The warning of the on-demand VMs one reservation had room for, with the create that uses it."""
    first = misses[0]
    vm = first.instance
    prices = [m.instance.price_per_hour for m in misses]
    price = "" if None in prices else f" at ${sum(p or 0.0 for p in prices):.2f}/h"
    who = f"{vm.name or vm.id} runs" if len(misses) == 1 else \
        f"{len(misses)} VMs ({', '.join(m.instance.name or m.instance.id for m in misses[:3])}" \
        f"{', ...' if len(misses) > 3 else ''}) run"
    gpu = f"{vm.gpu}:{vm.gpu_count}" if vm.gpu_count > 1 else vm.gpu
    create = Command.of("create", "--provider", vm.provider, "--gpu", gpu, "--region", vm.region,
                        "--reservation", first.reservation)
    return phrase(f"{vm.provider}: {who} on-demand{price} while reservation {first.reservation} in {first.region} "
                  f"has {first.free_gpus} free GPUs: ", create)
