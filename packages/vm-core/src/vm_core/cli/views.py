"""The tables and JSON documents of vm's results: each report of vm_core.api rendered; the JSON printed is the
report's own `to_json()` (schemas: docs/python-api.md), built of the model's `to_json()` objects."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..model import Instance, Offer
from .output import Output

if TYPE_CHECKING:  # the API is imported when a command runs, not by `vm --help`
    from ..api.reports import DestroyedVms, InstanceReport, OfferList, ProviderList, VmsActed
    from ..calls import Accepted

INSTANCE_COLUMNS = ("PROVIDER", "ID", "NAME", "STATE", "GPU", "REGION", "RESERVED", "$/H")


def instances(out: Output, items: Sequence[Instance], *, raw: bool = False) -> None:
    """Instances (`vm list`) as a table, or JSON: an array (InstanceList.to_json). `raw` adds each instance's
    native cloud object under "native" (and implies JSON)."""
    if out.json or raw:
        from ..api.reports import InstanceList

        out.data(InstanceList(instances=list(items)).to_json(raw))
        return
    out.table(INSTANCE_COLUMNS, [_instance_row(i) for i in items])


def instance(out: Output, item: Instance, *, raw: bool = False, accrued: str = "") -> None:
    """One instance (`vm get`): the table of `instances` plus its public IP, then `accrued` (a line, if any),
    then the ssh command line."""
    if out.json or raw:
        from ..api.reports import InstanceReport

        out.data(InstanceReport(instance=item).to_json(raw))
        return
    out.table((*INSTANCE_COLUMNS, "PUBLIC-IP"), [[*_instance_row(item), item.public_ip]])
    if accrued:
        out.line(accrued)
    if item.ssh:
        out.line(f"ssh: {item.ssh}")


def instance_report(out: Output, report: InstanceReport, *, raw: bool = False) -> None:
    """`vm get`: `instance`, then what the VM has cost and bills now when the spend ledger knows it."""
    if out.json or raw:
        out.data(report.to_json(raw))
        return
    known = report.accrued_usd is not None
    instance(out, report.instance,
             accrued=f"accrued: {accrued_text(report.accrued_usd or 0.0, report.rate_per_hour)}" if known else "")


def accrued_text(usd: float, rate: float | None) -> str:
    """'12.34 USD, billing 2.49 $/h now (estimate)': an accrued cost and running rate from the spend ledger."""
    now = f"billing {rate:.2f} $/h now" if rate else "not billing now"
    return f"{usd:.2f} USD since created, {now} (estimate: vm cost)"


def acted(out: Output, report: VmsActed) -> None:
    """What a create, stop, start or reboot finished with: the VMs, or with --no-wait the accepted actions
    (provider, instance and operation ids); nothing when there is neither."""
    if out.json and (report.accepted or report.instances):
        out.data(report.to_json())
    elif report.accepted:
        _accepted(out, report.accepted)
    elif report.instances:
        out.table(INSTANCE_COLUMNS, [_instance_row(i) for i in report.instances])


def _instance_row(i: Instance) -> list[Any]:
    gpu = f"{i.gpu}x{i.gpu_count}" if i.gpu else i.shape
    return [i.provider, i.id, i.name, i.state.value, gpu, i.region, capacity_cell(i.reserved, i.reservation_id,
                                                                                  i.spot), i.running_price]


def capacity_cell(reserved: bool, reservation_id: str, spot: bool) -> str:
    """The RESERVED cell: what capacity the VM is on. Its reservation's id (`yes` when the cloud names none),
    `spot` for a spot (preemptible) VM, which is never on a reservation, and `-` for an on-demand VM."""
    if reserved:
        return reservation_id or "yes"
    return "spot" if spot else "-"


def _accepted(out: Output, items: Sequence[Accepted]) -> None:
    out.table(("PROVIDER", "ID", "NAME", "ACTION", "OPERATION"),
              [(a.provider, a.instance_id, a.name, a.verb, a.operation_id) for a in items])


def destroyed(out: Output, report: DestroyedVms) -> None:
    """VMs gone, each with a note when nothing had to be done ("not found (treated as destroyed)"); with
    --no-wait the accepted deletions; nothing when there is neither."""
    if out.json and (report.accepted or report.gone):
        out.data(report.to_json())
    elif report.accepted:
        _accepted(out, report.accepted)
    elif report.gone:
        out.table(("PROVIDER", "ID", "NAME", "STATE", "NOTE"),
                  [(report.provider, g.instance_id, g.name, "terminated", g.note) for g in report.gone])


def offers(out: Output, report: OfferList) -> None:
    items = report.offers
    if out.json:
        out.data(report.to_json())
        return
    out.table(("PROVIDER", "REGION", "SHAPE", "GPU", "$/H", "$/GPU/H", "SOURCE", "CAPACITY", "RESERVATION", "SPOT"),
              [(o.provider, o.region, o.shape, f"{o.gpu}x{o.gpu_count}", o.price_per_hour,
                o.price_per_hour / o.gpu_count if o.gpu_count else None,
                o.price_source.value if o.price_source else None, _capacity(o), o.reservation_id,
                "spot" if o.spot else "")
               for o in items])


def _capacity(o: Offer) -> str:
    """The CAPACITY cell: the VMs the cloud says fit (`0` for a full reservation or zone), else `none` when the
    cloud says there is no room without counting it, `?` when it does not say."""
    if o.capacity is not None:
        return str(o.capacity)
    return "?" if o.available else "none"


def providers(out: Output, report: ProviderList) -> None:
    """The providers with their status (from an authenticated call), capabilities and endpoint; the reason of
    every status that is not ok follows the table, as a warning."""
    reports = report.providers
    if out.json:
        out.data(report.to_json())
        return
    out.table(("NAME", "TITLE", "STATUS", "STOP/START", "REBOOT", "LISTS-RESERVATIONS", "ENDPOINT"),
              [(r.name, r.title, r.status.value, _yes_no(r.stop_start), _yes_no(r.reboot),
                _yes_no(r.lists_reservations), r.endpoint) for r in reports])
    for one in reports:
        if one.problem:
            out.warn(f"provider {one.name}: {one.status.value}: {one.problem}")


def _yes_no(value: bool | None) -> str:
    return "?" if value is None else ("yes" if value else "no")
