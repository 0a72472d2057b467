"""`Operation[T]`: a poller for one Crusoe asynchronous operation.

It follows the contract shared by the three SDKs of this repository (README "Operations, pagers, retries";
checked by tests/sdk_contract.py): `id`, `resource_id`, `done()`, `status()`, `wait(timeout) -> None`,
`result(timeout) -> T`, `continuation_token()` + `CrusoeClient.resume_operation(token)`, and
`Operation.finished(...)` for work that needed nothing done.

- `wait(timeout)` blocks until the operation is SUCCEEDED (returns None) or FAILED (raises the typed failure,
  as `result`); it never sleeps past its deadline (default `PollPolicy.timeout`) and then raises
  OperationTimeout. A poll in flight at the deadline may take up to `MIN_REQUEST_TIMEOUT` (1 s) more; polls
  never retry past the deadline.
- Polls back off exponentially with jitter, honour Retry-After, and survive transient errors (5xx, 429, lost
  connections): those are logged and polled again until the deadline.
- Stopping a wait (timeout, KeyboardInterrupt) never cancels the cloud operation; the operation can be resumed
  later, in any process, with `CrusoeClient.resume_operation(op.continuation_token())`.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import Generic, TypeVar

from . import errors
from ._backoff import PollPolicy
from .models import OperationRecord, OperationState

T = TypeVar("T")

log = logging.getLogger("crusoe_sdk")

TRANSIENT_POLL_ERRORS = (errors.RequestNotSent, errors.NoResponse, errors.RateLimited, errors.ServerError)

_UNSET = object()


class Operation(Generic[T]):
    """A handle on an operation: `.id`, `.done()`, `.status()`, `.wait(timeout)`, `.result(timeout)`,
    `.continuation_token()`."""

    def __init__(
        self,
        record: OperationRecord,
        *,
        project_id: str,
        refresh: Callable[[float | None], OperationRecord],
        resolve: Callable[[OperationRecord], T],
        fail: Callable[[OperationRecord], errors.OperationFailed],
        policy: PollPolicy,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self._record = record
        self.project_id = project_id
        self._refresh = refresh
        self._resolve = resolve
        self._fail = fail
        self._policy = policy
        self._clock = clock
        self._sleep = sleep
        self._rng = rng
        self._value: object = _UNSET

    @classmethod
    def finished(cls, resource_id: str, value: T, *, project_id: str = "") -> Operation[T]:
        """An operation that needed no work, e.g. deleting an instance that is already gone.

        Its `id` and `continuation_token()` are "" (there is nothing to resume), it is SUCCEEDED, `done()` is
        True and `wait()`/`result()` return at once without a request (`result()` returns `value`).
        """
        record = OperationRecord(
            operation_id="", state=OperationState.SUCCEEDED, metadata={"id": resource_id}
        )

        def unexpected(_: OperationRecord) -> errors.OperationFailed:
            raise AssertionError("a finished operation cannot fail")

        return cls(record, project_id=project_id, refresh=lambda _deadline: record, resolve=lambda _: value,
                   fail=unexpected, policy=PollPolicy())

    # ------------------------------------------------------------------------------------------ state
    @property
    def id(self) -> str:
        return self._record.operation_id

    @property
    def resource_id(self) -> str:
        """The id of the resource being changed (known as soon as the operation exists)."""
        return self._record.resource_id

    @property
    def record(self) -> OperationRecord:
        """The operation as last seen from the server (no request is made)."""
        return self._record

    @property
    def state(self) -> OperationState:
        return self._record.state

    def status(self) -> str:
        """"running", "succeeded" or "failed", as last seen (no request is made)."""
        if self.state is OperationState.SUCCEEDED:
            return "succeeded"
        return "failed" if self.state is OperationState.FAILED else "running"

    def continuation_token(self) -> str:
        """An opaque token for `CrusoeClient.resume_operation` ("" when there is nothing to resume)."""
        return f"{self.project_id}/{self.id}" if self.id else ""

    def __repr__(self) -> str:
        return f"Operation(id={self.id!r}, resource_id={self.resource_id!r}, state={self.state.value})"

    def done(self) -> bool:
        """True when SUCCEEDED or FAILED. Polls once (one request, no sleep) unless already known to be done.

        Raises the poll's error (after the transport's own retries), e.g. OperationUnavailable.
        """
        if not self.state.is_terminal:
            self._record = self._refresh(None)
        return self.state.is_terminal

    # ------------------------------------------------------------------------------------------ waiting
    def wait(self, timeout: float | None = None) -> None:
        """Block until done. Returns None on success; raises the typed failure of a FAILED operation (as
        `result`), OperationTimeout after `timeout` seconds (default: the poll policy's timeout), and any
        non-transient poll error (AuthError, OperationUnavailable...). `state`/`record` hold the final state.
        """
        if self._wait(timeout) is OperationState.FAILED:
            raise self._fail(self._record)

    def _wait(self, timeout: float | None) -> OperationState:
        limit = self._policy.timeout if timeout is None else timeout
        deadline = self._clock() + limit
        poll = 0
        while not self.state.is_terminal:
            poll += 1
            retry_after = self._poll_once(deadline)
            if self.state.is_terminal:
                break
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise errors.OperationTimeout(self.id, limit, self.state.value)
            self._sleep(min(self._policy.delay(poll, retry_after, self._rng), remaining))
        return self.state

    def result(self, timeout: float | None = None) -> T:
        """Wait (as `wait`) and return the resource; raise the typed error of a failed operation.

        Raises CapacityError (`out_of_stock`), QuotaError, OperationFailed, or OperationTimeout.
        """
        self.wait(timeout)
        if self._value is _UNSET:
            self._value = self._resolve(self._record)
        return self._value  # type: ignore[return-value]

    def _poll_once(self, deadline: float) -> float | None:
        """Refresh the record; on a transient error keep the old one and return the Retry-After hint.

        The deadline goes to the transport, which then neither retries nor waits past it.
        """
        try:
            self._record = self._refresh(deadline)
        except TRANSIENT_POLL_ERRORS as exc:
            log.debug("polling operation %s: transient %s, polling again", self.id, type(exc).__name__)
            return exc.retry_after if isinstance(exc, errors.RateLimited) else None
        return None
