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
    reserved = (i.reservation_id or "yes") if i.reserved else "-"
    return [i.provider, i.id, i.name, i.state.value, gpu, i.region, reserved, i.running_price]


def accepted(out: Output, items: Sequence[Accepted], *, single: bool = False) -> None:
    """Actions started with --no-wait: provider, instance and operation ids."""
    if out.json:
        out.data(items[0].to_json() if single and len(items) == 1 else [a.to_json() for a in items])
        return
    out.table(("PROVIDER", "ID", "NAME", "ACTION", "OPERATION"),
              [(a.provider, a.instance_id, a.name, a.verb, a.operation_id) for a in items])


def destroyed(out: Output, provider: str, ids: Sequence[str], *, single: bool = False) -> None:
    docs = [{"provider": provider, "id": i, "state": "terminated"} for i in ids]
    if out.json:
        out.data(docs[0] if single and len(docs) == 1 else docs)
        return
    out.table(("PROVIDER", "ID", "STATE"), [(provider, i, "terminated") for i in ids])


def offers(out: Output, items: Sequence[Offer]) -> None:
    if out.json:
        out.data([o.to_json() for o in items])
        return
    out.table(("PROVIDER", "REGION", "SHAPE", "GPU", "$/H", "$/GPU/H", "CAPACITY", "RESERVATION"),
              [(o.provider, o.region, o.shape, f"{o.gpu}x{o.gpu_count}", o.price_per_hour,
                o.price_per_hour / o.gpu_count if o.gpu_count else None, _capacity(o), o.reservation_id)
               for o in items])


def _capacity(o: Offer) -> str:
    if not o.available:
        return "none"
    return "?" if o.capacity is None else str(o.capacity)


def providers(out: Output, reports: Sequence[ProviderReport]) -> None:
    if out.json:
        out.data([r.to_json() for r in reports])
        return
    out.table(("NAME", "TITLE", "STATUS", "STOP/START", "REBOOT", "RESERVATIONS", "ENDPOINT"),
              [(r.name, r.title, _status(r), _yes_no(r.stop_start), _yes_no(r.reboot), _yes_no(r.reservations),
                r.endpoint) for r in reports])
    for report in reports:
        if report.problem:
            out.warn(f"provider {report.name}: {report.problem}")


def _status(r: ProviderReport) -> str:
    if r.problem:
        return "broken" if not r.title else "error"
    return "ok" if r.configured else "not configured"


def _yes_no(value: bool | None) -> str:
    return "?" if value is None else ("yes" if value else "no")
