"""`vm cost`: what the VMs vm created cost, from the store alone (vm_core.api: Client.cost; no cloud is called).

Table: GROUP, VMS, GPU-HOURS, BILLED HOURS, ACCRUED USD, $/H NOW, a TOTAL row, then the period and that the
figures are estimates. `-o json`: the CostReport document (README "What am I spending"). `-o csv`: a header
`by,group,vms,gpu_hours,billed_hours,accrued_usd,rate_per_hour,priced`, a line per group, then the total (`by`
"total", `group` empty); the period and the estimate note go to stderr.
"""

from __future__ import annotations

import csv
import sys
import time
from typing import TYPE_CHECKING, Any

import click

from .app import App, with_app

if TYPE_CHECKING:
    from ..api.reports import CostReport
    from ..spend.report import CostRow

CSV = "csv"
# vm_core.spend.report.GROUPINGS, written out: --help imports nothing
BY = ("fleet", "user", "provider", "profile", "vm")
WHEN = ("a date or date and time (2026-12-01, 2026-12-01T09:30; UTC unless an offset is given) or a duration back"
        " from now (90s, 30m, 12h, 7d)")


class When(click.ParamType[float]):
    """A time as `vm cost` takes it (WHEN), as epoch seconds."""

    name = "date"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        from ..api.events import since_time
        from ..errors import UsageError

        try:
            return since_time(str(value), time.time())
        except UsageError:
            self.fail(f"{value!r} is not {WHEN}", param, ctx)


def _accept_csv(command: click.Command) -> click.Command:
    """`-o` of this command takes csv too (the other commands print tables or JSON only)."""
    from .output import FORMATS

    for param in command.params:
        if param.name == "output" and isinstance(param, click.Option):
            param.type = click.Choice((*FORMATS, CSV))
            param.help = "Output format (default: table; csv: one line per group, then the total)."
    return command


@_accept_csv
@click.command()
@click.option("--since", "since", type=When(), default=None, metavar="DATE",
              help=f"Start of the period: {WHEN}. Default: the first day of this month, 00:00 UTC.")
@click.option("--until", "until", type=When(), default=None, metavar="DATE",
              help="End of the period (a date is its 00:00 UTC). Default: now.")
@click.option("--by", "by", type=click.Choice(BY), default="fleet", show_default=True,
              help="Group by fleet (single VMs together), the user@host that created them, provider, profile or VM.")
@with_app
def cost(app: App, since: float | None, until: float | None, by: str) -> None:
    """What the VMs vm created have cost, from what vm recorded of them (no cloud is asked): estimates by list
    price and each cloud's billing rule (docs/billing.md).

    \b
    vm cost                      this month, by fleet
    vm cost --since 7d --by user
    vm cost --since 2026-11-01 --until 2026-12-01 -o csv
    """
    from ..api.requests import CostRequest

    report = app.client().cost(CostRequest(since=since, until=until, by=by))
    if app.output.json:
        app.output.data(report.to_json())
    elif app.output.format == CSV:
        _csv(report)
        app.output.notice(_period(report))
    else:
        _table(app, report)
    app.conclude(report)


HEADERS = ("GROUP", "VMS", "GPU-HOURS", "BILLED HOURS", "ACCRUED USD", "$/H NOW")


def _table(app: App, report: CostReport) -> None:
    rows = [_cells(row, _group(row.group, report.by)) for row in report.rows]
    app.output.table(HEADERS, [*rows, _cells(report.total, "TOTAL")])
    app.output.line("")
    app.output.line(_period(report))
    if not report.total.priced:
        app.output.line("Some billed time had no known price and is counted at 0 USD (marked *).")


def _cells(row: CostRow, group: str) -> list[str]:
    mark = "" if row.priced else "*"
    return [group, str(row.vms), f"{row.gpu_hours:.2f}", f"{row.billed_hours:.2f}", f"{row.accrued_usd:.2f}{mark}",
            f"{row.rate_per_hour:.2f}"]


def _group(name: str, by: str) -> str:
    if name:
        return name
    return "(single VMs)" if by == "fleet" else "(unknown)"


def _period(report: CostReport) -> str:
    from ..spend.report import iso

    since = iso(report.since) + (" (the first day of this month; --since to change)" if report.since_default else "")
    until = "now" if report.until >= report.now else iso(report.until)
    return f"From {since} until {until}: {report.estimate}."


def _csv(report: CostReport) -> None:
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(["by", "group", "vms", "gpu_hours", "billed_hours", "accrued_usd", "rate_per_hour", "priced"])
    for by, row in [*((report.by, r) for r in report.rows), ("total", report.total)]:
        doc = row.to_json()
        writer.writerow([by, doc["group"], doc["vms"], doc["gpu_hours"], doc["billed_hours"], doc["accrued_usd"],
                         doc["rate_per_hour"], str(doc["priced"]).lower()])
