"""`vm fleet create | list | status | scale | repair | destroy | reconcile | forget | ssh | reap`: groups of
VMs spread across providers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..catalog import default_catalog
from ..errors import CapacityError, PartialFailure, StrategyError, UsageError, VmError
from ..hints import Hint
from . import fleet_views as views
from . import validate
from .app import SECONDS, App, Price, completes, timeout_option, with_app, yes_option
from .cmd_fleet_scale import repair, scale
from .cmd_images import fleet_machine, machine_from, machine_options
from .cmd_ssh import fleet_ssh, ssh_key_option
from .fleet_context import fleet_providers, open_store
from .fleet_reap import reap

MAX_FLEET = 1000


class _Duration(click.ParamType[float]):
    """A time to live such as 30m, 8h, 2d or 1h30m (fleet/expiry.py), in seconds."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        from ..fleet.expiry import parse_duration

        if isinstance(value, float):
            return value
        try:
            return parse_duration(str(value))
        except UsageError as exc:
            self.fail(exc.message, param, ctx)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def fleet() -> None:
    """Fleets: named groups of VMs spread across providers, recorded so none is ever lost."""


@fleet.command("create")
@click.option("--gpu", required=True, metavar="TYPE[:N]", shell_complete=completes("gpus"),
              help="GPU type and GPUs per VM, the same for every VM: H100:8; H100 alone means H100:1.")
@click.option("--count", "-n", type=int, required=True, help=f"How many VMs (1-{MAX_FLEET}).")
@click.option("--name", help="Fleet name (default: fleet-<6 hex>); members are NAME--ID-0, NAME--ID-1, ... "
                             "(ID: the fleet's random id).")
@click.option("--strategy", default="spread", show_default=True,
              help="Placement strategy: spread, cheapest, reserved-first, packed, or a plugin's.")
@click.option("--placement", type=click.Choice(["any", "cluster"]), default="any", show_default=True,
              help="cluster: every VM with one provider, in one region, on one shape and reservation (the "
                   "cheapest place that holds them all); the whole fleet moves or fails.")
@click.option("--min-count", type=int, help="Keep the fleet if at least this many run (default: --count).")
@click.option("--providers", metavar="a,b,c", help="Providers to use (default: every configured one).")
@click.option("--region", help="Only this region.")
@click.option("--reservation", default="auto", show_default=True, metavar="auto|none|ID",
              help="Reserved capacity: auto, none (on-demand only) or a reservation id.")
@click.option("--strict", is_flag=True, help="Only reserved capacity; never fall back to on-demand.")
@click.option("--allow-unterminable", is_flag=True,
              help="Also use reservations whose VMs the cloud will not delete through its API (Lambda).")
@click.option("--max-price", type=Price(), metavar="USD_PER_HOUR",
              help="Refuse (exit 6) a plan whose total $/h is above this, or cannot be known; recorded.")
@click.option("--ttl", type=_Duration(), metavar="DURATION",
              help="Time to live (30m, 8h, 2d): `vm fleet reap` destroys the fleet after it.")
@click.option("--dry-run", is_flag=True, help="Print the placement plan and change nothing.")
@click.option("-v", "--verbose", is_flag=True,
              help="On a terminal, also one progress line per VM (by default one line of counts, updated in place).")
