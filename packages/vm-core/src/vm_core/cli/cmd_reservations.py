"""`vm reservations` (vm_core.api: Client.reservations)."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click

from .app import App, provider_option, with_app

if TYPE_CHECKING:
    from ..api.usage_reports import ReservationList
    from ..spend.reservations import ReservationUse

_AGO = re.compile(r"^(?P<n>\d+(?:\.\d+)?)(?P<unit>[mhd])$")
_UNIT = {"m": 60, "h": 3600, "d": 86400}


class Moment(click.ParamType[float]):
    """A moment as epoch seconds: an ISO 8601 date or time (UTC unless it names a zone), or a time ago such as
    90m, 24h or 7d."""

    name = "date"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        text = str(value).strip()
        if ago := _AGO.match(text):
            epoch = time.time() - float(ago["n"]) * _UNIT[ago["unit"]]
        else:
            try:
                moment = datetime.fromisoformat(text)
            except ValueError:
                self.fail(f"{text!r} is not a date: give one as 2026-12-01 or 2026-12-01T08:00, or a time ago as "
                          "90m, 24h or 7d", param, ctx)
            epoch = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
        if epoch < 0:
            self.fail(f"{text!r} is before 1970", param, ctx)
        return epoch


RESERVATION_COLUMNS = ("PROVIDER", "RESERVATION", "GPU", "REGIONS", "GPUS", "USED", "FREE", "$/GPU-H", "SINCE",
                       "IDLE-GPU-H", "IDLE-$", "ENDS")
VM_COLUMNS = ("RESERVATION", "VM", "NAME", "GPUS", "FLEET", "CREATED-BY")


@click.command()
@provider_option(required=False)
@click.option("--since", type=Moment(), metavar="DATE",
              help="Count idle GPU-hours from DATE (2026-12-01, 2026-12-01T08:00 UTC, or 90m, 24h, 7d ago); "
                   "default: the last 24 h, or since the reservation began.")
@with_app
def reservations(app: App, provider: str | None, since: float | None) -> None:
    """Every reservation or capacity block of the configured accounts: its size, the VMs on it now (with their
    fleet and who created them), the GPU-hours it sat idle and what they cost, and when it ends.

    Idle GPU-hours are an estimate from vm's spend ledger: the reservation's size over the period minus the
    GPU-hours of the VMs vm recorded on it (VMs vm did not create are counted as used only now). Nebius capacity
    blocks come from the profile's capacity_blocks setting: the Nebius API cannot list them.

    \b
    vm reservations
    vm reservations --provider crusoe --since 7d
    vm reservations --since 2026-12-01 -o json
    """
    from ..api.requests import ReservationsRequest

    report = app.client().reservations(ReservationsRequest(provider=provider, since=since))
    if report.answered:
        show(app, report)
    app.conclude(report, as_warnings=True)


def show(app: App, report: ReservationList) -> None:
    """The reservations table, then the VMs on them; the providers' notes and what is an estimate on stderr."""
    out = app.output
    if out.json:
        out.data(report.to_json())
        return
    out.table(RESERVATION_COLUMNS, [_row(u) for u in report.reservations])
    vms = [[u.terms.info.id, v.instance_id, v.name, v.gpus, v.fleet, v.created_by]
           for u in report.reservations for v in u.vms]
    if vms:
        out.line("")
        out.table(VM_COLUMNS, vms)
    for provider in report.providers:
        if provider.note:
            out.progress(f"{provider.provider}: {provider.note}")
    if report.reservations:
        out.progress(f"vm: {report.estimate}")


def _row(use: ReservationUse) -> list[Any]:
    info = use.terms.info
    return [info.provider, info.id, info.gpu, ",".join(info.regions), info.total_gpus, use.used_gpus,
            use.free_gpus, info.price_per_gpu_hour, _minute(use.since), use.idle_gpu_hours, use.idle_usd,
            _day(use.terms.ends_at)]


def _minute(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%MZ")


def _day(epoch: float | None) -> str:
    return "" if epoch is None else datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d")
