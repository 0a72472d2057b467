"""Hints most adapters give, as data (vm_core.hints; the CLI spells them): how to follow an action that goes on in
the cloud after a wait gave up on it."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import Timeout
from ..hints import Command, Hint


def follow(provider: str, instance_id: str | None = None) -> Command:
    """`vm get ID --provider P`, or `vm list --provider P` when the action's instance is not known."""
    if instance_id:
        return Command.of("get", instance_id, "--provider", provider)
    return Command.of("list", "--provider", provider)


def still_running(message: str, *, provider: str, instance_id: str | None = None, after: str = "") -> Timeout:
    """The Timeout of an action that continues in the cloud, hinting "follow it with `vm get ID --provider P`"
    (`vm list` without an instance), then `after`."""
    return Timeout(message, provider=provider,
                   suggestion=Hint.say("follow it with {}" + after, follow(provider, instance_id)))


def gave_up(action: str, *, provider: str, instance_id: str) -> Callable[[float], Timeout]:
    """The `on_timeout` of a PolledPending: the Timeout "`action` has not finished after Ns; it continues in the
    cloud", hinting how to follow it."""
    return lambda timeout: still_running(f"{action} has not finished after {timeout:g}s; it continues in the cloud",
                                         provider=provider, instance_id=instance_id)