@timeout_option("How long each VM may take to come up.")
@ssh_key_option
@machine_options
@with_app
def create(app: App, gpu: str, count: int, name: str | None, strategy: str, placement: str,
           min_count: int | None, providers: str | None, region: str | None, reservation: str, strict: bool,
           allow_unterminable: bool, max_price: float | None, ttl: float | None, dry_run: bool, verbose: bool,
           timeout: float, ssh_public_key: str | None, image: str | None, disk_size: int | None,
           startup_script: Path | None) -> None:
    """Create a fleet of COUNT VMs, spread by the strategy, failing over when a cloud runs out.

    Below --min-count everything created is destroyed again (all-or-nothing by default). With
    --placement cluster every VM goes to one place (exit 6 when no single place can hold the fleet).

    \b
    vm fleet create --gpu H100 --count 12 --name train
    vm fleet create --gpu H100:8 --count 4 --strategy cheapest --min-count 2 --dry-run
    vm fleet create --gpu H100:8 --count 4 --placement cluster --dry-run
    vm fleet create --gpu H100 --count 8 --max-price 30 --ttl 8h
    vm fleet create --gpu H100 --count 4 --providers nebius --image ubuntu24.04-cuda12.8 --startup-script setup.sh
    """
    from ..fleet.budget import check_budget
    from ..fleet.cluster import Placement
    from ..fleet.create import FleetCreator, FleetSpec
    from ..fleet.naming import new_fleet_name
    from ..fleet.service import connect, run_interruptibly, strategy_failed, strategy_named
    from ..sshkeys import check_keys
    from .fleet_progress import FleetProgress

    where = Placement(placement)
    strategy = _placement_strategy(where, strategy)
    spec = FleetSpec(name=new_fleet_name(name), **_request(gpu, count, min_count, region, reservation, strict),
                     strategy=strategy, providers=_provider_list(providers), allow_unterminable=allow_unterminable,
                     ssh_public_key=ssh_public_key, placement=where, ttl=ttl, max_price=max_price,
                     machine=machine_from(image, disk_size, startup_script))
    chosen = strategy_named("cheapest" if where is Placement.CLUSTER else strategy)
    session = app.session()
    connected = connect(session, spec.providers, app.output.warn)
    connected, spec = fleet_machine(connected, spec, explicit=providers is not None, warn=app.output.warn)
    if not dry_run:
        check_keys(session, connected, ssh_public_key, app.output.warn)
    store = open_store(session)
    shown = FleetProgress(app.output, spec.count, verbose=verbose)
    creator = FleetCreator(store, connected, chosen, progress=shown, timeout=timeout, profile=session.profile.name)
    if dry_run and where is Placement.CLUSTER:
        from ..fleet.cluster_place import plan

        cluster = plan(creator, spec)
        views.cluster_plan(app.output, spec, cluster)
        if (refusal := cluster.failure()) is not None:
            app.fail(refusal)
        return
    if dry_run:
        placements, offers = creator.plan(spec)
        views.plan(app.output, spec, placements, offers, warn_short=False)  # the error below says it
        if len(placements) < spec.count:
            app.fail(CapacityError(f"only {len(placements)} of {spec.count} VMs can be placed with the current "
                                   "offers", suggestion=Hint.run("offers", "--gpu", gpu)))
        over = check_budget(placements, max_price)
        if over is not None:
            app.fail(over)
        return
    try:
        report = run_interruptibly(creator, lambda: creator.create(spec))
    except StrategyError as exc:
        raise strategy_failed(store, creator.identity, exc) from None
    finally:
        shown.close()
    views.created(app.output, report, store.members(spec.name))
    _exit_for(app, report)


def _placement_strategy(placement: Any, strategy: str) -> str:
    """The strategy recorded with the fleet: `cluster` for a cluster fleet, whose one place is chosen cheapest
    first (an explicit --strategy, which orders VMs across places, is a usage error there)."""
    from ..fleet.cluster import Placement

    if placement is not Placement.CLUSTER:
        return strategy
    source = click.get_current_context().get_parameter_source("strategy")
    if source is not click.core.ParameterSource.DEFAULT:
        raise UsageError(f"--strategy {strategy} cannot be combined with --placement cluster: every VM goes to one "
                         "place, the cheapest that can hold the whole fleet")
    return "cluster"


