"""`vm fleet reap`: destroy every fleet whose --ttl has passed, each exactly as `vm fleet destroy` would, and stop
or destroy every fleet that reached its spend budget (vm_core.api: Client.fleet_reap; the decisions: fleet/reap.py,
fleet/budget_enforce.py).

Each fleet is acted on through its own profile and accounts. A fleet that cannot be acted on is reported and
skipped; the others go on. Exit 0 when every expired fleet is gone and every fleet over budget is stopped or
gone (or there was none), 7 when something was left.
"""

from __future__ import annotations

import click

from .app import App, timeout_option, with_app, yes_option
from .fleet_views import reaped


@click.command()
@click.option("--dry-run", is_flag=True,
              help="List the expired fleets, those over budget, and what would happen; change nothing.")
@timeout_option()
@yes_option
@with_app
def reap(app: App, dry_run: bool, timeout: float, yes: bool) -> None:
    """Destroy every fleet whose --ttl has passed, with the guarantees of `vm fleet destroy` (look-alikes are
    left alone; a fleet whose lease is held, or whose accounts this profile cannot reach, is skipped and
    reported); stop (or destroy, by its --on-budget) every fleet that reached its --budget. Run it from cron or a
    systemd timer (see docs/fleets.md)."""
    from ..api.requests import FleetReapRequest

    report = app.client().fleet_reap(FleetReapRequest(dry_run=dry_run, timeout=timeout),
                                     confirm=app.confirmer(yes=yes))
    reaped(app.output, report)
    app.conclude(report)
