"""`vm fleet reap`: destroy every fleet whose --ttl has passed, each exactly as `vm fleet destroy` would
(the decisions: fleet/reap.py).

Each expired fleet is acted on through its own profile and accounts (fleet_context.fleet_providers). A fleet that
cannot be acted on is reported and skipped; the others go on. Exit 0 when every expired fleet is gone (or none
had expired), 7 when something was left.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ..errors import NotFound, PartialFailure, VmError
from ..hints import Hint
from .app import App, ask, on_terminal, timeout_option, with_app, yes_option
from .fleet_context import fleet_providers, open_store
from .fleet_views import expiry_text, reaped

if TYPE_CHECKING:
    from ..fleet.reap import Outcome, Target
    from ..fleet.store import FleetRecord


@click.command()
@click.option("--dry-run", is_flag=True, help="List the expired fleets and what would happen; change nothing.")
@timeout_option()
@yes_option
@with_app
def reap(app: App, dry_run: bool, timeout: float, yes: bool) -> None:
    """Destroy every fleet whose --ttl has passed, with the guarantees of `vm fleet destroy` (look-alikes are
    left alone; a fleet whose lease is held, or whose accounts this profile cannot reach, is skipped and
    reported). Run it from cron or a systemd timer (see docs/fleets.md)."""
    from ..fleet import reap as reaping

    explicit = app.profile_name
    resolved = [_resolve(app, record, explicit) for record in reaping.due(open_store(app.session()))]
    outcomes = [r for r in resolved if isinstance(r, reaping.Outcome)]
    targets = [r for r in resolved if isinstance(r, reaping.Target)]
    if dry_run:
        outcomes += [reaping.preview(t) for t in targets]
    else:
        if not yes:
            _confirm(app, targets)
        outcomes += [_destroy(app, t, timeout) for t in targets]
    if not outcomes:
        app.output.progress("no fleet has expired")
    reaped(app.output, reaping.in_order(outcomes), dry_run)
    left = [o for o in outcomes if not o.ok]
    if left:
        app.fail(PartialFailure(f"{len(left)} of {len(outcomes)} expired fleet(s) were left",
                                suggestion=Hint.run("fleet", "reap")),
                 [(o.fleet.name, VmError(f"{o.result}: {o.reason}")) for o in left])


def _resolve(app: App, record: FleetRecord, explicit: str | None) -> Target | Outcome:
    """The fleet's store and providers in its own accounts, else the Outcome of skipping (or of it being gone)."""
    from ..fleet import reap as reaping

    if app.profile_name != explicit:
        app.use_profile(explicit)  # the previous fleet's profile must not carry over to this one
    try:
        store, current, providers = fleet_providers(app, record.name)
    except NotFound:
        return reaping.gone(record)
    except VmError as exc:
        return reaping.skipped(record, exc.message)
    return reaping.target(record, store, current, providers, app.session().profile.name)


def _destroy(app: App, target: Target, timeout: float) -> Outcome:
    from ..fleet.reap import reap as reaped_one

    app.output.progress(f"fleet {target.record.name} expired at {expiry_text(target.record.expires_at)}: "
                        "destroying it")
    return reaped_one(target, timeout=timeout, progress=app.output.progress)


def _confirm(app: App, targets: list[Target]) -> None:
    """On a terminal, list the fleets and ask once; without one (cron, systemd), go ahead."""
    if not targets or not on_terminal():
        return
    app.output.notice("These expired fleets will be destroyed:")
    for t in targets:
        app.output.notice(f"  {t.record.name}  expired {expiry_text(t.record.expires_at)}  {t.live} VM(s)")
    ask(f"Destroy {len(targets)} expired fleet(s)?", again=Hint.run("fleet", "reap", "--yes"))
