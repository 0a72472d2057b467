"""`vm fleet status NAME --watch`: the status again every --interval seconds until the fleet is settled.

On a terminal (stdout) the view is redrawn in place: the screen is cleared (ANSI `ESC[H ESC[2J`) and the view
drawn again, with a last line saying when it was refreshed. Elsewhere (a pipe, a file, a log) a view is printed
only when it differs from the one before, followed by an empty line; with `-o json`, one compact JSON document
per line (the document of `vm fleet status -o json`), again only when it changed. Watching stops by itself when
the fleet is settled: its state is active, degraded, failed, stopped or destroyed and no member is creating or
terminating; when its record is gone (destroyed or forgotten by another vm); or when nothing reads its output any
more (`| head` closed the pipe). Ctrl-C stops it with exit 130.
"""

from __future__ import annotations

import io
import json
import sys
import time
from contextlib import redirect_stdout
from typing import TYPE_CHECKING

import click

from ..errors import Interrupted, NotFound
from . import fleet_views as views
from .app import App

if TYPE_CHECKING:
    from ..api.fleet_reports import FleetStatus

CLEAR = "\x1b[H\x1b[2J"
BUSY = frozenset({"creating", "starting", "terminating"})


def settled(report: FleetStatus) -> bool:
    """Whether the fleet will not change by itself: a settled state and no member on its way up or down."""
    from ..fleet.inspect import SETTLED
    from ..fleet.store import FleetState

    if report.view.fleet.state not in SETTLED | {FleetState.DESTROYED, FleetState.STOPPED}:
        return False
    return not any(m["state"] in BUSY for m in report.members)


def live_status(app: App, name: str, interval: float) -> FleetStatus | None:
    """Show the fleet until it is settled, or until nothing reads stdout any more (a closed pipe); returns the
    last status (None when the record went away meanwhile).
    Raises NotFound when the fleet is not recorded at the first look; ends with exit 130 on Ctrl-C."""
    from ..api.requests import FleetNameRequest
    from .exiting import reader_gone

    terminal = sys.stdout.isatty() and not app.output.json
    statuses = app.client().fleet_statuses(FleetNameRequest(name))
    shown, first = None, True
    try:
        while True:
            try:
                view = next(statuses)
            except NotFound:
                if first:
                    raise
                app.output.progress(f"fleet {name} is gone (its record was removed): stopped watching")
                return None
            first = False
            block = _render(app, view)
            if terminal:
                stamp = time.strftime("%H:%M:%S")
                click.echo(f"{CLEAR}{block}\nrefreshed {stamp}, every {interval:g} s; Ctrl-C stops", nl=True)
            elif block != shown:
                click.echo(block if app.output.json else block + "\n")
            shown = block
            if reader_gone(sys.stdout):  # `vm fleet status NAME --watch | head`: nobody reads further
                app.output.progress(f"nothing reads the output any more: stopped watching fleet {name}")
                return view
            if settled(view):
                app.output.progress(f"fleet {name} is settled: {view.view.fleet.state.value}")
                return view
            time.sleep(interval)
    except KeyboardInterrupt:
        app.fail(Interrupted(f"stopped watching fleet {name}; nothing was changed"))


def _render(app: App, view: FleetStatus) -> str:
    """The status as `vm fleet status` prints it (JSON: one compact line)."""
    if app.output.json:
        return json.dumps(view.to_json(), default=str)
    captured = io.StringIO()
    with redirect_stdout(captured):
        views.fleet_view(app.output, view)
    return captured.getvalue().rstrip("\n")
