"""The tables and JSON documents of vm's results. JSON schemas are the model's `to_json()` (stable, documented)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..actions import Accepted
from ..model import Instance, Offer
from ..session import ProviderReport
from .output import Output

INSTANCE_COLUMNS = ("PROVIDER", "ID", "NAME", "STATE", "GPU", "REGION", "RESERVED", "$/H")


def instances(out: Output, items: Sequence[Instance], *, single: bool = False, raw: bool = False) -> None:
    """Instances as a table, or JSON: one object when `single`, else an array. `raw` adds each instance's
    native cloud object under "native" (and implies JSON)."""
    if out.json or raw:
        docs = [{**i.to_json(), "native": native(i.native)} if raw else i.to_json() for i in items]
        out.data(docs[0] if single and len(docs) == 1 else docs)
        return
    out.table(INSTANCE_COLUMNS, [_instance_row(i) for i in items])


def instance(out: Output, item: Instance, *, raw: bool = False) -> None:
    """One instance (`vm get`): the table of `instances` plus its public IP, then the ssh command line."""
    if out.json or raw:
        instances(out, [item], single=True, raw=raw)
        return
    out.table((*INSTANCE_COLUMNS, "PUBLIC-IP"), [[*_instance_row(item), item.public_ip]])
    if item.ssh:
        out.line(f"ssh: {item.ssh}")


def native(value: Any) -> Any:
    """The SDK's object as JSON-ready data: msgspec structs and betterproto2 messages (`to_dict`)."""
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


def accepted(out: Output, items: Sequence[Accepted], *, single: bool = False) -> None:
    """Actions started with --no-wait: provider, instance and operation ids."""
    if out.json:
        out.data(items[0].to_json() if single and len(items) == 1 else [a.to_json() for a in items])
        return
    out.table(("PROVIDER", "ID", "NAME", "ACTION", "OPERATION"),
              [(a.provider, a.instance_id, a.name, a.verb, a.operation_id) for a in items])


def destroyed(out: Output, provider: str, items: Sequence[tuple[str, str, str]], *, single: bool = False) -> None:
    """VMs gone: (id, name, note) each; the note says when nothing had to be done ("not found (treated as
    destroyed)")."""
    docs = [{"provider": provider, "id": i, "name": name or None, "state": "terminated", "note": note or None}
            for i, name, note in items]
    if out.json:
        out.data(docs[0] if single and len(docs) == 1 else docs)
        return
    out.table(("PROVIDER", "ID", "NAME", "STATE", "NOTE"),
              [(provider, i, name, "terminated", note) for i, name, note in items])


def offers(out: Output, items: Sequence[Offer]) -> None:
    if out.json:
        out.data([o.to_json() for o in items])
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


def providers(out: Output, reports: Sequence[ProviderReport]) -> None:
    """The providers with their status (from an authenticated call), capabilities and endpoint; the reason of
    every status that is not ok follows the table, as a warning."""
    if out.json:
        out.data([r.to_json() for r in reports])
        return
    out.table(("NAME", "TITLE", "STATUS", "STOP/START", "REBOOT", "LISTS-RESERVATIONS", "ENDPOINT"),
              [(r.name, r.title, r.status.value, _yes_no(r.stop_start), _yes_no(r.reboot),
                _yes_no(r.lists_reservations), r.endpoint) for r in reports])
    for report in reports:
        if report.problem:
            out.warn(f"provider {report.name}: {report.status.value}: {report.problem}")


def _yes_no(value: bool | None) -> str:
    return "?" if value is None else ("yes" if value else "no")