def _request(gpu: str, count: int, min_count: int | None, region: str | None, reservation: str,
             strict: bool) -> dict[str, Any]:
    wanted = default_catalog().parse(gpu)
    if not 1 <= count <= MAX_FLEET:
        raise UsageError(f"--count must be between 1 and {MAX_FLEET}, not {count}")
    if region is not None and not region.strip():
        raise UsageError("--region needs a region name (see `vm offers --gpu ...` for where it is sold)")
    minimum = count if min_count is None else min_count
    if not 1 <= minimum <= count:
        raise UsageError(f"--min-count must be between 1 and --count ({count}), not {minimum}")
    parsed = validate.reservation(reservation, strict)
    return {"gpu": wanted.gpu, "gpu_count": wanted.gpu_count, "count": count, "min_count": minimum,
            "region": region, "reservation": parsed}


def _provider_list(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names:
        raise UsageError("--providers needs at least one provider name, e.g. --providers crusoe,nebius")
    return names


def _exit_for(app: App, report: Any) -> None:
    """The documented exit code of a finished create: 0 active, 7 degraded, 130 interrupted; a failed fleet
    exits with its failures' kind (9 all timed out, 4 all refused credentials, 8 all transient, else 6)."""
    from ..errors import Interrupted
    from ..fleet.service import failure_kind
    from ..fleet.store import FleetState

    name, fleet = report.fleet.name, report.fleet
    if report.interrupted:
        app.fail(Interrupted(f"fleet {name} interrupted with {len(report.running)} VM(s) running",
                             suggestion=Hint.run("fleet", "destroy", name)))
    if fleet.state is FleetState.DEGRADED:
        app.fail(PartialFailure(f"fleet {name} is degraded: {fleet.message}",
                                suggestion=Hint.run("fleet", "status", name)))
    if fleet.state is not FleetState.FAILED:
        return
    if report.unresolved:
        app.fail(PartialFailure(f"fleet {name}: rollback could not destroy {len(report.unresolved)} VM(s)",
                                suggestion=Hint.run("fleet", "destroy", name)),
                 [(name, VmError(n)) for n in report.unresolved])
    app.fail(failure_kind(report.errors)(f"fleet {name} failed: {fleet.message}; its name stays taken until it is "
                                         "destroyed", suggestion=Hint.run("fleet", "destroy", name)))


@fleet.command("list")
@click.option("--mine", is_flag=True, help="Only fleets created by this user on this host (user@host).")
@with_app
def list_fleets(app: App, mine: bool) -> None:
    """Every recorded fleet, who created it and with which profile (from the store, shared by a team in team
    mode; `vm fleet status NAME` asks the clouds). The state shown is derived from the members' records as
    `vm fleet status` last saw them."""
    from ..fleet.lease import user_at_host

    store = open_store(app.session())
    fleets = [f for f in store.list_fleets() if not mine or f.created_by == user_at_host()]
    views.fleet_list(app.output, [(f, store.members(f.name)) for f in fleets])


@fleet.command()
@click.argument("name", shell_complete=completes("fleets"))
@click.option("--watch", "-w", is_flag=True,
              help="Refresh until the fleet is settled: in place on a terminal, else each change once.")
@click.option("--interval", type=SECONDS, metavar="SECONDS", help="Seconds between refreshes with --watch (default 2).")
@with_app
def status(app: App, name: str, watch: bool, interval: float | None) -> None:
    """A fleet's VMs, providers, states, reservations and $/h, refreshed from the clouds; its state follows
    from what was seen (members gone outside vm are missing). With --watch, again every --interval seconds
    until no member is creating or terminating and the fleet is active, degraded, failed or gone."""
    from ..fleet.inspect import FleetInspector

    if interval is not None and not watch:
        raise UsageError("--interval only applies with --watch",
                         suggestion=Hint.run("fleet", "status", name, "--watch"))
    store, _, providers = fleet_providers(app, name)
    if watch:
        from .fleet_watch import watch as watching

        last = watching(app, store, providers, name, 2.0 if interval is None else interval)
        if last is not None:
            unchecked(app, last.problems, name)
        return
    view = FleetInspector(store, providers).view(name)
    views.fleet_view(app.output, view)
    unchecked(app, view.problems, name)


@fleet.command()
@click.argument("name", shell_complete=completes("fleets"))
@timeout_option()
@yes_option
@with_app
def destroy(app: App, name: str, timeout: float, yes: bool) -> None:
    """Destroy every VM of a fleet (also ones it created but never recorded, if they carry its id). VMs that
    only look like the fleet's are left alone and listed. Safe to re-run."""
    from ..errors import NotFound
    from ..fleet.destroy import DestroyReport, FleetDestroyer
    from ..fleet.naming import check_fleet_name

    check_fleet_name(name)  # exit 2 for a name no fleet can have
    try:
        store, record, providers = fleet_providers(app, name)
        if not yes:
            _confirm(app, record, store.members(name))
        report = FleetDestroyer(store, providers, progress=app.output.progress, timeout=timeout).destroy(name)
    except NotFound as exc:  # never recorded, or forgotten by another vm process meanwhile
        app.output.progress(f"{exc.message}: nothing to destroy")
        if app.output.json:
            views.destroyed(app.output, DestroyReport(name, forgotten=True))
        return
    views.destroyed(app.output, report)
    if report.failures:
        app.fail(PartialFailure(f"{len(report.failures)} VM(s) of fleet {name} may still exist",
                                suggestion=Hint.run("fleet", "destroy", name)),
                 [(name, VmError(f)) for f in report.failures])
    if report.released:
        app.fail(PartialFailure(
            f"fleet {name}: {len(report.released)} VM(s) still run and bill: their cloud refuses to delete them "
            "through its API (terminate them in its console, then re-run this; the fleet stays recorded)",
            suggestion=Hint.run("fleet", "forget", name)))


def _confirm(app: App, record: Any, members: list[Any]) -> None:
    """On a terminal, list the fleet's VMs (from its records) with their $/h and ask; scripts are not asked."""
    from ..fleet.inspect import SHOWN
    from .app import confirm_destroy

    live = [views.recorded_instance(record, m) for m in members if m.state in SHOWN]
    confirm_destroy(app, live, yes=False, again=Hint.run("fleet", "destroy", record.name, "--yes"),
                    what=f"fleet {record.name}")


@fleet.command()
@click.argument("name", shell_complete=completes("fleets"))
@click.option("--dry-run", is_flag=True, help="Say what would be adopted, destroyed or marked, and change nothing.")
@timeout_option()
@with_app
def reconcile(app: App, name: str, dry_run: bool, timeout: float) -> None:
    """Make the store match the clouds: adopt or destroy VMs that carry the fleet's id, mark missing members,
    fix the state. VMs that only look like the fleet's are left alone and listed."""
    from ..fleet.reconcile import FleetReconciler

    store, _, providers = fleet_providers(app, name)
    report = FleetReconciler(store, providers, progress=app.output.progress, timeout=timeout).reconcile(
        name, dry_run=dry_run)
    views.reconciled(app.output, report)
    unchecked(app, report.view.problems, name)


@fleet.command()
@click.argument("name", shell_complete=completes("fleets"))
@with_app
def forget(app: App, name: str) -> None:
    """Remove a fleet's record without touching any VM; prints every VM it leaves running."""
    from ..fleet.service import forget as forgetting

    views.forgotten(app.output, *forgetting(open_store(app.session()), name))


def unchecked(app: App, problems: list[str], name: str) -> None:
    """Exit 7 listing the members of fleet `name` that could not be checked (`problems`), if any."""
    if problems:
        app.fail(PartialFailure(f"fleet {name}: {len(problems)} member(s) could not be checked"),
                 [(name, VmError(p)) for p in problems])


fleet.add_command(fleet_ssh)
fleet.add_command(scale)
fleet.add_command(repair)
fleet.add_command(reap)
