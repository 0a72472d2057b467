"""Running one action over several targets: concurrently, waiting or not, Ctrl-C aware."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..calls import Accepted, Outcome, Tracker, fan_out, start, wait
from ..provider import Pending, Provider, Staged

K = TypeVar("K")


def perform(provider: Provider, verb: str, begin: Callable[[K], Pending[Any]], keys: Sequence[K], *,
            no_wait: bool, timeout: float, progress: Callable[[str], None], warn: Callable[[str], None],
            label: Callable[[K], str] = lambda _: "",
            on_accepted: Callable[[Accepted], None] | None = None) -> list[Outcome[K, Any]]:
    """begin(key) for every key at once; then wait for each (saying so through `progress`) unless `no_wait`.

    Outcome values: Accepted with `no_wait`, else what the action's wait returns. An action that only its own
    polling can finish (Staged: a reboot done as stop + start) is waited for even with `no_wait`, saying so.
    `on_accepted` is called (from the action's thread) as soon as the cloud accepted each action.
    Ctrl-C raises Interrupted, saying which cloud actions go on and how to follow them."""
    tracker = Tracker()

    def one(key: K) -> Any:
        pending, accepted = start(provider, verb, lambda: begin(key), tracker, progress, label(key), on_accepted)
        if no_wait and isinstance(pending, Staged) and pending.must_wait:
            progress(f"{provider.name}: {label(key) or pending.resource_id}: waiting despite --no-wait: vm sends the"
                     " next step when this one has finished")
        elif no_wait:
            return accepted
        return wait(pending, provider, accepted, timeout=timeout, progress=progress, warn=warn)

    try:
        return fan_out(one, keys)
    except KeyboardInterrupt:
        raise tracker.interrupted([provider.name]) from None


def accepted_only(outcomes: Sequence[Outcome[Any, Any]]) -> list[Accepted]:
    return [o.value for o in outcomes if isinstance(o.value, Accepted)]
