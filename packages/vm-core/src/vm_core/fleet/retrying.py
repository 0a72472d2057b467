"""Calls that are safe to send again, retried with backoff when the cloud failed transiently.

A delete is idempotent in every adapter: deleting a VM that is already being deleted, or already gone, is answered
as success (a finished Pending, or a Pending that the next read shows gone). A read changes nothing. So when such a
call fails with `Transient` (a 5xx, a rate limit, an answer lost on the way back although the action may have been
carried out), sending it again is always right, and giving up after one failure only hands the user an exit 7 and
a re-run that succeeds. Calls that are not idempotent (creates) are never retried here: create.py resolves those by
name.

The retries are bounded (`ATTEMPTS` calls, `BACKOFF` between them, longer when a rate limit says when to come
back), so a cloud that stays down still ends the command with the last error.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from typing import TypeVar

from ..errors import RateLimited, Transient, VmError
from ..kit.polling import Backoff

T = TypeVar("T")
A = TypeVar("A")

ATTEMPTS = 8  # calls in all, the first included
BACKOFF = Backoff(0.25, 8.0)  # seconds between them: 0.25, 0.5, 1, 2, 4, 8, 8 (about 24 s in all)
MAX_RETRY_AFTER = 60.0  # a rate limit's Retry-After is honoured up to this


def retried(call: Callable[[], T], *, attempts: int = ATTEMPTS, backoff: Backoff = BACKOFF,
            sleep: Callable[[float], None] = time.sleep) -> T:
    """`call()`, sent again after each `Transient` error, at most `attempts` times in all; returns its first
    answer. Raises the last Transient when every attempt failed, and any other error at once. Only for calls that
    are safe to repeat (deletes, reads)."""
    delays = backoff.delays()
    for _ in range(attempts - 1):
        try:
            return call()
        except Transient as exc:
            sleep(_delay(exc, next(delays)))
    return call()


def retried_answers(send: Callable[[list[str]], Mapping[str, A | VmError]], ids: Collection[str], *,
                    attempts: int = ATTEMPTS, backoff: Backoff = BACKOFF,
                    sleep: Callable[[float], None] = time.sleep) -> dict[str, A | VmError]:
    """`send(ids)` for a call that answers each id (a batched delete): the ids answered with a `Transient` error
    (or all of them, when the call itself raised one) are sent again, up to `attempts` calls in all. Each id is
    answered by its first answer that is not Transient, else by its last error (an id `send` never answers is
    left out, as `send` left it)."""
    answers: dict[str, A | VmError] = {}
    left = list(ids)
    delays = backoff.delays()
    for attempt in range(attempts):
        if not left:
            break
        try:
            answers.update(send(left))
        except VmError as exc:  # the call failed for every id it carried
            answers.update(dict.fromkeys(left, exc))
        left = [i for i in left if isinstance(answers.get(i), Transient)]
        if left and attempt < attempts - 1:
            error = answers[left[0]]
            sleep(_delay(error if isinstance(error, Transient) else None, next(delays)))
    return answers


def _delay(error: Transient | None, backoff: float) -> float:
    """The pause before the next attempt: the backoff, or a rate limit's Retry-After when that is longer."""
    after = error.retry_after if isinstance(error, RateLimited) else None
    return backoff if after is None else min(max(backoff, after), MAX_RETRY_AFTER)
