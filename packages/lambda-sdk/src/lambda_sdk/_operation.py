"""The synthetic operation of a launch: Lambda returns an instance id at once and the instance then boots.

It is `cloud_sdk_core.Operation` (README "Operations, pagers, retries"; checked by tests/sdk_contract.py). Its id
is the instance id, so it is resumable anywhere: `client.resume_operation(instance_id)`. It is done when the
instance is active with an IP, or can no longer become so; `wait`/`result` raise OperationFailed when the
instance ends unhealthy, terminating, terminated, preempted or disappears, and OperationTimeout at the deadline.
A 404 before the instance was ever read, within `PollPolicy.visibility_grace` of the launch (or the resume), is
"not visible yet": polling goes on.
Waiting only reads; interrupting a wait (timeout, KeyboardInterrupt) never touches the instance.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import cloud_sdk_core

from . import errors
from ._policy import PollPolicy
from .models import FAILED_STATUSES, Instance, InstanceStatus

if TYPE_CHECKING:
    from .client import LambdaClient


class LaunchOperation(cloud_sdk_core.Operation[Instance]):
    """A launched instance on its way to `active` with an IP address."""

    # Poll failures that say nothing about the instance: keep polling until the deadline.
    _transient = (errors.ServerError, errors.RateLimited, errors.TransportError)

    def __init__(self, client: LambdaClient | None, instance_id: str, poll: PollPolicy) -> None:
        super().__init__(instance_id, instance_id, poll)
        self._client = client
        self.instance_id = instance_id
        self.instance: Instance | None = None  # the last snapshot read, None before the first poll
        self._gone = False  # the instance disappeared while being polled
        self._invisible_until = time.monotonic() + poll.visibility_grace  # a 404 before then: not visible yet

    @classmethod
    def finished(cls, instance: Instance) -> LaunchOperation:
        """A launch with nothing left to wait for: `instance` is already active (e.g. found running by name).
        It is the "already finished" object of `cloud_sdk_core.Operation`: `result()` returns `instance`."""
        if not (instance.status is InstanceStatus.ACTIVE and instance.ip):
            raise ValueError(f"instance {instance.id} is {instance.status.value}, not active with an IP")
        operation = cls(None, "", PollPolicy())
        operation.instance = instance
        operation.resource_id = instance.id
        return operation._already_finished(instance)

    def __repr__(self) -> str:
        status = self.instance.status.value if self.instance else "not polled"
        return f"LaunchOperation(instance_id={self.instance_id!r}, status={status!r})"

    def _is_done(self) -> bool:
        return self._gone or (self.instance is not None and _settled(self.instance))

    def _failure(self) -> errors.OperationFailed | None:
        if self._gone:
            return errors.OperationFailed(
                f"instance {self.instance_id} no longer exists", instance_id=self.instance_id, status=None
            )
        instance = self.instance
        assert instance is not None  # done and not gone
        if instance.status is InstanceStatus.ACTIVE:
            return None
        return errors.OperationFailed(
            f"instance {instance.id} ended {instance.status.value} instead of active",
            instance_id=instance.id, status=instance.status, instance=instance,
        )

    def _refresh(self, deadline: float | None) -> None:
        assert self._client is not None, "a finished operation never polls"
        try:
            self.instance = self._client._get_instance(self.instance_id, deadline=deadline)
        except errors.NotFound:
            if self.instance is None and time.monotonic() < self._invisible_until:
                return  # launched moments ago: Lambda may not show it yet
            self._gone = True

    def _timeout_error(self, timeout: float) -> errors.OperationTimeout:
        status = self.instance.status if self.instance else None
        return errors.OperationTimeout(
            f"instance {self.instance_id} not active after {timeout:g}s (last status: "
            f"{status.value if status else 'unknown'}); it keeps booting",
            instance_id=self.instance_id, timeout=timeout, last_status=status,
        )

    def _resolve(self) -> Instance:
        assert self.instance is not None  # wait returned: the instance is active
        return self.instance


def _settled(instance: Instance) -> bool:
    ready = instance.status is InstanceStatus.ACTIVE and bool(instance.ip)
    return ready or instance.status in FAILED_STATUSES
