"""`vm watchdog`: look after the fleets of the store over time (vm_core.api: Client.watchdog; the passes and
duties: vm_core/watchdog/; how to run it for a team: docs/watchdog.md).

Each duty's actions are printed as progress when they happen, and a line per duty that acted or failed. With
--once, the pass's table follows: a row per duty run, and per fleet skipped (another process held its lease);
JSON: the report's `to_json()`. Exit 0 when every duty succeeded, 7 when one did not. The loop ends on SIGTERM
(exit 0) or SIGINT (exit 130) once the fleet being worked on has finished its duty, its leases released.
"""

from __future__ import annotations

import click

from .app import SECONDS, App, timeout_option, with_app


@click.command()
@click.option("--once", is_flag=True, help="One pass over the fleets, then exit (for cron or a Kubernetes CronJob).")
@click.option("--interval", type=SECONDS, default=60.0, show_default=True, metavar="SECONDS",
              help="Seconds between two passes.")
@timeout_option("How long each VM a duty creates or destroys may take.")
@with_app
def watchdog(app: App, once: bool, interval: float, timeout: float) -> None:
    """Do what vm promises over time, for every fleet of the store: destroy fleets whose --ttl passed (as
    `vm fleet reap`), keep maintained fleets at their count (as `vm fleet repair`), and send pending webhook
    notifications. Each fleet is acted on through its own profile, holding its lease: a fleet a person's command
    is changing is left for the next pass. Several watchdogs may share a PostgreSQL store; one that dies is
    replaced when its leases lapse.

    \b
    vm watchdog                  # a pass every minute, until SIGTERM
    vm watchdog --once           # one pass (exit 7 when a duty failed)
    """
    from ..api.requests import WatchdogRequest

    report = app.client().watchdog(WatchdogRequest(once=once, interval=interval, timeout=timeout))
    if once:
        doc = report.to_json()
        if app.output.json:
            app.output.data(doc)
        elif doc["last_pass"] is not None:
            fleets = doc["last_pass"]["fleets"]
            rows = [(f["fleet"], d["duty"], d["outcome"]) for f in fleets for d in f["duties"]]
            rows += [(f["fleet"], "-", "skipped") for f in fleets if f["skipped"]]
            if rows:  # each duty's summary was said as it happened
                app.output.table(("FLEET", "DUTY", "OUTCOME"), rows)
            else:
                app.output.progress("no fleet had a duty due")
    app.conclude(report)
