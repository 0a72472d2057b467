"""One polling loop with a deadline, for every wait that has no operation of its own to block on."""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar

T = TypeVar("T")


class Policy(Protocol):
    """An SDK's backoff policy (RetryPolicy, PollPolicy): a dataclass with `initial` and `maximum` seconds."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def initial(self) -> float: ...

    @property
    def maximum(self) -> float: ...


P = TypeVar("P", bound=Policy)


def scaled(policy: P, factor: float) -> P:
    """`policy` with its `initial` and `maximum` multiplied by `factor` (a plugin's `time_scale`)."""
    return dataclasses.replace(policy, initial=policy.initial * factor, maximum=policy.maximum * factor)


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delays between polls: `initial`, multiplied by `factor` after each poll, at most `maximum` (seconds)."""

    initial: float
    maximum: float
    factor: float = 2.0

    def delays(self) -> Iterator[float]:
        return (min(self.maximum, self.initial * self.factor ** n) for n in itertools.count())


def poll_until(check: Callable[[], tuple[bool, T]], timeout: float, interval: Backoff, *,
               on_timeout: Callable[[], Exception], tolerate: tuple[type[Exception], ...] = (),
               sleep: Callable[[float], None] | None = None) -> T:
    """Call `check` until it says (True, result), then return the result; never sleep past the deadline
    (`timeout` seconds from now), where `on_timeout()` is raised. `check` is called at least once. An exception
    of a `tolerate` class counts as "not finished" (a failed read says nothing about the action); any other
    propagates. `sleep` defaults to time.sleep."""
    pause = sleep or time.sleep
    deadline = time.monotonic() + timeout
    delays = interval.delays()
    while True:
        try:
            finished, result = check()
        except tolerate:
            finished = False
        if finished:
            return result
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise on_timeout()
        pause(min(next(delays), remaining))
