"""`Operation`: a handle on a `nebius.common.v1.Operation` that can be polled, waited for and resumed.

It is `cloud_sdk_core.Operation` (README "Operations, pagers, retries"; checked by tests/sdk_contract.py), with
`NebiusClient.resume_operation(token)` and `Operation.finished(value, resource_id=...)` for work that needed
nothing done (deleting a missing instance). An operation is complete when its `status` is set (Nebius API
README); a non-OK status is its typed error. Each poll is one `OperationService.Get` without call retries (the
wait polls again), its timeout cut to the wait's deadline; transient poll failures (UNAVAILABLE, rate limits,
per-call deadlines) are polled again until the deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import cloud_sdk_core

from . import _status, errors
from ._backoff import PollPolicy
from ._transport import is_transient

if TYPE_CHECKING:
    from ._pb.google.rpc import Status
    from ._pb.nebius.common.v1 import Operation as RawOperation

T = TypeVar("T")


class Operation(cloud_sdk_core.Operation[T]):
    """A long-running Nebius operation (create, start, stop, delete...). `wait`/`result` raise the typed
    `APIError` of a non-OK final status (e.g. `CapacityError` for RESOURCE_EXHAUSTED + NotEnoughResources).
    `refresh(id, per-call timeout, max attempts or None for the client's)` gets the operation; `result_of` makes
    the result of a successful one from its resource id."""

    def __init__(self, raw: RawOperation, *, refresh: Callable[[str, float, int | None], RawOperation],
                 result_of: Callable[[str], T], poll: PollPolicy, call_timeout: float, target: str = "") -> None:
        super().__init__(raw.id, raw.resource_id, poll)
        self._raw = raw
        self._get = refresh
        self._result_of = result_of
        self._call_timeout = call_timeout
        self._target = target

    def __repr__(self) -> str:
        state = "done" if self._is_done() else "running"
        return f"<Operation {self.id} {self.description!r} resource={self.resource_id} {state}>"

    @property
    def description(self) -> str:
        return self._raw.description

    @classmethod
    def finished(cls, value: T, *, resource_id: str = "", target: str = "") -> Operation[T]:
        """An operation that needed no work, e.g. deleting an instance that is already gone: status OK, and the
        "already finished" object of `cloud_sdk_core.Operation` (`result()` returns `value`, no RPC)."""
        from ._pb.google.rpc import Status
        from ._pb.nebius.common.v1 import Operation as RawOperation

        def unreachable(_id: str, _timeout: float, _attempts: int | None) -> RawOperation:
            raise AssertionError("a finished operation never polls")

        raw = RawOperation(id="", resource_id=resource_id, status=Status(code=0))
        return cls(raw, refresh=unreachable, result_of=lambda _resource_id: value, poll=PollPolicy(),
                   call_timeout=0.0, target=target)._already_finished(value)

    @property
    def raw(self) -> RawOperation:
        """The last `nebius.common.v1.Operation` message received."""
        return self._raw

    @property
    def rpc_status(self) -> Status | None:
        """The final `google.rpc.Status`, or None while the operation runs."""
        return self._raw.status

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
        self._raw = self._get(self.id, timeout or self._call_timeout, None)
        return self

    def _is_done(self) -> bool:
        return self._raw.status is not None

    def _failure(self) -> errors.APIError | None:
        return self.error()

    def _refresh(self, deadline: float | None) -> None:
        if deadline is None:
            self.refresh()
        elif (remaining := deadline - time.monotonic()) > 0:
            self._raw = self._get(self.id, min(self._call_timeout, remaining), 1)

    def _is_transient(self, error: Exception) -> bool:
        return isinstance(error, errors.NebiusError) and is_transient(error)

    def _timeout_error(self, timeout: float) -> errors.OperationTimeout:
        return errors.OperationTimeout(self.id, timeout)

    def _resolve(self) -> T:
        return self._result_of(self.resource_id)
