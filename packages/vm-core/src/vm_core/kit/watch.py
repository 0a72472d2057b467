"""Following many pending creates with one read of the cloud per round (vm_core.provider.SupportsCreateWatch)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from ..model import Instance, InstanceState
from ..provider import CreateRound, Pending

N = TypeVar("N")

# States a create never passes through on its way to running: the create has failed.
ENDED = frozenset(s for s in InstanceState if s.ends_a_create)  # `InstanceState.ends_a_create`, as a set


def create_round(pendings: Sequence[Pending[Instance]], own: type, read: Callable[[list[str]], Mapping[str, N]], *,
                 state: Callable[[N], InstanceState],
                 instances: Callable[[list[N]], list[Instance]]) -> CreateRound:
    """One round over `pendings`. The resource ids of the Pendings of class `own` (the provider's own) are read at
    once: `read(ids)` maps each id the cloud shows to its native VM (an exception, as a batch get answers an id it
    could not read, shows nothing). A VM whose `state` is RUNNING is running
    (`instances` converts all of those in one call, in order), one in ENDED has ended; ids the read does not
    show, and the Pendings of other classes, are absent (only their Pending can say how they end). Call it inside
    the adapter's error translation: `read` may raise SDK errors."""
    ids = list(dict.fromkeys(p.resource_id for p in pendings if isinstance(p, own)))
    wanted = set(ids)
    found = {i: native for i, native in read(ids).items() if i in wanted and not isinstance(native, Exception)}
    states = {i: state(native) for i, native in found.items()}
    up = [i for i, s in states.items() if s is InstanceState.RUNNING]
    running = dict(zip(up, instances([found[i] for i in up]), strict=True))
    ended = frozenset(i for i, s in states.items() if s in ENDED)
    foreign = {p.resource_id for p in pendings} - wanted
    return CreateRound(running, ended, frozenset((wanted - found.keys()) | foreign))
