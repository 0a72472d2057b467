"""`vm stop`, `vm start`, `vm reboot` and `vm destroy`: one action on one or several VMs of a provider
(vm_core.api: Client.stop, start, reboot, destroy; what is decided before acting: vm_core/lifecycle.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import click

from . import views
from .app import App, completes, provider_option, wait_options, with_app, yes_option

F = TypeVar("F", bound=Callable[..., Any])
ids_argument = click.argument("instance_ids", metavar="ID...", nargs=-1, required=True,
                              shell_complete=completes("instance_ids"))


def _lifecycle(fn: F) -> F:
    command: Callable[..., Any] = fn
    for decorator in (with_app, wait_options, provider_option(), ids_argument):
        command = decorator(command)
    return cast(F, command)


def _act(app: App, verb: str, instance_ids: tuple[str, ...], provider: str, no_wait: bool, timeout: float, *,
         strict: bool = False, hard: bool = False) -> None:
    from ..api.requests import ActionRequest

    request = ActionRequest(provider, instance_ids, no_wait=no_wait, timeout=timeout, strict=strict, hard=hard)
    client = app.client()
    report = {"stop": client.stop, "start": client.start, "reboot": client.reboot}[verb](request)
    views.acted(app.output, report)
    app.conclude(report)


@click.command()
@_lifecycle
def stop(app: App, instance_ids: tuple[str, ...], provider: str, no_wait: bool, timeout: float) -> None:
    """Stop VMs; they keep their disks and can be started again. A stopped VM is left as it is.

    \b
    vm stop 3f0c6a1e-2b4d-4c8e-9a7f-1d2e3f4a5b6c --provider crusoe
    """
    _act(app, "stop", instance_ids, provider, no_wait, timeout)


@click.command()
@click.option("--strict", is_flag=True,
              help="Start only onto reserved capacity: refuse (exit 6) rather than fall back to on-demand.")
@_lifecycle
def start(app: App, instance_ids: tuple[str, ...], provider: str, no_wait: bool, timeout: float,
          strict: bool) -> None:
    """Start stopped VMs. A running VM is left as it is ("already running").

    A VM whose reservation has no room any more starts on-demand: vm says so, with the new price. With --strict
    (providers that can tell beforehand) it is not started instead.

    \b
    vm start computeinstance-e00hf93cfnsgaxygn3 --provider nebius
    vm start 3f0c6a1e-2b4d-4c8e-9a7f-1d2e3f4a5b6c --provider crusoe --strict
    """
    _act(app, "start", instance_ids, provider, no_wait, timeout, strict=strict)


@click.command()
@click.option("--hard", is_flag=True, help="Reset instead of a guest reboot, where the provider has both.")
@_lifecycle
def reboot(app: App, instance_ids: tuple[str, ...], provider: str, no_wait: bool, timeout: float,
           hard: bool) -> None:
    """Reboot VMs (how each provider does it: `vm providers` and the README).

    \b
    vm reboot 0920582c7ff041399e34823a0be62549 --provider lambda
    """
    _act(app, "reboot", instance_ids, provider, no_wait, timeout, hard=hard)


@click.command()
@yes_option
@_lifecycle
def destroy(app: App, instance_ids: tuple[str, ...], provider: str, no_wait: bool, timeout: float,
            yes: bool) -> None:
    """Destroy VMs. A VM that is already gone (or never existed) counts as destroyed; with several, the others
    go on past a failure. On a terminal, vm first lists what goes with its $/h and asks (-y skips that).

    \b
    vm destroy 3f0c6a1e-2b4d-4c8e-9a7f-1d2e3f4a5b6c --provider crusoe
    vm destroy 3f0c6a1e-2b4d-4c8e-9a7f-1d2e3f4a5b6c 6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d -p crusoe --yes
    """
    from ..api.requests import ActionRequest
    from .complete import forget

    request = ActionRequest(provider, instance_ids, no_wait=no_wait, timeout=timeout)
    report = app.client().destroy(request, confirm=app.confirmer(yes=yes))
    session = app.session()
    forget(session.paths.state_dir, session.profile.name, provider, [g.instance_id for g in report.gone])
    views.destroyed(app.output, report)
    app.conclude(report)
