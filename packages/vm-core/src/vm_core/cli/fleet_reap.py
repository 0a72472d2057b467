"""`vm fleet reap`: destroy every fleet whose --ttl has passed, each exactly as `vm fleet destroy` would.

Each expired fleet is acted on through its own profile and accounts (fleet_context.fleet_providers), under its own
lease. A fleet that cannot be acted on (its accounts are not the current profile's, a provider it used cannot be
reached, another process holds its lease) is reported and skipped; the others go on. Exit 0 when every expired
fleet is gone (or none had expired), 7 when something was left.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import click

from ..errors import Cancelled, NotFound, PartialFailure, VmError
from ..hints import Hint
from .app import App, common_options, on_terminal, pass_app, timeout_option, yes_option
from .fleet_context import fleet_providers, open_store

DESTROYED, LEFT, SKIPPED, WOULD_DESTROY, GONE = "destroyed", "left", "skipped", "would-destroy", "gone"


@dataclass
class Outcome:
    """What reap did (or, with --dry-run, would do) to one expired fleet."""

    fleet: Any  # the FleetRecord as listed
    result: str
    reason: str = ""
    vms: int = 0  # VMs destroyed (would be destroyed: recorded VMs that may exist)
    actions: list[Any] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.result in (DESTROYED, GONE, WOULD_DESTROY)


@dataclass
class _Target:
    record: Any
    store: Any
    providers: dict[str, Any]


@click.command()
@click.option("--dry-run", is_flag=True, help="List the expired fleets and what would happen; change nothing.")
@timeout_option()
@yes_option
@common_options
@pass_app
def reap(app: App, dry_run: bool, timeout: float, yes: bool) -> None:
    """Destroy every fleet whose --ttl has passed, with the guarantees of `vm fleet destroy` (look-alikes are
    left alone; a fleet whose lease is held, or whose accounts this profile cannot reach, is skipped and
    reported). Run it from cron or a systemd timer (see docs/fleets.md)."""
    from ..fleet.expiry import expired

    now = time.time()
    due = [f for f in open_store(app.session()).list_fleets() if expired(f, now)]
    outcomes: list[Outcome] = []
    targets = []
    explicit = app.profile_name
    for record in due:
        target = _resolve(app, record, explicit)
        if isinstance(target, Outcome):
            outcomes.append(target)
        else:
            targets.append(target)
    if dry_run:
        outcomes += [_would(t) for t in targets]
    else:
        if not yes:
            _confirm(app, targets)
        outcomes += [_destroy(app, t, timeout) for t in targets]
    _show(app, sorted(outcomes, key=lambda o: (o.fleet.created_at, o.fleet.name)), dry_run)
    left = [o for o in outcomes if not o.ok]
    if left:
        app.fail(PartialFailure(f"{len(left)} of {len(outcomes)} expired fleet(s) were left",
                                suggestion=Hint.run("fleet", "reap")),
                 [(o.fleet.name, VmError(f"{o.result}: {o.reason}")) for o in left])


def _resolve(app: App, record: Any, explicit: str | None) -> _Target | Outcome:
    """The fleet's store and providers in its own accounts, else the Outcome of skipping (or of it being gone)."""
    from ..fleet.destroy import TARGETS

    if app.profile_name != explicit:
        app.use_profile(explicit)  # the previous fleet's profile must not carry over to this one
    try:
        store, current, providers = fleet_providers(app, record.name)
    except NotFound:
        return Outcome(record, GONE, "removed by another vm process meanwhile")
    except VmError as exc:
        return Outcome(record, SKIPPED, exc.message)
    needed = {m.provider for m in store.members(record.name) if m.state in TARGETS} | set(current.accounts)
    unreachable = sorted(needed - set(providers))
    if unreachable:
        return Outcome(record, SKIPPED, f"profile {app.session().profile.name} cannot reach "
                                        f"{', '.join(unreachable)}, which the fleet uses")
    if current.fleet_id != record.fleet_id:
        return Outcome(record, SKIPPED, "another fleet of that name was created meanwhile")
    return _Target(current, store, providers)


def _would(target: _Target) -> Outcome:
    from ..fleet.inspect import SHOWN
    from ..fleet.lease import live_lease

    held = live_lease(target.store, target.record.name)
    if held is not None:
        return Outcome(target.record, SKIPPED, f"being changed by {held.holder} ({held.operation})")
    live = [m for m in target.store.members(target.record.name) if m.state in SHOWN]
    return Outcome(target.record, WOULD_DESTROY, vms=len(live))


def _destroy(app: App, target: _Target, timeout: float) -> Outcome:
    from ..fleet.destroy import FleetDestroyer
    from ..fleet.expiry import expired
    from ..fleet.lease import LeaseRefused

    record = target.record

    def still_due(now: Any) -> str:
        if now.fleet_id != record.fleet_id:
            return "another fleet of that name was created meanwhile"
        return "" if expired(now) else "its expiry was changed meanwhile"

    app.output.progress(f"fleet {record.name} expired at {_when(record.expires_at)}: destroying it")
    destroyer = FleetDestroyer(target.store, target.providers, progress=app.output.progress, timeout=timeout)
    try:
        report = destroyer.destroy(record.name, guard=still_due)
    except LeaseRefused as exc:
        return Outcome(record, SKIPPED, f"being changed by {exc.lease.holder} ({exc.lease.operation})")
    except NotFound:
        return Outcome(record, GONE, "removed by another vm process meanwhile")
    except VmError as exc:
        return Outcome(record, LEFT, exc.message)
    if report.skipped:
        return Outcome(record, SKIPPED, report.skipped)
    if report.forgotten:
        return Outcome(record, DESTROYED, vms=report.destroyed, actions=report.actions)
    why = "; ".join(report.failures) or f"{len(report.released)} VM(s) released: their cloud refuses to delete them"
    return Outcome(record, LEFT, why, vms=report.destroyed, actions=report.actions)


def _confirm(app: App, targets: list[_Target]) -> None:
    """On a terminal, list the fleets and ask once; without one (cron, systemd), go ahead."""
    from ..fleet.inspect import SHOWN

    if not targets or not on_terminal():
        return
    app.output.notice("These expired fleets will be destroyed:")
    for t in targets:
        live = sum(1 for m in t.store.members(t.record.name) if m.state in SHOWN)
        app.output.notice(f"  {t.record.name}  expired {_when(t.record.expires_at)}  {live} VM(s)")
    try:
        agreed = click.confirm(f"Destroy {len(targets)} expired fleet(s)?", default=False, err=True)
    except click.Abort:
        agreed = False
    if not agreed:
        raise Cancelled("cancelled: nothing was destroyed", suggestion=Hint.run("fleet", "reap", "--yes"))


def _when(epoch: float | None) -> str:
    from .fleet_views import expiry_text

    return expiry_text(epoch)


def _show(app: App, outcomes: list[Outcome], dry_run: bool) -> None:
    from .fleet_views import reaped

    if not outcomes:
        app.output.progress("no fleet has expired")
    reaped(app.output, outcomes, dry_run)
