"""`vm fleet scale | repair`: change a fleet's size, or bring it back to it (vm_core.api: Client.fleet_scale,
Client.fleet_repair)."""

from __future__ import annotations

import click

from . import fleet_views as views
from .app import App, completes, timeout_option, with_app
from .cmd_ssh import ssh_key_option

MAX_FLEET = 1000  # VMs per fleet: vm_core.api.fleets.MAX_FLEET, for the help text (a test keeps them equal)
_TIMEOUT_HELP = "How long each new VM may take to come up (and each removed one to go)."


@click.command()
@click.argument("name", shell_complete=completes("fleets"))
@click.option("--count", "-n", type=int, required=True, help="How many VMs the fleet should have.")
@click.option("--min-count", type=int, help="Also change the fleet's minimum (a shrink never goes below it).")
@click.option("--dry-run", is_flag=True, help="Print what would be created (with prices) or destroyed; change nothing.")
@timeout_option(_TIMEOUT_HELP)
@ssh_key_option
@with_app
def scale(app: App, name: str, count: int, min_count: int | None, dry_run: bool, timeout: float,
          ssh_public_key: str | None) -> None:
    """Grow or shrink a fleet to COUNT VMs.

    Growing places new VMs like `vm fleet create` (failover, the fleet's id on every VM); a grow that falls
    short keeps what it created (exit 7; `vm fleet repair` tries again), unless the fleet ends below its
    minimum: then the VMs this scale created are destroyed again. Shrinking destroys on-demand VMs before
    reserved ones, the most expensive first, never below the minimum.

    \b
    vm fleet scale train --count 16
    vm fleet scale train --count 4 --min-count 4 --dry-run
    """
    from ..api.requests import FleetScaleRequest

    report = app.client().fleet_scale(FleetScaleRequest(name, count, min_count=min_count, dry_run=dry_run,
                                                        timeout=timeout, ssh_public_key=ssh_public_key))
    views.scaled(app.output, report)
    app.conclude(report)


@click.command()
@click.argument("name", shell_complete=completes("fleets"))
@click.option("--dry-run", is_flag=True, help="Say what would be settled and replaced (with prices); change nothing.")
@timeout_option(_TIMEOUT_HELP)
@ssh_key_option
@with_app
def repair(app: App, name: str, dry_run: bool, timeout: float, ssh_public_key: str | None) -> None:
    """Bring a degraded or interrupted fleet back to its requested count.

    First the records are settled against the clouds like `vm fleet reconcile` (VMs carrying the fleet's id
    are adopted or destroyed, gone ones marked missing), then a new VM is placed for each one missing.

    \b
    vm fleet repair train
    vm fleet repair train --dry-run
    """
    from ..api.requests import FleetRepairRequest

    report = app.client().fleet_repair(FleetRepairRequest(name, dry_run=dry_run, timeout=timeout,
                                                          ssh_public_key=ssh_public_key))
    views.scaled(app.output, report)
    app.conclude(report)
