"""What the fleet commands need around the engine, as data: the providers and strategy a fleet uses, running a
create, scale or repair so that it can be interrupted, and what a failed create leaves behind. Nothing here
prints; `warn` and `progress` callbacks carry the notes.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from ..errors import AuthError, CapacityError, StrategyError, Timeout, Transient, UsageError, VmError
from ..hints import Command, Hint
from ..provider import Provider
from .eligibility import Enforced, enforced
from .store import FleetRecord, FleetStore, MemberRecord

if TYPE_CHECKING:
    from ..session import Session
    from .create import FleetCreator
    from .naming import FleetIdentity

T = TypeVar("T")


def connect(session: Session, wanted: Sequence[str] | None,
            warn: Callable[[str], None]) -> dict[str, Provider]:
    """The providers a new fleet may use. Named ones must all connect (UsageError for an unknown name, before
    any state changes); without a list, every configured one that connects (`warn` says why another is not
    used); ConfigError when none is configured, UsageError when none connects."""
    if wanted is not None:
        for name in wanted:
            session.plugin(name)
        return {name: session.provider(name) for name in wanted}
    connected, failures = session.connect_each(session.selected(None))  # ConfigError: none is configured
    for name, error in failures:
        warn(f"{name} is not used: {error.message}")
    if not connected:
        raise UsageError("no configured provider connects", suggestion=Hint.say(
            "see {} and {}", Command.of("providers"), Command.of("config", "show")))
    return connected


def strategy_named(name: str) -> Enforced:
    """The strategy registered as `name`, named so (the engine enforces the rules on what it answers);
    UsageError naming the available ones when it is unknown or broken."""
    from ..plugins import STRATEGIES_GROUP, PluginSet

    plugins = PluginSet(STRATEGIES_GROUP, ("__call__",))
    strategy = plugins.get(name)
    if strategy is None:
        problem = next((p.reason for p in plugins.problems if p.name == name), None)
        known = ", ".join(plugins.names())
        raise UsageError(f"strategy {name!r} {'is broken: ' + problem if problem else 'is unknown'}; "
                         f"available: {known}")
    return enforced(strategy, name=name)


def fleet_strategy(store: FleetStore, record: FleetRecord) -> Enforced:
    """The strategy of a recorded fleet; a cluster fleet's new VMs go where its running members are
    (UsageError when none runs: there is no place to grow beside)."""
    from .cluster import pinned_to, place_of
    from .placement import Placement
    from .strategies import cheapest

    if record.placement is not Placement.CLUSTER:
        return strategy_named(record.strategy)
    place = place_of(store.members(record.name))
    if place is None:
        raise UsageError(f"fleet {record.name} was placed as a cluster and none of its VMs runs: there is no place "
                         "to put new ones beside them", suggestion=Hint.run("fleet", "destroy", record.name))
    return enforced(pinned_to(place, cheapest), name="cluster")


def run_interruptibly(creator: FleetCreator, run: Callable[[], T]) -> T:
    """Run `run` (a create, scale or repair by `creator`) in a worker so that Ctrl-C or SIGTERM can ask it to
    stop starting new VMs; the VMs already being created are still recorded. A second Ctrl-C leaves at once
    (the store knows everything).

    The worker signals its end with an Event rather than being joined: on CPython 3.11 a KeyboardInterrupt
    inside Thread.join() can leave is_alive() False while the thread still runs."""
    result: dict[str, T] = {}
    error: list[BaseException] = []
    finished = threading.Event()

    def work() -> None:
        try:
            result["report"] = run()
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            error.append(exc)
        finally:
            finished.set()

    worker = threading.Thread(target=work, name="fleet-create", daemon=True)
    previous = signal.signal(signal.SIGTERM, lambda *_: creator.stop.set())
    worker.start()
    try:
        _wait(finished, creator)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if error:
        raise error[0]
    return result["report"]


def _wait(finished: threading.Event, creator: FleetCreator) -> None:
    try:
        while not finished.is_set():
            finished.wait(0.2)
    except KeyboardInterrupt:
        creator.progress("interrupted: no new VMs are started; waiting for the calls in flight to be recorded")
        creator.stop.set()
        while not finished.is_set():
            finished.wait(0.2)


def failure_kind(errors: Sequence[VmError]) -> type[VmError]:
    """The error class a failed fleet exits with: Timeout, AuthError or Transient when every failure was of
    that kind, else CapacityError."""
    return next((k for k in (Timeout, AuthError, Transient) if errors and all(isinstance(e, k) for e in errors)),
                CapacityError)


def strategy_failed(store: FleetStore, identity: FleetIdentity, error: StrategyError) -> StrategyError:
    """The error of a create whose strategy failed (the engine followed every create in flight to its end before
    raising it: those VMs are recorded running or cleaned up). The fleet this create recorded
    (`identity`; none when it failed before) goes when none of its members may exist: no VM is left. Else it is
    left `interrupted`, every VM recorded, and the error says to destroy it."""
    from .lease import lease
    from .store import FleetState

    record = store.get_fleet(identity.fleet) if identity.fleet_id else None
    if record is None or record.fleet_id != identity.fleet_id:
        return error
    with lease(store, record.name, "fleet create"):
        if not any(m.state.may_exist for m in store.members(record.name)):
            store.delete_fleet(record.name)
            return error
        store.update_fleet(record.name, state=FleetState.INTERRUPTED, message=error.message)
    return StrategyError(f"{error.message}; fleet {record.name} keeps the VMs created before",
                         suggestion=Hint.run("fleet", "destroy", record.name))


def check_accounts(record: FleetRecord, providers: dict[str, Provider], profile: str) -> None:
    """ConfigError naming the first provider whose account differs from the one the fleet was created in
    (`profile`: the profile whose accounts `providers` are)."""
    from ..errors import ConfigError
    from .create import accounts

    current = accounts(providers)
    for provider, recorded in sorted(record.accounts.items()):
        now = current.get(provider, "")
        if recorded and now and now != recorded:
            raise ConfigError(
                f"fleet {record.name} was created in {provider} {recorded} (profile {record.profile or '?'}); "
                f"profile {profile} uses {provider} {now}: refusing to act on another account", provider=provider,
                suggestion=Hint.run("fleet", "status", record.name, "--profile", record.profile)
                if record.profile else None)


def forget(store: FleetStore, name: str) -> tuple[FleetRecord, list[MemberRecord]]:
    """Remove fleet `name`'s record under its lease, touching no VM: the record and the members it leaves that
    are, or may be, running. NotFound for an unknown fleet (also one removed meanwhile)."""
    from .destroy import recorded_fleet, removed_meanwhile
    from .lease import lease

    with removed_meanwhile(name), lease(store, name, "fleet forget"):
        record = recorded_fleet(store, name)
        left = [m for m in store.members(name) if m.state.may_run]
        store.delete_fleet(name)
    return record, left
