"""`vm create`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from ..catalog import default_catalog
from ..errors import Unsupported, UsageError, VmError
from ..hints import MARK, Command, Hint
from ..machine import check as check_machine
from ..model import CreateSpec, Instance, ReservationMode
from ..provider import Provider, SupportsReservations, SupportsSpotPriceCap
from ..sshkeys import check_keys
from . import validate, views
from .app import App, Price, ask, completes, on_terminal, provider_option, wait_options, with_app, yes_option
from .cmd_images import machine_from, machine_options
from .cmd_ssh import ssh_key_option
from .running import accepted_only, perform


@click.command()
@provider_option()
@click.option("--gpu", required=True, metavar="TYPE[:N]", shell_complete=completes("gpus"),
              help="GPU type and GPUs per VM, e.g. H100:8; H100 alone means H100:1.")
@click.option("--count", "-n", type=int, default=1, show_default=True, help="How many VMs (1-64).")
@click.option("--name", help="VM name; NAME-1..NAME-N for several (default: vm-<6 hex>).")
@click.option("--region", help="Region (default: one with capacity).")
@click.option("--reservation", default="auto", show_default=True, metavar="auto|none|ID",
              help="Use reserved capacity: auto, none (on-demand only) or a reservation id.")
@click.option("--strict", is_flag=True, help="Fail rather than fall back to on-demand capacity.")
@click.option("--spot", is_flag=True, help="Preemptible VMs at the spot price (see `vm offers`; Nebius only).")
@click.option("--max-price", type=Price(), metavar="USD_PER_HOUR",
              help="With --spot: the most a VM may cost per hour; the cloud preempts it rather than charge more.")
@ssh_key_option
@machine_options
@yes_option
@wait_options
@with_app
def create(app: App, provider: str, gpu: str, count: int, name: str | None, region: str | None,
           reservation: str, strict: bool, spot: bool, max_price: float | None, ssh_public_key: str | None,
           image: str | None,
           disk_size: int | None, startup_script: Path | None, yes: bool, no_wait: bool, timeout: float) -> None:
    """Create COUNT VMs at once and wait until they run (progress on stderr).

    If some fail, the others are left running and listed (exit 7). On a reservation whose VMs the cloud will
    not delete through its API (Lambda), vm says so first and, on a terminal, asks (--yes skips the question).

    \b
    vm create --provider crusoe --gpu H100:8 --name train
    vm create --provider nebius --gpu H100 --count 3 --reservation none
    vm create --provider nebius --gpu H100 --spot
    vm create --provider nebius --gpu H100:8 --spot --max-price 12
    vm create --provider lambda --gpu H100 --reservation 9b2e4c6a8d0f41e3a5c7e9b1d3f5a7c9 --no-wait
    vm create --provider nebius --gpu H100 --ssh-key ~/.ssh/id_ed25519.pub
    vm create --provider nebius --gpu B200:8 --image ubuntu24.04-cuda13.0 --disk-size 500 --startup-script setup.sh
    """
    session = app.session()
    plugin = session.plugin(provider)
    machine = machine_from(image, disk_size, startup_script)
    specs = [replace(spec, ssh_public_key=ssh_public_key, machine=machine, spot_max_price=max_price)
             for spec in _specs(provider, gpu, count, name, region, reservation, strict, spot)]
    target = session.provider(provider)
    _check_price_cap(target, plugin.title, spot, max_price)
    check_machine(target, provider, specs[0].gpu, specs[0].gpu_count, specs[0].region, machine)
    check_keys(session, [provider], ssh_public_key, app.output.warn)
    if specs[0].region is not None:
        _check_region(target, specs[0])
    _confirm_unterminable(app, target, plugin.title, specs[0], len(specs), yes=yes)
    outcomes = perform(app, target, "create", target.begin_create, specs, no_wait=no_wait, timeout=timeout,
                       label=lambda spec: spec.name)
    created = [o.value for o in outcomes if isinstance(o.value, Instance)]
    from .complete import remember

    remember(session.paths.state_dir, session.profile.name, provider, [(i.id, i.name) for i in created],
             complete=False)
    if no_wait and (accepted := accepted_only(outcomes)):
        views.accepted(app.output, accepted, single=count == 1)
    elif created:
        views.instances(app.output, created, single=count == 1)
    failures = [(o.key.name, o.error) for o in outcomes if o.error]
    app.finish(failures, len(specs), "VMs", note=_left_running(provider, outcomes) if failures else None)


def _specs(provider: str, gpu: str, count: int, name: str | None, region: str | None,
           reservation: str, strict: bool, spot: bool = False) -> list[CreateSpec]:
    """The CreateSpecs of the command line; UsageError for any bad input."""
    request = validate.gpu(default_catalog(), provider, gpu)
    where = validate.region(provider, region)
    wanted = validate.reservation(reservation, strict, provider)
    return [CreateSpec(name=n, gpu=request.gpu, gpu_count=request.gpu_count, region=where, reservation=wanted,
                       spot=spot)
            for n in validate.names(name, validate.count(count))]


def _check_price_cap(target: Provider, title: str, spot: bool, max_price: float | None) -> None:
    """UsageError for --max-price without --spot, Unsupported where the cloud cannot cap spot prices (before any
    create call)."""
    if max_price is None:
        return
    if not spot:
        raise UsageError("--max-price caps the price of spot VMs: add --spot")
    if not isinstance(target, SupportsSpotPriceCap):
        raise Unsupported(f"{title} cannot cap spot prices", provider=target.name)


def _check_region(target: Provider, spec: CreateSpec) -> None:
    """UsageError (before any create call) when none of the provider's offers of the GPU is in spec.region."""
    wanted = f"{spec.gpu}:{spec.gpu_count}" if spec.gpu_count else spec.gpu
    assert spec.region is not None
    validate.offered_region(target.offers(spec.gpu, spec.gpu_count), target.name, wanted, spec.region)


