"""What a reservation is used for: which VMs are on it now, and the GPU-hours it sat idle over a period, from the
spend ledger's intervals of the VMs on it (`vm reservations`); and the on-demand VM that could have run on one
(the warning of `vm create`, `vm start` and `vm fleet create`). Pure: no store, no cloud.

Idle GPU-hours are an estimate: the reservation's size times the period, minus the GPU-hours the ledger's VMs
spent on it in a state that holds reserved capacity (OCCUPYING). A VM vm did not create is on it too, but the
ledger has no interval of it: its use is not counted (the report says how many there are now), and a change no
vm command saw is counted from when a vm command saw it (spend.ledger). The cloud bills the whole reservation,
used or not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..model import Instance
from ..provider import ReservationTerms
from .ledger import Interval, LedgerVm, Pricing

DAY = 86400.0

# The states in which a VM holds its reservation's capacity: a stopped VM gives it back (Crusoe, Nebius), a gone one
# too.
OCCUPYING = frozenset({"creating", "starting", "running", "rebooting", "stopping", "terminating"})

ESTIMATE = ("idle GPU-hours are an estimate: the reservation's size over the period minus the GPU-hours of the VMs "
            "vm recorded on it (its spend ledger); VMs vm did not create count as used only now, not over the period")


@dataclass(frozen=True, slots=True)
class ReservedVm:
    """A VM on a reservation now: `fleet` and `created_by` from the ledger ("" for a VM vm did not create,
    `recorded` False)."""

    provider: str
    instance_id: str
    name: str
    gpus: int
    fleet: str = ""
    created_by: str = ""
    recorded: bool = False


@dataclass(frozen=True, slots=True)
class ReservationUse:
    """One reservation over the period [since, until] (epoch seconds; until <= now). GPU-hour figures are None
    where the reservation's size is not known; `idle_usd` also where its price is not."""

    terms: ReservationTerms
    vms: tuple[ReservedVm, ...]
    used_gpus: int | None
    since: float
    until: float
    reserved_gpu_hours: float | None
    used_gpu_hours: float
    idle_gpu_hours: float | None
    idle_usd: float | None

    @property
    def free_gpus(self) -> int | None:
        total, used = self.terms.info.total_gpus, self.used_gpus
        return None if total is None or used is None else max(0, total - used)

    @property
    def unrecorded(self) -> int:
        """VMs on it now that vm did not create: their use over the period is not counted."""
        return sum(not v.recorded for v in self.vms)


def period_of(terms: ReservationTerms, since: float | None, now: float) -> tuple[float, float]:
    """The period a report covers: from `since` (default: a day before `now`), or the reservation's start when
    later, to `now`, or its end when earlier. Never negative (a reservation not started yet: an empty period)."""
    start = now - DAY if since is None else since
    if terms.starts_at is not None:
        start = max(start, terms.starts_at)
    end = now if terms.ends_at is None else min(now, terms.ends_at)
    return start, max(start, end)


def used_gpu_hours(vms: Iterable[LedgerVm], intervals: Iterable[Interval], since: float, until: float) -> float:
    """GPU-hours the ledger's `vms` (those on one reservation) spent in an OCCUPYING state at reservation
    pricing within [since, until]; an open interval runs to `until`."""
    gpus = {vm.key: vm.gpu_count for vm in vms}
    seconds = 0.0
    for interval in intervals:
        count = gpus.get(interval.key)
        if count is None or interval.state not in OCCUPYING or interval.pricing is not Pricing.RESERVATION:
            continue
        end = until if interval.ended_at is None else min(interval.ended_at, until)
        seconds += max(0.0, end - max(interval.started_at, since)) * count
    return seconds / 3600


def on_it(terms: ReservationTerms, live: Sequence[Instance]) -> list[Instance]:
    """The live VMs of its provider on the reservation: those the cloud lists on it, or that say they are."""
    listed = set(terms.instance_ids or ())
    return [i for i in live if i.provider == terms.info.provider and not i.state.gone
            and (i.id in listed or i.reservation_id == terms.info.id)]


def reservation_use(terms: ReservationTerms, live: Sequence[Instance], recorded: Mapping[tuple[str, str], LedgerVm],
                    intervals: Sequence[Interval], since: float, until: float) -> ReservationUse:
    """The use of one reservation: `live` are its provider's VMs now, `recorded` the ledger's VMs by (provider,
    instance id) and `intervals` theirs over the period."""
    info = terms.info
    now_on = on_it(terms, live)
    vms = tuple(_reserved(i, recorded.get((i.provider, i.id))) for i in now_on)
    used_now = info.used_gpus if info.used_gpus is not None else sum(v.gpus for v in vms)
    keys = {(i.provider, i.id) for i in now_on}
    on_it_ever = [vm for key, vm in recorded.items() if vm.provider == info.provider
                  and (vm.reservation_id == info.id or key in keys)]  # created on it, or on it now (a start)
    used = used_gpu_hours(on_it_ever, intervals, since, until)
    reserved = None if info.total_gpus is None else info.total_gpus * (until - since) / 3600
    idle = None if reserved is None else max(0.0, reserved - used)
    price = info.price_per_gpu_hour
    return ReservationUse(terms, vms, used_now, since, until, reserved, used, idle,
                          None if idle is None or price is None else idle * price)


def _reserved(instance: Instance, vm: LedgerVm | None) -> ReservedVm:
    if vm is None:
        return ReservedVm(instance.provider, instance.id, instance.name, instance.gpu_count)
    return ReservedVm(instance.provider, instance.id, instance.name, instance.gpu_count, vm.fleet, vm.created_by,
                      recorded=True)


# ------------------------------------------------------------------------------------------ on-demand warning
@dataclass(frozen=True, slots=True)
class Missed:
    """An on-demand VM that a reservation with room could have held: `free_gpus` on `reservation` in `region`."""

    instance: Instance
    reservation: str
    region: str
    free_gpus: int


def covers(regions: Iterable[str], region: str) -> bool:
    """Whether a reservation of `regions` covers a VM in `region` (a Crusoe region covers its zones: us-east1
    covers us-east1-a)."""
    return any(region == r or region.startswith(f"{r}-") for r in regions)


def missed(instances: Iterable[Instance], uses: Iterable[ReservationUse]) -> list[Missed]:
    """The on-demand VMs of `instances` (not spot, not on a reservation) that a reservation of `uses` could have
    held now: one their account may use, of the same provider and GPU type, in a region it covers, with free GPUs
    for the VM's count (the roomiest one)."""
    roomy = [u for u in uses if u.free_gpus and u.terms.usable]
    found = []
    for instance in instances:
        if instance.reserved or instance.spot or instance.state.ended or not instance.gpu:
            continue
        fits = [u for u in roomy if u.terms.info.provider == instance.provider and u.terms.info.gpu == instance.gpu
                and covers(u.terms.info.regions, instance.region) and (u.free_gpus or 0) >= instance.gpu_count]
        if fits:
            best = max(fits, key=lambda u: (u.free_gpus or 0, u.terms.info.id))
            region = next(r for r in best.terms.info.regions if covers([r], instance.region))
            found.append(Missed(instance, best.terms.info.id, region, best.free_gpus or 0))
    return found
