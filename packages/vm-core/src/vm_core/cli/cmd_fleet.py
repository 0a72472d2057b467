"""`vm fleet create | list | status | scale | repair | destroy | reconcile | forget | ssh | reap`: groups of
VMs spread across providers."""

from __future__ import annotations

from pathlib import Path

import click
from click.core import ParameterSource

from ..errors import UsageError
from ..hints import Hint
from . import cmd_fleet_power as power
from . import fleet_views as views
from .app import SECONDS, App, PositiveNumber, Price, completes, timeout_option, with_app, yes_option
from .cmd_fleet_maintain import maintain as maintain_command
from .cmd_fleet_scale import MAX_FLEET, repair, scale
from .cmd_images import machine_from, machine_options
from .cmd_ssh import fleet_ssh, ssh_key_option
from .fleet_reap import reap


class _Duration(click.ParamType[float]):
    """A time to live such as 30m, 8h, 2d or 1h30m (fleet/expiry.py), in seconds."""

    name = "duration"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> float:
        from ..fleet.expiry import parse_duration

        if isinstance(value, float):
            return value
        try:
            return parse_duration(str(value))
        except UsageError as exc:
            self.fail(exc.message, param, ctx)


class _Usd(PositiveNumber):
    """An amount of money in USD: a positive, finite number."""

    name = "usd"
    not_a_number = "{} is not an amount of USD, e.g. 500 or 99.50"
    not_positive = "{} is not a positive amount of USD"


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
@click.option("--budget", type=_Usd(), metavar="USD",
              help="Total spend cap: refused (exit 6) if its $/h times --ttl is above it; warned at 80 %; at 100 % "
                   "`vm fleet reap` (or the watchdog) stops or destroys it (--on-budget). Recorded.")
@click.option("--on-budget", type=click.Choice(["stop", "destroy"]),
              help="With --budget: stop (default; destroyed when a member's cloud cannot stop) or destroy.")
@click.option("--maintain", is_flag=True, help="The watchdog keeps --count VMs running (replacing preempted, failed "
                                               "or gone ones); recorded, `vm fleet maintain` changes it.")
@click.option("--spot", is_flag=True, help="Spot VMs where a cloud sells them (Nebius), beyond --on-demand-base.")
@click.option("--on-demand-base", type=int, metavar="N", help="With --spot: the first N VMs are on-demand.")
@click.option("--spot-fallback", is_flag=True, help="With --spot: on-demand where no spot VM can be placed.")
@click.option("--wait-for-capacity", type=_Duration(), metavar="DURATION",
              help="When the fleet cannot be placed now, record it waiting and place it once the clouds have room "
                   "(30m, 2h); give up after DURATION. Re-run the same command to go on after Ctrl-C.")
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
           startup_script: Path | None, maintain: bool, spot: bool, on_demand_base: int | None,
           spot_fallback: bool, wait_for_capacity: float | None, budget: float | None,
           on_budget: str | None) -> None:
    """Create a fleet of COUNT VMs, spread by the strategy, failing over when a cloud runs out.

    Below --min-count everything created is destroyed again (all-or-nothing by default). With
    --placement cluster every VM goes to one place (exit 6 when no single place can hold the fleet).

    \b
    vm fleet create --gpu H100 --count 12 --name train
    vm fleet create --gpu H100:8 --count 4 --strategy cheapest --min-count 2 --dry-run
    vm fleet create --gpu H100:8 --count 4 --placement cluster --dry-run
    vm fleet create --gpu H100 --count 8 --max-price 30 --ttl 8h
    vm fleet create --gpu H100 --count 4 --providers nebius --image ubuntu24.04-cuda12.8 --startup-script setup.sh
    vm fleet create --gpu H100 --count 8 --spot --on-demand-base 2 --spot-fallback --maintain
    vm fleet create --gpu H100 --count 16 --wait-for-capacity 2h --max-price 40
    vm fleet create --gpu H100:8 --count 4 --budget 500 --ttl 8h --on-budget destroy
    """
    from ..api.fleet_reports import FleetPlanReport
    from ..api.requests import FleetCreateRequest
    from .fleet_progress import FleetProgress

    explicit = click.get_current_context().get_parameter_source("strategy") is not ParameterSource.DEFAULT
    if on_budget is not None and budget is None:
        raise UsageError("--on-budget only applies with --budget", suggestion="add --budget USD")
    request = FleetCreateRequest(
        gpu=gpu, count=count, name=name, strategy=strategy if explicit or placement != "cluster" else None,
        placement=placement, min_count=min_count, providers=_provider_list(providers), region=region,
        reservation=reservation, strict=strict, allow_unterminable=allow_unterminable, max_price=max_price, ttl=ttl,
        ssh_public_key=ssh_public_key, machine=machine_from(image, disk_size, startup_script), timeout=timeout,
        maintain=maintain, spot=spot, on_demand_base=on_demand_base, spot_fallback=spot_fallback,
        wait_for_capacity=wait_for_capacity, budget=budget, on_budget=on_budget or "stop")
    client = app.client()
    if dry_run:
        planned = client.fleet_plan(request)
        if isinstance(planned, FleetPlanReport):
            views.plan(app.output, planned, warn_short=False)  # its problem says it
        else:
            views.cluster_plan(app.output, planned)
        app.conclude(planned)
        return
    shown = FleetProgress(app.output, count, verbose=verbose)
    try:
        report = client.fleet_create(request, progress=shown)
    finally:
        shown.close()
    views.created(app.output, report)
    app.conclude(report)


