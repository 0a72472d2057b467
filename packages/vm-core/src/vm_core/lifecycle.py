"""What `vm stop | start | reboot | destroy` decide before acting, as data: each VM's current state, which VMs
need nothing done, and whether the provider can do the action at all.

Whether a provider can stop or reboot is asked of the provider itself (isinstance on the capability protocols),
never decided by its name. Nothing here prints; the CLI shows the results.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .calls import fan_out
from .errors import NotFound, Unsupported, VmError
from .hints import MARK, Command, Hint
from .model import Instance, InstanceState
from .provider import Pending, Provider, SupportsReboot, SupportsReservedStart, SupportsStopStart

NOT_FOUND_NOTE = "not found (treated as destroyed)"
ALREADY_GONE_NOTE = "already destroyed"

Found = Instance | VmError  # a VM as read, or the error reading it gave


def look_up(target: Provider, ids: Sequence[str]) -> dict[str, Found]:
    """Each id's instance (read concurrently), or the error reading it gave (NotFound when it does not exist)."""
    outcomes = fan_out(target.get_instance, ids)
    return {o.key: o.value if o.value is not None else o.error for o in outcomes}  # type: ignore[misc]


def name_of(found: Found) -> str:
    return found.name if isinstance(found, Instance) else ""


def gone_note(found: Found) -> str:
    """Why a destroy has nothing to send for this VM ("": it has)."""
    if isinstance(found, NotFound):
        return NOT_FOUND_NOTE
    if isinstance(found, Instance) and found.state is InstanceState.TERMINATED:
        return ALREADY_GONE_NOTE
    return ""


def shown(found: Found, provider: str, vm_id: str) -> Instance:
    """The instance to list before a destroy; one of unknown state when it could not be read."""
    if isinstance(found, Instance):
        return found
    return Instance(provider, vm_id, "", InstanceState.UNKNOWN, "", 0, "", "")


@dataclass
class Triage:
    """The ids of one action sorted: those that do not exist (`missing`, with their NotFound), those already in
    the state the action leads to (`settled`), and the rest, to act on (`todo`), in the order given."""

    missing: list[tuple[str, VmError]] = field(default_factory=list)
    settled: list[Instance] = field(default_factory=list)
    todo: list[str] = field(default_factory=list)


def triage(found: dict[str, Found], ids: Sequence[str], already: InstanceState | None) -> Triage:
    """Sort `ids` (read into `found`) for an action that leads to state `already` (None: every VM is acted on)."""
    sorted_ = Triage(missing=[(i, e) for i, e in found.items() if isinstance(e, NotFound)])
    sorted_.settled = [v for i in ids if isinstance(v := found[i], Instance) and already is not None
                       and v.state is already]
    skip = {i for i, _ in sorted_.missing} | {i.id for i in sorted_.settled}
    sorted_.todo = [i for i in ids if i not in skip]
    return sorted_


def stop_start(target: Provider, title: str, ids: Sequence[str]) -> SupportsStopStart:
    """`target` as a provider that can stop and start; Unsupported (suggesting reboot or destroy) otherwise."""
    if isinstance(target, SupportsStopStart):
        return target
    raise Unsupported(f"{title} has no stop/start: instances can only be terminated", provider=target.name,
                      suggestion=Hint.say("keep it running, reboot it ({}) or destroy it ({})",
                                          Command.of("reboot", ids[0], "--provider", target.name),
                                          Command.of("destroy", ids[0], "--provider", target.name)))


def strict_start(target: Provider, title: str, ids: Sequence[str]) -> Callable[[str], Pending[Instance]]:
    """The start that uses reserved capacity only; Unsupported when the provider cannot tell beforehand."""
    if not isinstance(target, SupportsReservedStart):
        raise Unsupported(f"{title} cannot tell before a start whether reserved capacity has room, so it cannot "
                          "start strictly", provider=target.name,
                          suggestion=Hint.run("start", *ids, "--provider", target.name))
    return target.begin_start_reserved


def reboot(target: Provider, title: str, ids: Sequence[str], *, hard: bool) -> Callable[[str], Pending[Any]]:
    """The reboot of one id; Unsupported when the provider cannot (suggesting stop && start where it can)."""
    if not isinstance(target, SupportsReboot):
        both = Hint(f"{MARK} && {MARK}", (Command.of("stop", ids[0], "--provider", target.name),
                                          Command.of("start", ids[0], "--provider", target.name)))
        raise Unsupported(f"{title} cannot reboot instances", provider=target.name,
                          suggestion=both if isinstance(target, SupportsStopStart) else None)
    return lambda i: target.begin_reboot(i, hard=hard)
