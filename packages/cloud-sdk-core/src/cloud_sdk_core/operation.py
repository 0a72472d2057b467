"""`Operation[T]`: a long-running operation of a cloud (modelled on azure-core's LROPoller and NoPolling): one set
of verbs, one resume call (the SDK client's `resume_operation(continuation_token())`, in any process), one
"already finished" object. A subclass brings what is native to its API through the hooks. Stopping a wait
(deadline, KeyboardInterrupt) never cancels the cloud operation.
"""

from __future__ import annotations

import abc
import logging
import random
import time
from collections.abc import Callable
from typing import Generic, Self, TypeVar, cast

from .policy import PollPolicy

T = TypeVar("T")


class Operation(abc.ABC, Generic[T]):
    """A long-running operation, as last read from its cloud (the subclass holds that state). `id` ("" for the
    already finished object) and `resource_id` (the resource being changed) are known as soon as it exists."""

    _transient: tuple[type[Exception], ...] = ()  # the poll errors that say nothing about the operation

    def __init__(self, id: str, resource_id: str, poll: PollPolicy, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, rng: random.Random | None = None) -> None:
        self.id = id
        self.resource_id = resource_id
        self._poll = poll
        self._clock = clock
        self._sleep = sleep
        self._rng = rng
        self._result: tuple[T] | None = None  # the result, once read (or given to `_already_finished`)

    # hooks: what is native to the cloud
    @abc.abstractmethod
    def _is_done(self) -> bool:
        """Whether the operation, as last read, is finished (no request)."""

    @abc.abstractmethod
    def _failure(self) -> Exception | None:
        """The typed error of the finished operation when it failed, None when it succeeded (no request)."""

    @abc.abstractmethod
    def _refresh(self, deadline: float | None) -> None:
        """Read the operation once, with the SDK's call retries but none past `deadline` (a `clock()` time; None
        when no wait is running) and keep what was read; raises the read's error."""

    def _is_transient(self, error: Exception) -> bool:
        """Whether a poll that failed with `error` says nothing about the operation (it is polled again)."""
        return isinstance(error, self._transient)

    @abc.abstractmethod
    def _timeout_error(self, timeout: float) -> Exception:
        """The error of a wait that reached its deadline after `timeout` seconds."""

    @abc.abstractmethod
    def _resolve(self) -> T:
        """The result of the succeeded operation (it may make a request)."""

    # the verbs
    def _already_finished(self, value: T) -> Self:
        """Make this the "already finished" object of work that needed nothing done; the subclass has set its
        state to succeeded and its `id` to "". `continuation_token()` is then "" (there is nothing to resume),
        `done()` is True, `status()` "succeeded", and `wait()`/`result()` return at once without a request
        (`result()` returns `value`)."""
        self._result = (value,)
        return self

    def continuation_token(self) -> str:
        """An opaque token for the SDK client's `resume_operation` ("" when there is nothing to resume)."""
        return self.id

    def status(self) -> str:
        """"running", "succeeded" or "failed", as last read (no request)."""
        if not self._is_done():
            return "running"
        return "succeeded" if self._failure() is None else "failed"

    def done(self) -> bool:
        """Whether the operation is finished. Reads it once (one request with the SDK's call retries, no sleep)
        unless it is already known to be finished; raises the error of that read."""
        if not self._is_done():
            self._refresh(None)
        return self._is_done()

    def wait(self, timeout: float | None = None) -> None:
        """Block until the operation is finished; return None when it succeeded. Raises the typed failure of a
        failed operation, the timeout error after `timeout` seconds (None: the poll policy's timeout: a wait
        always has a deadline), and any poll error that is not transient (e.g. an authentication error).

        Polls back off (`PollPolicy.delay`, exponential with jitter) and honour the `retry_after` seconds a poll's
        error may carry; a transient poll error is logged and polled again. The wait never sleeps past its
        deadline and gives it to each poll, which then neither retries nor waits past it."""
        limit = self._poll.timeout if timeout is None else timeout
        deadline = self._clock() + limit
        polls = 0
        while not self._is_done():
            retry_after = self._poll_once(deadline)
            if self._is_done():
                break
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise self._timeout_error(limit)
            polls += 1
            self._sleep(min(self._poll.delay(polls, retry_after, self._rng), remaining))
        failure = self._failure()
        if failure is not None:
            raise failure

    def result(self, timeout: float | None = None) -> T:
        """`wait(timeout)`, then the resulting resource (read once, then kept). Raises as `wait`."""
        self.wait(timeout)
        if self._result is None:
            self._result = (self._resolve(),)
        return self._result[0]

    def _poll_once(self, deadline: float) -> float | None:
        """Read the operation; on a transient error keep the last state and return its Retry-After, if any."""
        try:
            self._refresh(deadline)
        except Exception as exc:
            if not self._is_transient(exc):
                raise
            log = logging.getLogger(type(self).__module__.partition(".")[0])  # the SDK's own logger
            log.debug("polling operation %s: transient %s, polling again", self.id, type(exc).__name__)
            return cast("float | None", getattr(exc, "retry_after", None))
        return None
