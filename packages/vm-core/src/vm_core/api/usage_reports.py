"""The reports of `Client.reservations` and `Client.audit` (vm_core.api): each carries its `problem` and
serialises itself with `to_json()`, the document `vm reservations -o json` and `vm audit -o json` print (schemas:
docs/python-api.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..spend.audit import AuditedVm, Total
from ..spend.reservations import ReservationUse
from .outcome import Outcome


@dataclass
class ProviderReservations:
    """How many reservations a provider showed, and `note`: where they come from when not the cloud's own
    listing, or why there are none ("" for a complete listing)."""

    provider: str
    count: int
    note: str = ""


@dataclass
class ReservationList(Outcome):
    """Every reservation of the providers that answered (vm_core.spend.reservations.ReservationUse, by provider
    and id), each over its period up to `now`; `estimate` says what the idle figures leave out. `answered` as
    InstanceList's."""

    reservations: list[ReservationUse] = field(default_factory=list)
    providers: list[ProviderReservations] = field(default_factory=list)
    now: float = 0.0
    estimate: str = ""
    answered: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"reservations": [reservation_doc(u) for u in self.reservations],
                "providers": [{"provider": p.provider, "reservations": p.count, "note": p.note or None}
                              for p in self.providers],
                "estimate": self.estimate}


def reservation_doc(use: ReservationUse) -> dict[str, Any]:
    """One reservation's JSON document (keys in docs/python-api.md); times are ISO 8601 UTC, figures None where
    unknown."""
    info = use.terms.info
    return {
        "provider": info.provider, "id": info.id, "name": use.terms.name or None, "gpu": info.gpu or None,
        "regions": list(info.regions), "total_gpus": info.total_gpus, "used_gpus": use.used_gpus,
        "free_gpus": use.free_gpus, "price_per_gpu_hour": info.price_per_gpu_hour,
        "starts_at": iso_time(use.terms.starts_at), "ends_at": iso_time(use.terms.ends_at),
        "since": iso_time(use.since), "until": iso_time(use.until),
        "reserved_gpu_hours": _rounded(use.reserved_gpu_hours, 4), "used_gpu_hours": _rounded(use.used_gpu_hours, 4),
        "idle_gpu_hours": _rounded(use.idle_gpu_hours, 4), "idle_usd": _rounded(use.idle_usd, 2),
        "vms": [{"provider": v.provider, "id": v.instance_id, "name": v.name or None, "gpus": v.gpus,
                 "fleet": v.fleet or None, "created_by": v.created_by or None, "recorded": v.recorded}
                for v in use.vms],
        "unrecorded_vms": use.unrecorded,
    }


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def iso_time(epoch: float | None) -> str | None:
    """Epoch seconds as ISO 8601 UTC to the second ("2026-12-02T17:00:00Z"); None for None."""
    if epoch is None:
        return None
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class AuditReport(Outcome):
    """Every live VM of the accounts of `providers` (those that answered), classified (vm_core.spend.audit: by
    class, provider and name), and the totals of each class. `answered` as InstanceList's."""

    vms: list[AuditedVm] = field(default_factory=list)
    totals: list[Total] = field(default_factory=list)
    providers: list[str] = field(default_factory=list)
    answered: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"vms": [{**v.instance.to_json(), "owner": v.owner.value, "fleet": v.fleet or None,
                         "created_by": v.created_by or None, "rate_per_hour": v.rate_per_hour} for v in self.vms],
                "totals": {t.owner.value: {"vms": t.vms, "running": t.running,
                                           "rate_per_hour": round(t.rate_per_hour, 4), "unpriced": t.unpriced}
                           for t in self.totals},
                "providers": self.providers}