def _provider_list(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names:
        raise UsageError("--providers needs at least one provider name, e.g. --providers crusoe,nebius")
    return names


@fleet.command("list")
@click.option("--mine", is_flag=True, help="Only fleets created by this user on this host (user@host).")
@with_app
def list_fleets(app: App, mine: bool) -> None:
    """Every recorded fleet, who created it and with which profile (from the store, shared by a team in team
    mode; `vm fleet status NAME` asks the clouds). The state shown is derived from the members' records as
    `vm fleet status` last saw them."""
    from ..api.requests import FleetListRequest

    views.fleet_list(app.output, app.client().fleet_list(FleetListRequest(mine=mine)))


@fleet.command()
@click.argument("name", shell_complete=completes("fleets"))
@click.option("--watch", "-w", is_flag=True,
              help="Refresh until the fleet is settled: in place on a terminal, else each change once.")
@click.option("--interval", type=SECONDS, metavar="SECONDS", help="Seconds between refreshes with --watch (default 2).")
@with_app
def status(app: App, name: str, watch: bool, interval: float | None) -> None:
    """A fleet's VMs, providers, states, reservations and $/h, refreshed from the clouds; its state follows
    from what was seen (members gone outside vm are missing). With --watch, again every --interval seconds
    until no member is creating or terminating and the fleet is active, degraded, failed, stopped or gone."""
    from ..api.requests import FleetNameRequest

    if interval is not None and not watch:
        raise UsageError("--interval only applies with --watch",
                         suggestion=Hint.run("fleet", "status", name, "--watch"))
    if watch:
        from .fleet_live import live_status

        last = live_status(app, name, 2.0 if interval is None else interval)
        if last is not None:
            app.conclude(last)
        return
    report = app.client().fleet_status(FleetNameRequest(name))
    views.fleet_view(app.output, report)
    app.conclude(report)


@fleet.command()
@click.argument("name", shell_complete=completes("fleets"))
@timeout_option()
@yes_option
@with_app
def destroy(app: App, name: str, timeout: float, yes: bool) -> None:
    """Destroy every VM of a fleet (also ones it created but never recorded, if they carry its id). VMs that
    only look like the fleet's are left alone and listed. Safe to re-run."""
    from ..api.requests import FleetDestroyRequest

    report = app.client().fleet_destroy(FleetDestroyRequest(name, timeout=timeout), confirm=app.confirmer(yes=yes))
    if report.found or app.output.json:
        views.destroyed(app.output, report)
    app.conclude(report)


@fleet.command()
@click.argument("name", shell_complete=completes("fleets"))
@click.option("--dry-run", is_flag=True, help="Say what would be adopted, destroyed or marked, and change nothing.")
@timeout_option()
@with_app
def reconcile(app: App, name: str, dry_run: bool, timeout: float) -> None:
    """Make the store match the clouds: adopt or destroy VMs that carry the fleet's id, mark missing members,
    fix the state. VMs that only look like the fleet's are left alone and listed."""
    from ..api.requests import FleetReconcileRequest

    report = app.client().fleet_reconcile(FleetReconcileRequest(name, dry_run=dry_run, timeout=timeout))
    views.fleet_view(app.output, report)
    app.conclude(report)


@fleet.command()
@click.argument("name", shell_complete=completes("fleets"))
@with_app
def forget(app: App, name: str) -> None:
    """Remove a fleet's record without touching any VM; prints every VM it leaves running."""
    from ..api.requests import FleetNameRequest

    views.forgotten(app.output, app.client().fleet_forget(FleetNameRequest(name)))


fleet.add_command(fleet_ssh)
fleet.add_command(scale)
fleet.add_command(repair)
fleet.add_command(reap)
fleet.add_command(power.stop)
fleet.add_command(power.start)
fleet.add_command(maintain_command)
