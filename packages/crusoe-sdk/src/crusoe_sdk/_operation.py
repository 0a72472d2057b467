"""`Operation[T]`: a poller for one Crusoe asynchronous operation, on `cloud_sdk_core.Operation` (README
"Operations, pagers, retries"; checked by tests/sdk_contract.py). `wait`/`result` raise CapacityError
(`out_of_stock`), QuotaError or OperationFailed for a FAILED operation, and OperationTimeout at the deadline;
429, 5xx and lost connections while polling are polled again. A poll in flight at the deadline may take up to
`MIN_REQUEST_TIMEOUT` (1 s) more; polls never retry past the deadline.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import NoReturn, TypeVar

import cloud_sdk_core

from . import errors
from ._backoff import PollPolicy
from .models import OperationRecord, OperationState

T = TypeVar("T")


class Operation(cloud_sdk_core.Operation[T]):
    """A handle on an operation (`cloud_sdk_core.Operation`'s verbs); `.record` and `.state` as last seen."""

    _transient = (errors.RequestNotSent, errors.NoResponse, errors.RateLimited, errors.ServerError)

    def __init__(self, record: OperationRecord, *, project_id: str, refresh: Callable[[float | None], OperationRecord],
                 resolve: Callable[[OperationRecord], T], fail: Callable[[OperationRecord], errors.OperationFailed],
                 policy: PollPolicy, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, rng: random.Random | None = None) -> None:
        super().__init__(record.operation_id, record.resource_id, policy, clock=clock, sleep=sleep, rng=rng)
        self._record = record
        self.project_id = project_id
        self._read = refresh
        self._resolve_record = resolve
        self._fail = fail

    @classmethod
    def finished(cls, resource_id: str, value: T, *, project_id: str = "") -> Operation[T]:
        """An operation that needed no work, e.g. deleting an instance that is already gone: SUCCEEDED, and the
        "already finished" object of `cloud_sdk_core.Operation` (`result()` returns `value`)."""
        record = OperationRecord(operation_id="", state=OperationState.SUCCEEDED, metadata={"id": resource_id})
        return cls(record, project_id=project_id, refresh=_never, resolve=_never, fail=_never,
                   policy=PollPolicy())._already_finished(value)

    @property
    def record(self) -> OperationRecord:
        """The operation as last seen from the server (no request is made)."""
        return self._record

    @property
    def state(self) -> OperationState:
        return self._record.state

    def continuation_token(self) -> str:
        """An opaque token for `CrusoeClient.resume_operation` ("" when there is nothing to resume)."""
        return f"{self.project_id}/{self.id}" if self.id else ""

    def __repr__(self) -> str:
        return f"Operation(id={self.id!r}, resource_id={self.resource_id!r}, state={self.state.value})"

    def _is_done(self) -> bool:
        return self.state.is_terminal

    def _failure(self) -> errors.OperationFailed | None:
        return self._fail(self._record) if self.state is OperationState.FAILED else None

    def _refresh(self, deadline: float | None) -> None:
        self._record = self._read(deadline)

    def _timeout_error(self, timeout: float) -> errors.OperationTimeout:
        return errors.OperationTimeout(self.id, timeout, self.state.value)

    def _resolve(self) -> T:
        return self._resolve_record(self._record)


def _never(_: object) -> NoReturn:
    raise AssertionError("a finished operation never polls")
