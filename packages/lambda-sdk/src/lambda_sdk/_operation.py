"""The synthetic operation of a launch: Lambda returns an instance id at once and the instance then boots.

It follows the contract shared by the three SDKs of this repository (README "Operations, pagers, retries";
checked by tests/sdk_contract.py): `id`, `resource_id`, `done()`, `status()`, `wait(timeout) -> None`,
`result(timeout) -> Instance`, `continuation_token()` + `LambdaClient.resume_operation(token)`, and
`LaunchOperation.finished(instance)` for a launch with nothing left to wait for.

The operation is the instance id, so it is resumable anywhere: `client.resume_operation(instance_id)`.
Waiting only reads; interrupting a wait (timeout, KeyboardInterrupt) never touches the instance.
"""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING

from . import errors
from ._policy import PollPolicy
from .models import FAILED_STATUSES, Instance, InstanceStatus

if TYPE_CHECKING:
    from .client import LambdaClient

# Poll failures that say nothing about the instance: keep polling until the deadline.
_TRANSIENT = (errors.ServerError, errors.RateLimited, errors.TransportError)


class LaunchOperation:
    """A launched instance on its way to `active` with an IP address."""

    def __init__(self, client: LambdaClient | None, instance_id: str, poll: PollPolicy) -> None:
        self._client = client
        self._poll = poll
        self._rng = random.Random()
        self.instance_id = instance_id
        self.instance: Instance | None = None  # the last snapshot read, None before the first poll
        self._gone = False  # the instance disappeared while being polled

    @classmethod
    def finished(cls, instance: Instance) -> LaunchOperation:
        """A launch with nothing left to wait for: `instance` is already active (e.g. found running by name).

        Its `id` and `continuation_token()` are "" (nothing to resume), `done()` is True, and `wait()`/`result()`
        return at once without a request (`result()` returns `instance`).
        """
        if not (instance.status is InstanceStatus.ACTIVE and instance.ip):
            raise ValueError(f"instance {instance.id} is {instance.status.value}, not active with an IP")
        operation = cls(None, "", PollPolicy())
        operation.instance = instance
        return operation

    @property
    def id(self) -> str:
        """The operation id, which is the instance id ("" for `finished`)."""
        return self.instance_id

    @property
    def resource_id(self) -> str:
        """The id of the launched instance."""
        return self.instance.id if self.instance is not None and not self.instance_id else self.instance_id

    def continuation_token(self) -> str:
        """An opaque token for `LambdaClient.resume_operation` (the instance id; "" for `finished`)."""
        return self.instance_id

    def status(self) -> str:
        """"running", "succeeded" (active with an IP) or "failed", as last read (no request is made)."""
        if self._gone or (self.instance is not None and self.instance.status in FAILED_STATUSES):
            return "failed"
        return "succeeded" if self.instance is not None and _settled(self.instance) else "running"

    def __repr__(self) -> str:
        status = self.instance.status.value if self.instance else "not polled"
        return f"LaunchOperation(instance_id={self.instance_id!r}, status={status!r})"

    def done(self) -> bool:
        """True when the instance is active with an IP, or can no longer become so. Reads the instance once
        (no waiting, no retry beyond the client's) unless that is already known.

        Raises the API or transport error of that one read.
        """
        if self._settled():
            return True
        try:
            self.instance = self._reader().get_instance(self.instance_id)
        except errors.NotFound:
            self._gone = True
        return self._settled()

    def wait(self, timeout: float | None = None) -> None:
        """Block until the instance is active with an IP (then `instance` holds it).

        Polls with exponential backoff and jitter (Retry-After wins); 5xx, 429 and connection failures are
        retried until the deadline. Raises OperationFailed when the instance ends unhealthy, terminating,
        terminated, preempted or disappears; OperationTimeout after `timeout` seconds (default `PollPolicy.timeout`,
        30 minutes; the instance keeps booting); any other API error (e.g. AuthError) at once.
        """
        timeout = self._poll.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        polls = 0
        while not self._settled():
            retry_after = self._poll_once(deadline)
            if self._settled():
                break
            polls += 1
            self._sleep_until_next(polls, retry_after, deadline, timeout)
        self._raise_unless_active()

    def result(self, timeout: float | None = None) -> Instance:
        """The active instance: `wait(timeout)`, then the last snapshot. Raises as `wait`."""
        self.wait(timeout)
        assert self.instance is not None  # wait returned: the instance is active
        return self.instance

    def _settled(self) -> bool:
        return self._gone or (self.instance is not None and _settled(self.instance))

    def _reader(self) -> LambdaClient:
        assert self._client is not None, "a finished operation never polls"
        return self._client

    def _poll_once(self, deadline: float) -> float | None:
        """Refresh the snapshot; returns a Retry-After to honour, or None. Transient errors are swallowed."""
        try:
            self.instance = self._reader()._get_instance(self.instance_id, deadline=deadline)
        except errors.NotFound:
            self._gone = True
        except _TRANSIENT as exc:
            return exc.retry_after if isinstance(exc, errors.APIError) else None
        return None

    def _sleep_until_next(self, polls: int, retry_after: float | None, deadline: float,
                          timeout: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            status = self.instance.status if self.instance else None
            raise errors.OperationTimeout(
                f"instance {self.instance_id} not active after {timeout:g}s (last status: "
                f"{status.value if status else 'unknown'}); it keeps booting",
                instance_id=self.instance_id, timeout=timeout, last_status=status,
            )
        delay = self._poll.delay(polls, retry_after, self._rng)
        time.sleep(min(delay, remaining))

    def _raise_unless_active(self) -> None:
        if self._gone:
            raise errors.OperationFailed(
                f"instance {self.instance_id} no longer exists", instance_id=self.instance_id, status=None
            )
        instance = self.instance
        assert instance is not None  # settled and not gone
        if instance.status is InstanceStatus.ACTIVE:
            return
        raise errors.OperationFailed(
            f"instance {instance.id} ended {instance.status.value} instead of active",
            instance_id=instance.id, status=instance.status, instance=instance,
        )


def _settled(instance: Instance) -> bool:
    ready = instance.status is InstanceStatus.ACTIVE and bool(instance.ip)
    return ready or instance.status in FAILED_STATUSES
