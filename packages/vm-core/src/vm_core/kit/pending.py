"""Pending building blocks: one over an SDK operation, one polling a resource where the cloud has no operation,
and one for an action already finished.

All satisfy vm_core.provider.Pending; `Noted` wraps one to give it a `note`. `OperationPending` and `Noted` are
also `Completes`: a create's result made from its VM as a fleet's read of many VMs shows it running.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Generic, Protocol, TypeVar

from ..errors import VmError
from ..model import Instance
from ..provider import Completes, Pending
from .polling import Backoff, poll_until

T = TypeVar("T")
R = TypeVar("R")


class Operation(Protocol):
    """What `OperationPending` needs of an SDK operation."""

    def done(self) -> bool: ...


class _OnResource:
    """The `id` and `resource_id` every Pending has (and a repr naming them)."""

    _id: str
    _resource_id: str

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._id} on {self._resource_id}>"

    @property
    def id(self) -> str:
        return self._id

    @property
    def resource_id(self) -> str:
        return self._resource_id


class OperationPending(_OnResource, Generic[T]):
    """A Pending over one SDK operation; every call runs inside `errors()` (the adapter's error translation).

    `wait(timeout)` calls `block(timeout)` (the SDK's wait, which raises on failure or timeout) and gives its
    answer to `finish` for the Pending's result. When `block` raises a VmError, `failed(error, deadline)` (if
    given) runs first, and the error it returns is raised (chained to the original when it is another one):
    this is where an adapter cleans up after a failed create.
    """

    def __init__(self, operation: Operation, errors: Callable[[], AbstractContextManager[None]], *,
                 id: str, resource_id: str, block: Callable[[float], Any], finish: Callable[[Any], T],
                 failed: Callable[[VmError, float], VmError] | None = None) -> None:
        self.operation = operation
        self._errors = errors
        self._id = id
        self._resource_id = resource_id
        self._block = block
        self._finish = finish
        self._failed = failed

    def done(self) -> bool:
        with self._errors():
            return bool(self.operation.done())

    def completed(self, instance: Instance, timeout: float) -> Instance | None:
        """A create's running VM as read is its result (Completes): no call."""
        return instance

    def wait(self, timeout: float) -> T:
        deadline = time.monotonic() + timeout
        try:
            with self._errors():
                answer = self._block(timeout)
        except VmError as error:
            replacement = error if self._failed is None else self._failed(error, deadline)
            if replacement is error:
                raise
            raise replacement from error
        with self._errors():
            return self._finish(answer)


class Finished(_OnResource, Generic[T]):
    """An action that had finished when it was asked for (a delete of a VM already gone): `done()` is True and
    `wait` returns `value` at once. `id` and `resource_id` are the resource's id."""

    def __init__(self, resource_id: str, value: T) -> None:
        self._id = self._resource_id = resource_id
        self._value = value

    def done(self) -> bool:
        return True

    def wait(self, timeout: float) -> T:
        return self._value


class PolledPending(_OnResource, Generic[T]):
    """An action the cloud has no operation for, followed by reading the resource: `probe()` says (finished,
    result). `done()` is one probe; `wait` polls with `interval` until finished, counting an exception of a
    `tolerate` class as "not finished", and raises `on_timeout(timeout)` at the deadline (the action goes on).
    `id` and `resource_id` are the resource's id."""

    def __init__(self, resource_id: str, probe: Callable[[], tuple[bool, T]], interval: Backoff, *,
                 on_timeout: Callable[[float], Exception], tolerate: tuple[type[Exception], ...] = ()) -> None:
        self._id = self._resource_id = resource_id
        self._probe = probe
        self._interval = interval
        self._on_timeout = on_timeout
        self._tolerate = tolerate

    def done(self) -> bool:
        return self._probe()[0]

    def finished(self) -> bool:
        """One probe, where a tolerated failure counts as not finished."""
        try:
            return self._probe()[0]
        except self._tolerate:
            return False

    def wait(self, timeout: float) -> T:
        return poll_until(self._probe, timeout, self._interval, tolerate=self._tolerate,
                          on_timeout=lambda: self._on_timeout(timeout))


class Noted(_OnResource, Generic[T]):
    """A Pending whose `note` (the Explained protocol) is `explain(result)` once `wait` returned ("" until then);
    `explain` may raise instead, when the result is not what was asked for after all. `id` and `resource_id` are
    the wrapped Pending's."""

    def __init__(self, pending: Pending[T], explain: Callable[[T], str]) -> None:
        self._pending = pending
        self._id, self._resource_id = pending.id, pending.resource_id
        self._explain = explain
        self.note = ""

    def done(self) -> bool:
        return self._pending.done()

    def wait(self, timeout: float) -> T:
        result = self._pending.wait(timeout)
        self.note = self._explain(result)
        return result

    def completed(self, instance: Instance, timeout: float) -> Instance | None:
        """The wrapped Pending's result from its running VM (Completes; the VM as read when it is not one),
        explained as `wait` explains it; None when not complete yet."""
        pending = self._pending
        result = pending.completed(instance, timeout) if isinstance(pending, Completes) else instance
        if result is not None:
            self.note = self._explain(result)  # type: ignore[arg-type]  # a create's Noted: T is Instance
        return result