def _confirm_unterminable(app: App, target: Provider, title: str, spec: CreateSpec, count: int, *,
                          yes: bool) -> None:
    """Before any create call: VMs asked on a reservation whose VMs the cloud will not delete through its API
    (`ReservationInfo.terminable` False: Lambda) are said on stderr, and on a terminal vm asks (default no:
    Cancelled, exit 1, nothing created; its hint is the same command with --yes). `yes`, or no terminal, skips
    the question: the reservation named by its id is the consent, as for fleets. A reservation listing that
    fails is said too, and asked about the same way, since vm cannot tell."""
    if spec.reservation.mode is not ReservationMode.ID or not isinstance(target, SupportsReservations):
        return
    wanted = spec.reservation.reservation_id
    try:
        listed = target.list_reservations()
    except VmError as exc:
        app.output.warn(f"cannot tell whether {target.name} can destroy VMs on reservation {wanted}: {exc.message}")
    else:
        found = next((r for r in listed if r.id == wanted), None)
        if found is None or found.terminable:
            return
        vms, bills = ("this VM", "it bills until it is") if count == 1 else (f"these {count} VMs",
                                                                            "they bill until they are")
        app.output.warn(f"{vms} on reservation {wanted} cannot be destroyed through {title}'s API: `vm destroy` "
                        f"will refuse, and {bills} terminated in {title}'s console or by its support")
    if yes or not on_terminal():
        return
    ask(f"Create {count} VM{'s' if count > 1 else ''} that vm cannot destroy?",
        again=Hint.run(*app.argv, "--yes"), undone="created")


def _left_running(provider: str, outcomes: list[Any]) -> Hint | None:
    made = [o.value for o in outcomes if o.value is not None]
    if not made:
        return None
    ids = [getattr(v, "id", None) or v.instance_id for v in made]
    return Hint.say(f"the {len(made)} VM(s) created are left running; destroy them with {MARK}",
                    Command.of("destroy", *ids, "--provider", provider, "--yes"))
