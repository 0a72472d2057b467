"""`vm stop`, `vm start`, `vm reboot` and `vm destroy`: one action on one or several VMs of a provider.

Whether a provider can stop or reboot is asked of the provider itself (isinstance on the capability protocols),
never decided by its name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ..errors import Unsupported
from ..model import Instance
from ..provider import Pending, Provider, SupportsReboot, SupportsStopStart
from . import validate, views
from .app import App, common_options, pass_app, provider_option, wait_options
from .running import accepted_only, perform

ids_argument = click.argument("instance_ids", metavar="ID...", nargs=-1, required=True)


def _lifecycle(fn: Callable[..., Any]) -> Callable[..., Any]:
    for decorator in (pass_app, common_options, wait_options, provider_option(), ids_argument):
        fn = decorator(fn)
    return fn


@click.command()
@_lifecycle
def stop(app: App, instance_ids: tuple[str, ...], provider: str, no_wait: bool, timeout: float) -> None:
    """Stop VMs; they keep their disks and can be started again.

    \b
    vm stop 3f0c6a1e-2b4d-4c8e-9a7f-1d2e3f4a5b6c --provider crusoe
    """
    target, ids = _target(app, provider, instance_ids)
    _run(app, target, "stop", _stop_start(app, target, ids).begin_stop, ids, no_wait, timeout)


@click.command()
@_lifecycle
def start(app: App, instance_ids: tuple[str, ...], provider: str, no_wait: bool, timeout: float) -> None:
    """Start stopped VMs.

    \b
    vm start computeinstance-e00hf93cfnsgaxygn3 --provider nebius
    """
    target, ids = _target(app, provider, instance_ids)
    _run(app, target, "start", _stop_start(app, target, ids).begin_start, ids, no_wait, timeout)


@click.command()
@click.option("--hard", is_flag=True, help="Reset instead of a guest reboot, where the provider has both.")
@_lifecycle
def reboot(app: App, instance_ids: tuple[str, ...], provider: str, no_wait: bool, timeout: float,
           hard: bool) -> None:
    """Reboot VMs.

    \b
    vm reboot 0920582c7ff041399e34823a0be62549 --provider lambda
    """
    target, ids = _target(app, provider, instance_ids)
    if not isinstance(target, SupportsReboot):
        raise Unsupported(f"{_title(app, provider)} cannot reboot instances", provider=provider,
                          suggestion=f"vm stop / vm start, or vm destroy {ids[0]} --provider {provider}")
    _run(app, target, "reboot", lambda i: target.begin_reboot(i, hard=hard), ids, no_wait, timeout)


@click.command()
@_lifecycle
def destroy(app: App, instance_ids: tuple[str, ...], provider: str, no_wait: bool, timeout: float) -> None:
    """Destroy VMs. A VM that is already gone counts as destroyed; with several, the others go on past a failure.

    \b
    vm destroy 3f0c6a1e-2b4d-4c8e-9a7f-1d2e3f4a5b6c --provider crusoe
    """
    target, ids = _target(app, provider, instance_ids)
    outcomes = perform(app, target, "destroy", target.begin_destroy, ids, no_wait=no_wait, timeout=timeout)
    done = [o for o in outcomes if not o.error]
    if done and no_wait:
        views.accepted(app.output, accepted_only(done), single=len(ids) == 1)
    elif done:
        views.destroyed(app.output, provider, [o.key for o in done], single=len(ids) == 1)
    app.finish([(o.key, o.error) for o in outcomes if o.error], len(ids), "VMs")


def _target(app: App, provider: str, instance_ids: tuple[str, ...]) -> tuple[Provider, list[str]]:
    """The connected provider and the checked ids (UsageError before any API call)."""
    session = app.session()
    plugin = session.plugin(provider)
    ids = list(dict.fromkeys(validate.instance_id(plugin, provider, i) for i in instance_ids))
    return session.provider(provider), ids


def _stop_start(app: App, target: Provider, ids: list[str]) -> SupportsStopStart:
    if isinstance(target, SupportsStopStart):
        return target
    title = _title(app, target.name)
    raise Unsupported(f"{title} has no stop/start: instances can only be terminated", provider=target.name,
                      suggestion=f"keep it running, reboot it (vm reboot {ids[0]} --provider {target.name}) or"
                                 f" destroy it (vm destroy {ids[0]} --provider {target.name})")


def _title(app: App, provider: str) -> str:
    return getattr(app.session().plugin(provider), "title", provider)


def _run(app: App, target: Provider, verb: str, begin: Callable[[str], Pending[Instance]], ids: list[str],
         no_wait: bool, timeout: float) -> None:
    outcomes = perform(app, target, verb, begin, ids, no_wait=no_wait, timeout=timeout)
    done = [o.value for o in outcomes if not o.error]
    if done and no_wait:
        views.accepted(app.output, accepted_only(outcomes), single=len(ids) == 1)
    elif done:
        views.instances(app.output, done, single=len(ids) == 1)
    app.finish([(o.key, o.error) for o in outcomes if o.error], len(ids), "VMs")
