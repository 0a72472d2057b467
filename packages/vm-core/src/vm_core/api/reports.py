"""The reports of the VM and catalog verbs of `vm_core.api`. Each carries its `problem` (its `exit` kind
follows) and serialises itself with `to_json()`: the document `vm ... -o json` prints (schemas:
docs/python-api.md). Instance, offer, image and provider objects are the model's own `to_json()`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..calls import Accepted
from ..machine import ImageInfo
from ..model import Instance, Offer
from ..session import ProviderReport
from ..spend.report import ESTIMATE, CostRow
from .outcome import Outcome
from .usage_reports import iso_time

if TYPE_CHECKING:
    from ..watchdog.loop import PassReport


def _one_or_all(docs: list[Any], single: bool) -> Any:
    """One object when a single target was asked for and there is one, else the array."""
    return docs[0] if single and len(docs) == 1 else docs


def native(value: Any) -> Any:
    """An SDK's object as JSON-ready data: msgspec structs and betterproto2 messages (`to_dict`)."""
    if value is None or isinstance(value, (dict, list, str, int, float, bool)):
        return value
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    import msgspec

    try:
        return msgspec.to_builtins(value)
    except TypeError:
        return repr(value)


def instance_docs(items: list[Instance], raw: bool) -> list[dict[str, Any]]:
    """Instances as documents; `raw` adds each one's native cloud object under "native"."""
    return [{**i.to_json(), "native": native(i.native)} if raw else i.to_json() for i in items]


@dataclass
class InstanceList(Outcome):
    """VMs sorted by provider, name and id. `answered` is False when every provider failed (nothing to show);
    `listed` holds every VM of each provider that answered, before the filters."""

    instances: list[Instance] = field(default_factory=list)
    answered: bool = True
    listed: dict[str, list[Instance]] = field(default_factory=dict)

    def to_json(self, raw: bool = False) -> list[dict[str, Any]]:
        return instance_docs(self.instances, raw)


@dataclass
class InstanceReport(Outcome):
    """One VM, with its public IP and ssh command line where known; `accrued_usd` (since it was created) and
    `rate_per_hour` (billed now) from the spend ledger, estimates, None when the ledger does not know the VM."""

    instance: Instance
    accrued_usd: float | None = None
    rate_per_hour: float | None = None

    def to_json(self, raw: bool = False) -> dict[str, Any]:
        doc: dict[str, Any] = instance_docs([self.instance], raw)[0]
        if self.accrued_usd is not None:
            doc |= {"accrued_usd": round(self.accrued_usd, 6), "rate_per_hour": self.rate_per_hour}
        return doc


@dataclass
class VmsActed(Outcome):
    """VMs a create, stop, start or reboot finished with (or left as they were), in the order asked; with
    no_wait, the `accepted` actions instead. `single`: one VM was asked for (its document is an object)."""

    instances: list[Instance] = field(default_factory=list)
    accepted: list[Accepted] = field(default_factory=list)
    single: bool = False

    def to_json(self) -> Any:
        if self.accepted:
            return _one_or_all([a.to_json() for a in self.accepted], self.single)
        return _one_or_all(instance_docs(self.instances, False), self.single)


@dataclass
class VmsCreated(VmsActed):
    """VMs a create made (`provider`: where); the problem's hint names those left running when some failed."""

    provider: str = ""


@dataclass
class Gone:
    """A VM a destroy removed; `note` says when nothing had to be done ("not found (treated as destroyed)")."""

    instance_id: str
    name: str = ""
    note: str = ""


@dataclass
class DestroyedVms(Outcome):
    """The VMs a destroy removed (or, with no_wait, the `accepted` deletions), in the order asked."""

    provider: str = ""
    gone: list[Gone] = field(default_factory=list)
    accepted: list[Accepted] = field(default_factory=list)
    single: bool = False

    def to_json(self) -> Any:
        if self.accepted:
            return _one_or_all([a.to_json() for a in self.accepted], self.single)
        return _one_or_all([{"provider": self.provider, "id": g.instance_id, "name": g.name or None,
                             "state": "terminated", "note": g.note or None} for g in self.gone], self.single)


@dataclass
class OfferList(Outcome):
    """Offers cheapest per GPU-hour first (those without capacity last). `answered` as InstanceList's."""

    offers: list[Offer] = field(default_factory=list)
    answered: bool = True

    def to_json(self) -> list[dict[str, Any]]:
        return [o.to_json() for o in self.offers]


@dataclass
class ProviderList(Outcome):
    """Every provider plugin's report; `profile` and `chosen_by` say which profile was used and why,
    `mock_clouds` names the embedded mock clouds when the profile uses them ("" otherwise)."""

    providers: list[ProviderReport] = field(default_factory=list)
    profile: str = ""
    chosen_by: str = ""
    mock_clouds: str = ""

    def to_json(self) -> list[dict[str, Any]]:
        return [r.to_json() for r in self.providers]


@dataclass
class ImageList(Outcome):
    """A provider's images for a machine, its default marked."""

    images: list[ImageInfo] = field(default_factory=list)

    def to_json(self) -> list[dict[str, Any]]:
        return [i.to_json() for i in self.images]


@dataclass
class ConfigReport(Outcome):
    """The configuration document (session.configuration): paths, profile, each provider's settings."""

    document: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return self.document


@dataclass
class CostReport(Outcome):
    """What the VMs vm created cost over [since, until] (epoch seconds; `until` is never later than `now`), each
    `by` group a row (vm_core.spend.report.CostRow, most accrued first) and their `total`; `since_default`: the
    period began at the first day of the month because none was asked. Estimates (`estimate` says of what)."""

    since: float
    until: float
    now: float
    by: str
    since_default: bool
    rows: list[CostRow] = field(default_factory=list)
    total: CostRow = field(default_factory=lambda: CostRow("", 0, 0.0, 0.0, 0.0, 0.0, True))
    estimate: str = ESTIMATE

    def to_json(self) -> dict[str, Any]:
        return {"since": iso_time(self.since), "until": iso_time(self.until), "by": self.by, "currency": "USD",
                "groups": [row.to_json() for row in self.rows], "total": self.total.to_json(),
                "estimate": self.estimate}


@dataclass
class WatchdogReport(Outcome):
    """How `vm watchdog` ended: the passes it made, the last one (vm_core.watchdog.loop.PassReport: each fleet
    a duty was due for, and the webhook deliveries) and the signal that stopped a loop ("" for none). The
    problem: a PartialFailure when a duty of a `--once` pass failed; Interrupted when SIGINT stopped it."""

    passes: int = 0
    last: PassReport | None = None
    signal: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"passes": self.passes, "signal": self.signal or None,
                "last_pass": self.last.to_json() if self.last is not None else None}
