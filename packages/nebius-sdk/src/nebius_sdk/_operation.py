"""`Operation`: a handle on a `nebius.common.v1.Operation` that can be polled, waited for and resumed.

An operation is complete when its `status` is set (Nebius API README). `wait()` polls `OperationService.Get`
with exponential backoff and jitter until then, always under a deadline, and raises the typed error of a
non-OK status. Stopping a wait (deadline, KeyboardInterrupt) never cancels the operation in the cloud: it can
be picked up later, in another process too, with `NebiusClient.resume_operation(op.continuation_token())`.

It follows the contract shared by the three SDKs of this repository (README "Operations, pagers, retries";
checked by tests/sdk_contract.py): `id`, `resource_id`, `done()`, `status()`, `wait(timeout) -> None`,
`result(timeout) -> T`, `continuation_token()` + `NebiusClient.resume_operation(token)`, and
`Operation.finished(value, resource_id=...)` for work that needed nothing done (deleting a missing instance).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

from . import _status, errors
from ._backoff import PollPolicy
from ._transport import is_transient

if TYPE_CHECKING:
    from ._pb.google.rpc import Status
    from ._pb.nebius.common.v1 import Operation as RawOperation

log = logging.getLogger("nebius_sdk")

T = TypeVar("T")

# Fetches the operation by id: (id, per-attempt timeout, max attempts or None for the client's default).
Refresh = Callable[[str, float, "int | None"], "RawOperation"]
# Produces the result of a successful operation from its resource id.
ResultOf = Callable[[str], T]


class Operation(Generic[T]):
    """A long-running Nebius operation (create, start, stop, delete...).

    `id` and `resource_id` are known at once (the instance id of a create is set before it finishes).
    """

    def __init__(
        self,
        raw: RawOperation,
        *,
        refresh: Refresh,
        result_of: ResultOf[T],
        poll: PollPolicy,
        call_timeout: float,
        target: str = "",
    ) -> None:
        self._raw = raw
        self._refresh = refresh
        self._result_of = result_of
        self._poll = poll
        self._call_timeout = call_timeout
        self._target = target

    def __repr__(self) -> str:
        state = "done" if self._is_done() else "running"
        return f"<Operation {self.id} {self.description!r} resource={self.resource_id} {state}>"

    @property
    def id(self) -> str:
        return self._raw.id

    @property
    def resource_id(self) -> str:
        return self._raw.resource_id

    @property
    def description(self) -> str:
        return self._raw.description

    @classmethod
    def finished(cls, value: T, *, resource_id: str = "", target: str = "") -> Operation[T]:
        """An operation that needed no work, e.g. deleting an instance that is already gone.

        Its `id` and `continuation_token()` are "" (there is nothing to resume), its status is OK, `done()` is
        True and `wait()`/`result()` return at once without an RPC (`result()` returns `value`).
        """
        from ._pb.google.rpc import Status
        from ._pb.nebius.common.v1 import Operation as RawOperation

        def unreachable(_id: str, _timeout: float, _attempts: int | None) -> RawOperation:
            raise AssertionError("a finished operation never polls")

        raw = RawOperation(id="", resource_id=resource_id, status=Status(code=0))
        return cls(raw, refresh=unreachable, result_of=lambda _resource_id: value, poll=PollPolicy(),
                   call_timeout=0.0, target=target)

    def continuation_token(self) -> str:
        """An opaque token for `NebiusClient.resume_operation` (the operation id; "" for `finished`)."""
        return self.id

    @property
    def raw(self) -> RawOperation:
        """The last `nebius.common.v1.Operation` message received."""
        return self._raw

    @property
    def rpc_status(self) -> Status | None:
        """The final `google.rpc.Status`, or None while the operation runs."""
        return self._raw.status

    def status(self) -> str:
        """"running", "succeeded" or "failed", as last seen (no RPC)."""
        if not self._is_done():
            return "running"
        return "succeeded" if self.successful() else "failed"

    def done(self) -> bool:
        """Whether the operation has finished. Polls once (blocking, one RPC) unless known to be done."""
        if not self._is_done():
            self.refresh()
        return self._is_done()

    def successful(self) -> bool:
        """Finished with status OK (no RPC; call `done()` or `wait()` first)."""
        status = self._raw.status  # set once done
        return status is not None and status.code == 0

    def error(self) -> errors.APIError | None:
        """The typed error of a finished, failed operation; None while running or on success (no RPC)."""
        if not self._is_done() or self.successful():
            return None
        status = self._raw.status
        assert status is not None  # done
        return _status.operation_error(status, operation_id=self.id, target=self._target)

    def refresh(self, timeout: float | None = None) -> Operation[T]:
        """Fetch the current state with one `OperationService.Get` (with the SDK's call retries)."""
        self._raw = self._refresh(self.id, timeout or self._call_timeout, None)
        return self

    def wait(self, timeout: float | None = None) -> None:
        """Block until the operation finishes successfully (returns None).

        Raises the typed `APIError` of a non-OK final status (e.g. `CapacityError` for RESOURCE_EXHAUSTED +
        NotEnoughResources), or `OperationTimeout` once `timeout` seconds have passed. Transient poll failures
        (UNAVAILABLE, rate limits, per-call deadlines) are retried until the deadline; other poll errors
        propagate.
        `timeout=None` means the default (30 min): a wait always has a deadline.
        """
        timeout = self._poll.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        polls = 0
        while not self._is_done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise errors.OperationTimeout(self.id, timeout)
            polls += 1
            time.sleep(min(self._poll.delay(polls), remaining))
            self._poll_once(deadline)
        failure = self.error()
        if failure is not None:
            raise failure

    def result(self, timeout: float | None = None) -> T:
        """`wait(timeout)`, then the resulting resource (the instance, None for a delete). Raises as wait."""
        self.wait(timeout)
        return self._result_of(self.resource_id)

    def _poll_once(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        try:
            self._raw = self._refresh(self.id, min(self._call_timeout, remaining), 1)
        except errors.NebiusError as exc:
            if not is_transient(exc):
                raise
            log.debug("poll of %s failed transiently (%s); will retry", self.id, type(exc).__name__)

    def _is_done(self) -> bool:
        return self._raw.status is not None
