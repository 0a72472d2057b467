"""`vm fleet stop | start`: stop every VM of a fleet that can stop, or start them again (vm_core.api:
Client.fleet_stop, Client.fleet_start). Each VM's action was printed as progress when it happened; the table is
the summary and each member's result (JSON: the report's `to_json()`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from .app import App, completes, timeout_option, with_app

if TYPE_CHECKING:
    from ..api.fleet_reports import FleetPowerReport
    from .output import Output


@click.command()
@click.argument("name", shell_complete=completes("fleets"))
@timeout_option("How long each VM may take to stop.")
@with_app
def stop(app: App, name: str, timeout: float) -> None:
    """Stop every VM of a fleet whose cloud can stop it (Crusoe, Nebius); VMs on a cloud that cannot (Lambda)
    keep running and billing, and are said with their $/h. The fleet's state is then `stopped`; exit 7 when
    some VM could not be stopped (re-run to retry). Safe to re-run.

    \b
    vm fleet stop train
    """
    from ..api.requests import FleetPowerRequest

    report = app.client().fleet_stop(FleetPowerRequest(name, timeout=timeout))
    shown(app.output, report)
    app.conclude(report)


@click.command()
@click.argument("name", shell_complete=completes("fleets"))
@timeout_option("How long each VM may take to start.")
@with_app
def start(app: App, name: str, timeout: float) -> None:
    """Start the stopped VMs of a fleet again, as `vm start` does: a VM whose reservation has no room any more
    starts on-demand, and that is warned about with both prices. The fleet is active again (exit 7 when it is
    degraded or some VM could not be started).

    \b
    vm fleet start train
    """
    from ..api.requests import FleetPowerRequest

    report = app.client().fleet_start(FleetPowerRequest(name, timeout=timeout))
    shown(app.output, report)
    app.conclude(report)


def shown(out: Output, report: FleetPowerReport) -> None:
    """The summary of a stop or start and one row per member: its result, its state and $/h now (each result's
    detail was said when it happened)."""
    doc = report.to_json()
    if out.json:
        out.data(doc)
        return
    done = "stopped" if doc["action"] == "stop" else "started"
    pairs = [("fleet", doc["name"]), ("state", doc["state"]), (done, doc[done]), ("already", doc["already"])]
    if doc["action"] == "stop":
        pairs += [("cannot stop", doc["cannot_stop"]), ("still billing $/h", f"{doc['still_billing_per_hour']:.2f}")]
    out.pairs([*pairs, ("failed", doc["failed"])])
    if doc["actions"]:
        out.table(("PROVIDER", "ID", "NAME", "RESULT", "STATE", "$/H"),
                  [(a["provider"], a["id"], a["name"], a["action"].replace(" ", "-"), a["state"], a["price_per_hour"])
                   for a in doc["actions"]])
