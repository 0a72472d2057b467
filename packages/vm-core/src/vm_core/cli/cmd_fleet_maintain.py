"""`vm fleet maintain NAME on|off`: whether the watchdog keeps a fleet's requested count (vm_core.api:
Client.fleet_maintain)."""

from __future__ import annotations

import click

from .app import App, completes, with_app


@click.command()
@click.argument("name", shell_complete=completes("fleets"))
@click.argument("switch", metavar="on|off", type=click.Choice(["on", "off"]))
@with_app
def maintain(app: App, name: str, switch: str) -> None:
    """Turn on (or off) the watchdog's keeping of a fleet's count: with it on, `vm watchdog` replaces members
    that are preempted, failed or gone outside vm, with the fleet's placement, strategy, price cap and machine
    options. Holds the fleet's lease while it changes the record. Safe to re-run.

    \b
    vm fleet maintain train on
    """
    from ..api.requests import FleetMaintainRequest

    report = app.client().fleet_maintain(FleetMaintainRequest(name, maintain=switch == "on"))
    if app.output.json:
        app.output.data(report.to_json())
    else:
        said = "on" if report.fleet.maintain else "off"
        app.output.pairs([("fleet", report.fleet.name), ("maintain", said),
                          ("changed", "yes" if report.changed else "no (it already was)")])
    app.conclude(report)
