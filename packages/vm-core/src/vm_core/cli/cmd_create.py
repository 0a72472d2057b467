"""`vm create` (vm_core.api: Client.create)."""

from __future__ import annotations

from pathlib import Path

import click

from ..hints import Hint
from . import views
from .app import App, Price, completes, provider_option, wait_options, with_app, yes_option
from .cmd_images import machine_from, machine_options
from .cmd_ssh import ssh_key_option


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
    from dataclasses import replace

    from ..api.requests import CreateRequest
    from .complete import remember

    request = CreateRequest(provider=provider, gpu=gpu, count=count, name=name, region=region,
                            reservation=reservation, strict=strict, spot=spot, max_price=max_price,
                            ssh_public_key=ssh_public_key, machine=machine_from(image, disk_size, startup_script),
                            no_wait=no_wait, timeout=timeout)
    asking = app.confirmer(yes=yes)
    again = Hint.run(*app.argv, "--yes")  # the very command line, to be run again without the question
    report = app.client().create(request, confirm=None if asking is None else
                                 lambda question: asking(replace(question, again=again)))
    session = app.session()
    remember(session.paths.state_dir, session.profile.name, provider, [(i.id, i.name) for i in report.instances],
             complete=False)
    views.acted(app.output, report)
    app.conclude(report)
