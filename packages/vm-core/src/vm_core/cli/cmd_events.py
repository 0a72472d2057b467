"""`vm events`: what happened to the fleets, from the store's event log (vm_core.api: Client.events,
Client.events_followed; the log and its kinds: docs/events.md).

Table: one line per event, `AT  KIND  WHAT` (AT in UTC, WHAT the event's sentence). `-o json`: one JSON object
per line (JSONL), the document of docs/events.md. `--follow` keeps reading the store every FOLLOW_INTERVAL
seconds and prints each new event as it is recorded, until Ctrl-C (exit 130) or until nothing reads the output.
"""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING

import click

from .app import App, completes, with_app

if TYPE_CHECKING:
    from ..events.model import Event

FOLLOW_INTERVAL = 1.0  # seconds between two reads of the store with --follow
KIND_WIDTH = 16  # the longest kind (lease_taken_over, member_preempted)


@click.command()
@click.option("--fleet", "fleet", metavar="NAME", default=None, shell_complete=completes("fleets"),
              help="Only the events of this fleet.")
@click.option("--since", "since", metavar="TIME", default=None,
              help="Only events since TIME: a date or date and time (2026-12-01T09:30, UTC unless an offset is "
                   "given) or a duration back from now (90s, 30m, 1h, 2d).")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new events as they are recorded (Ctrl-C stops).")
@with_app
def events(app: App, fleet: str | None, since: str | None, follow: bool) -> None:
    """Show what happened to the fleets: created, scaled, replaced, stopped, reaped, destroyed, ... in order,
    with who did it (a person's user@host, or the watchdog).

    \b
    vm events --fleet train --since 1h
    vm events --follow -o json
    """
    from ..api.events import EventsRequest
    from ..errors import Interrupted

    lists = app.client().events_followed(EventsRequest(fleet=fleet, since=since))
    first = True
    try:
        while True:
            found = next(lists).events
            if first and not app.output.json:
                app.output.line(f"{'AT':<20}  {'KIND':<{KIND_WIDTH}}  WHAT")
            first = False
            for event in found:
                app.output.line(_line(app, event))
            if not follow or _nobody_reads(app):
                return
            time.sleep(FOLLOW_INTERVAL)
    except KeyboardInterrupt:
        app.fail(Interrupted("stopped following events; nothing was changed"))


def _line(app: App, event: Event) -> str:
    if app.output.json:
        return json.dumps(event.to_json(), separators=(",", ":"))
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(event.at))
    return f"{at:<20}  {event.kind.value:<{KIND_WIDTH}}  {event.text}"


def _nobody_reads(app: App) -> bool:
    """`vm events --follow | head`: the reader closed the pipe, so following ends (exit 0)."""
    from .exiting import reader_gone

    if reader_gone(sys.stdout):
        app.output.progress("nothing reads the output any more: stopped following events")
        return True
    return False
