"""The synthetic operation of a launch: Lambda returns an instance id at once and the instance then boots.

The operation is the instance id, so it is resumable anywhere: `client.launch_operation(instance_id)`.
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

# 8-GPU instances take 15 to 20+ minutes to boot on the real cloud (research lambda.md section 8).
DEFAULT_WAIT_TIMEOUT = 30 * 60.0

# Poll failures that say nothing about the instance: keep polling until the deadline.
_TRANSIENT = (errors.ServerError, errors.RateLimited, errors.TransportError)


class LaunchOperation:
    """A launched instance on its way to `active` with an IP address."""

    def __init__(self, client: LambdaClient, instance_id: str, poll: PollPolicy) -> None:
        self._client = client
        self._poll = poll
        self._rng = random.Random()
        self.instance_id = instance_id
        self.instance: Instance | None = None  # the last snapshot read, None before the first poll

    @property
    def id(self) -> str:
        """The operation id, which is the instance id."""
        return self.instance_id

    def __repr__(self) -> str:
        status = self.instance.status.value if self.instance else "not polled"
        return f"LaunchOperation(instance_id={self.instance_id!r}, status={status!r})"

    def done(self) -> bool:
        """Read the instance once; True when it is active with an IP, or can no longer become so.

        Raises the API or transport error of that one read (no waiting, no retry beyond the client's).
        """
        try:
            self.instance = self._client.get_instance(self.instance_id)
        except errors.NotFound:
            return True
        return _settled(self.instance)

    def wait(self, timeout: float = DEFAULT_WAIT_TIMEOUT) -> Instance:
        """Block until the instance is active with an IP and return it.

        Polls with exponential backoff and jitter (Retry-After wins); 5xx, 429 and connection failures are
        retried until the deadline. Raises OperationFailed when the instance ends unhealthy, terminating,
        terminated, preempted or disappears; OperationTimeout after `timeout` seconds (the instance keeps
        booting); any other API error (e.g. AuthError) at once.
        """
        deadline = time.monotonic() + timeout
        polls = 0
        while True:
            retry_after = self._poll_once(deadline)
            if self.instance is not None and _settled(self.instance):
                return self._outcome(self.instance)
            polls += 1
            self._sleep_until_next(polls, retry_after, deadline, timeout)

    def result(self, timeout: float = DEFAULT_WAIT_TIMEOUT) -> Instance:
        """The active instance; same contract as `wait`.

        For a Lambda launch the final state and the resource are one object, so `result` and `wait` coincide.
        """
        return self.wait(timeout)

    def _poll_once(self, deadline: float) -> float | None:
        """Refresh the snapshot; returns a Retry-After to honour, or None. Transient errors are swallowed."""
        try:
            self.instance = self._client._get_instance(self.instance_id, deadline=deadline)
        except errors.NotFound:
            raise errors.OperationFailed(
                f"instance {self.instance_id} no longer exists", instance_id=self.instance_id, status=None
            ) from None
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
        delay = retry_after if retry_after is not None else self._poll.delay(polls, self._rng)
        time.sleep(min(delay, remaining))

    def _outcome(self, instance: Instance) -> Instance:
        if instance.status is InstanceStatus.ACTIVE:
            return instance
        raise errors.OperationFailed(
            f"instance {instance.id} ended {instance.status.value} instead of active",
            instance_id=instance.id, status=instance.status, instance=instance,
        )


def _settled(instance: Instance) -> bool:
    ready = instance.status is InstanceStatus.ACTIVE and bool(instance.ip)
    return ready or instance.status in FAILED_STATUSES
