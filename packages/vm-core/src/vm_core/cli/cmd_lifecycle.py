"""`vm stop`, `vm start`, `vm reboot` and `vm destroy`: one action on one or several VMs of a provider (what is
decided before acting: vm_core/lifecycle.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ..hints import Hint
from ..model import Instance, InstanceState
from ..provider import Pending, Provider
from . import validate, views
from .app import App, completes, confirm_destroy, provider_option, wait_options, with_app, yes_option
from .running import accepted_only, perform

ids_argument = click.argument("instance_ids", metavar="ID...", nargs=-1, required=True,
                              shell_complete=completes("instance_ids"))


def _lifecycle(fn: Callable[..., Any]) -> Callable[..., Any]:
    for decorator in (with_app, wait_options, provider_option(), ids_argument):
        fn = decorator(fn)
    return fn


@click.command()
@_lifecycle
def stop(app: App, instance_ids: tuple[str, ...], provider: str, no_wait: bool, timeout: float) -> None:
    """Stop VMs; they keep their disks and can be started again. A stopped VM is left as it is.

    \b
    vm stop 3f0c6a1e-2b4d-4c8e-9a7f-1d2e3f4a5b6c --provider crusoe
    """
    from ..lifecycle import stop_start

    target, ids = _target(app, provider, instance_ids)
    begin = stop_start(target, _title(app, provider), ids).begin_stop
    _run(app, target, "stop", begin, ids, no_wait, timeout, already=InstanceState.STOPPED)


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
    from ..lifecycle import stop_start, strict_start

    target, ids = _target(app, provider, instance_ids)
    begin: Callable[[str], Pending[Instance]] = stop_start(target, _title(app, provider), ids).begin_start
    if strict:
        begin = strict_start(target, _title(app, provider), ids)
    _run(app, target, "start", begin, ids, no_wait, timeout, already=InstanceState.RUNNING)


@click.command()
@click.option("--hard", is_flag=True, help="Reset instead of a guest reboot, where the provider has both.")
@_lifecycle
def reboot(app: App, instance_ids: tuple[str, ...], provider: str, no_wait: bool, timeout: float,
           hard: bool) -> None:
    """Reboot VMs (how each provider does it: `vm providers` and the README).

    \b
    vm reboot 0920582c7ff041399e34823a0be62549 --provider lambda
    """
    from ..lifecycle import reboot as rebooting

    target, ids = _target(app, provider, instance_ids)
    _run(app, target, "reboot", rebooting(target, _title(app, provider), ids, hard=hard), ids, no_wait, timeout)


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
    from ..lifecycle import gone_note, look_up, name_of, shown

    target, ids = _target(app, provider, instance_ids)
    found = look_up(target, ids)
    notes = {i: note for i in ids if (note := gone_note(found[i]))}  # nothing to send for these
    live = [i for i in ids if i not in notes]
    confirm_destroy(app, [shown(found[i], provider, i) for i in live], yes=yes,
                    again=Hint.run("destroy", *live, "--provider", provider, "--yes"))
    for vm_id, note in notes.items():
        app.output.progress(f"{provider}: {vm_id}: {note}")
    outcomes = perform(app, target, "destroy", target.begin_destroy, live, no_wait=no_wait, timeout=timeout,
                       label=lambda i: name_of(found[i]))
    done = {o.key for o in outcomes if not o.error}
    from .complete import forget

    forget(app.session().paths.state_dir, app.session().profile.name, provider, {*done, *notes})
    if no_wait and done:
        views.accepted(app.output, accepted_only(outcomes), single=len(ids) == 1)
    elif done or notes:
        views.destroyed(app.output, provider, [(i, name_of(found[i]), notes.get(i, "")) for i in ids
                                               if i in notes or i in done], single=len(ids) == 1)
    app.finish([(o.key, o.error) for o in outcomes if o.error], len(ids), "VMs")


def _target(app: App, provider: str, instance_ids: tuple[str, ...]) -> tuple[Provider, list[str]]:
    """The connected provider and the checked ids (UsageError before any API call)."""
    session = app.session()
    plugin = session.plugin(provider)
    ids = list(dict.fromkeys(validate.instance_id(plugin, provider, i) for i in instance_ids))
    return session.provider(provider), ids


def _title(app: App, provider: str) -> str:
    return getattr(app.session().plugin(provider), "title", provider)


def _run(app: App, target: Provider, verb: str, begin: Callable[[str], Pending[Instance]], ids: list[str],
         no_wait: bool, timeout: float, already: InstanceState | None = None) -> None:
    """`verb` on every id (each looked up first, for its name); a VM already in state `already` is left as it is
    and reported with the others ("already running"). A VM that does not exist fails with NotFound (exit 3)."""
    from ..lifecycle import look_up, name_of, triage

    found = look_up(target, ids)
    sorted_ = triage(found, ids, already)
    for instance in sorted_.settled:
        app.output.progress(f"{target.name}: {instance.name or instance.id}: already {already}")
    outcomes = perform(app, target, verb, begin, sorted_.todo, no_wait=no_wait, timeout=timeout,
                       label=lambda i: name_of(found[i]))
    done = [o.value for o in outcomes if isinstance(o.value, Instance)]  # waited for (also despite --no-wait)
    if accepted := accepted_only(outcomes):
        views.accepted(app.output, accepted, single=len(ids) == 1)
    elif done or sorted_.settled:
        by_id = {i.id: i for i in [*sorted_.settled, *done]}
        views.instances(app.output, [by_id[i] for i in ids if i in by_id], single=len(ids) == 1)
    app.finish(sorted_.missing + [(o.key, o.error) for o in outcomes if o.error], len(ids), "VMs")
