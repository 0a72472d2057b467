"""LambdaClient: the typed client of the Lambda Cloud REST API (https://cloud.lambda.ai/api/v1).

Verbs: `get_x` raises NotFound, `find_x` returns None, `list_xs` returns a lazy Pager, `launch_instance`
returns a LaunchOperation, deletes succeed when the thing is already gone unless `missing_ok=False`.
"""

from __future__ import annotations

import os
import threading
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from . import errors
from ._operation import LaunchOperation
from ._pager import Pager, single_page
from ._policy import PollPolicy, RateLimit, RateLimiter, RetryPolicy
from .models import (
    GONE_STATUSES,
    Filesystem,
    FileSystemMount,
    FirewallRule,
    FirewallRulesetRef,
    FirewallRulesPut,
    GeneratedSSHKey,
    Image,
    ImageSpec,
    Instance,
    InstanceStatus,
    InstanceTypeAvailability,
    LaunchRequest,
    LaunchResult,
    Region,
    Reservation,
    RestartResult,
    SSHKey,
    Tag,
    TerminateResult,
)

if TYPE_CHECKING:
    import requests

    from ._transport import Transport

DEFAULT_BASE_URL = "https://cloud.lambda.ai/api/v1"
API_KEY_ENV = "LAMBDA_API_KEY"
# Lambda's answer when terminating an instance that is already terminating (SkyPilot PR #3410).
_UNKNOWN_ERROR_CODE = "global/unknown"
_INVALID_PARAMETERS_CODE = "global/invalid-parameters"
# The only reason terminate is forbidden: a reserved instance (mock extension; the real API documents none).
_FORBIDDEN_CODE = "global/forbidden"
# Terminate refuses these (already going or gone); a preempted instance still exists and can be terminated.
_TERMINATING = frozenset({InstanceStatus.TERMINATING, InstanceStatus.TERMINATED})


class LambdaClient:
    """A client of one Lambda Cloud account. Thread-safe: share one client between threads.

    Every call has a timeout and goes through a client-side rate limiter (Lambda documents 1 request/s and
    1 launch per 12 s; `rate_limit=None` disables it), so callers rarely see a 429. Reads and idempotent calls
    are retried on 429, 5xx and connection failures; launch, restart and key/file-system creation are retried
    only when the server certainly did nothing (429, request never sent). Creates carry no idempotency key on
    Lambda: after ResponseNotReceived, look the instance up with `find_instance(name)` before launching again.
    """

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        session: requests.Session | None = None,
        timeout: float | tuple[float, float] = (10.0, 60.0),
        rate_limit: RateLimit | None = RateLimit(),  # noqa: B008 - frozen dataclass
        retry: RetryPolicy = RetryPolicy(),  # noqa: B008
        poll: PollPolicy = PollPolicy(),  # noqa: B008
    ) -> None:
        """`api_key` defaults to $LAMBDA_API_KEY; raises ValueError when neither is set. No network call."""
        from ._transport import Transport

        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV, "")
        if not key:
            raise ValueError(f"no Lambda API key: pass api_key= or set {API_KEY_ENV}")
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self._poll = poll
        self._transport: Transport = Transport(
            base_url=self.base_url, api_key=key, session=session, timeout=timeout,
            limiter=RateLimiter(rate_limit), retry=retry,
        )

    def __repr__(self) -> str:
        return f"LambdaClient(base_url={self.base_url!r}, api_key=<redacted>)"

    def close(self) -> None:
        """Close the HTTP session if the client created it (an injected session is left open)."""
        self._transport.close()

    def __enter__(self) -> LambdaClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --------------------------------------------------------------------------------------- instances
    def list_instances(self, *, cluster_id: str | None = None) -> Pager[Instance]:
        """The account's instances (booting, active, terminating...), lazily; Lambda sends one page."""
        params = {"cluster_id": cluster_id} if cluster_id else None
        return single_page(lambda: self._transport.call("GET", "/instances", list[Instance], params=params))

    def get_instance(self, instance_id: str) -> Instance:
        """One instance. Raises NotFound when it does not exist (terminated instances vanish)."""
        return self._get_instance(instance_id)

    def _get_instance(self, instance_id: str, *, deadline: float | None = None) -> Instance:
        return self._transport.call("GET", f"/instances/{_segment(instance_id)}", Instance, deadline=deadline)

    def find_instance(self, name: str) -> Instance | None:
        """The first instance named `name` that is not terminating, terminated or preempted, else None.

        Lambda names need not be unique. Use this to reconcile after a launch whose answer was lost.
        """
        live = (i for i in self.list_instances() if i.name == name and i.status not in GONE_STATUSES)
        return next(live, None)

    def rename_instance(self, instance_id: str, name: str) -> Instance:
        """Set the instance's name (0..64 characters) and return the instance. Raises NotFound."""
        path = f"/instances/{_segment(instance_id)}"
        return self._transport.call("POST", path, Instance, body={"name": name})

    def launch_instance(
        self,
        *,
        region_name: str,
        instance_type_name: str,
        ssh_key_names: Sequence[str],
        name: str | None = None,
        hostname: str | None = None,
        image: ImageSpec | None = None,
        file_system_names: Sequence[str] = (),
        file_system_mounts: Sequence[FileSystemMount] = (),
        user_data: str | None = None,
        tags: Mapping[str, str] | None = None,
        firewall_ruleset_ids: Sequence[str] = (),
        reservation_id: str | None = None,
        abort: threading.Event | None = None,
    ) -> LaunchOperation:
        """Launch one instance; returns at once with its id (`.instance_id`); `.wait()` blocks until active.

        Lambda launches one instance per call (quantity is never sent). `reservation_id` launches into
        reserved capacity (mock extension). Not retried after a 5xx or a lost response: raises ServerError or
        ResponseNotReceived, and the instance may exist - check `find_instance(name)`. Raises CapacityError,
        QuotaError, NotFound (unknown type/region/key), InvalidParameters, RateLimited (retries exhausted).
        `abort`: once it is set the launch is not sent (a launch waits up to a launch interval, 12 s, for its
        slot, and for the launches queued before it): Aborted, at once, and no instance exists.
        """
        request = LaunchRequest(
            region_name=region_name, instance_type_name=instance_type_name, ssh_key_names=list(ssh_key_names),
            name=name, hostname=hostname, image=image, file_system_names=list(file_system_names),
            file_system_mounts=list(file_system_mounts), user_data=user_data,
            tags=[Tag(k, v) for k, v in (tags or {}).items()],
            firewall_rulesets=[FirewallRulesetRef(i) for i in firewall_ruleset_ids],
            reservation_id=reservation_id,
        )
        # A 429 means Lambda did not launch anything, so Retry.IF_NOT_APPLIED may repeat it safely; a 5xx or a
        # lost answer may hide a launched instance, so those are never repeated blindly.
        from ._transport import Bucket, Retry

        result = self._transport.call(
            "POST", "/instance-operations/launch", LaunchResult, body=request,
            retry=Retry.IF_NOT_APPLIED, bucket=Bucket.LAUNCH, abort=abort,
        )
        if len(result.instance_ids) != 1:
            raise errors.LambdaError(f"launch returned {len(result.instance_ids)} instance ids, expected 1")
        return self.resume_operation(result.instance_ids[0])

    def resume_operation(self, token: str) -> LaunchOperation:
        """The launch operation of an existing instance, e.g. to resume a wait in another process.

        `token` is a `LaunchOperation.continuation_token()`, which is the instance id. No network call.
        Raises ValueError for an empty token (a finished operation has nothing to resume)."""
        if not token:
            raise ValueError("an empty continuation token: the operation needed no work, there is nothing to resume")
        return LaunchOperation(self, token, self._poll)

    def terminate_instances(self, instance_ids: Iterable[str], *, missing_ok: bool = True) -> list[Instance]:
        """Terminate instances; returns those the call terminated (status `terminating`).

        With `missing_ok` (default), ids that are already gone or going count as done: when the call is refused
        with 404, with `global/invalid-parameters` (the spec's 400 for terminating an instance that is already
        terminating) or with the live API's `global/unknown` for the same case, the ids `list_instances` still
        shows neither terminating nor terminated (a preempted one is terminated) are sent in a second call.
        Raises ReservedInstanceError when any of them is reserved (nothing is terminated, they keep running).
        """
        ids = list(instance_ids)
        if not ids:
            return []
        try:
            return self._terminate(ids)
        except errors.APIError as exc:
            if not missing_ok or not _maybe_already_gone(exc):
                raise
        live = self._live_ids(ids)
        return self._terminate(live) if live else []

    def terminate_instance(self, instance_id: str, *, missing_ok: bool = True) -> Instance | None:
        """Terminate one instance; None when it was already gone. Same errors as `terminate_instances`."""
        done = self.terminate_instances([instance_id], missing_ok=missing_ok)
        return done[0] if done else None

    def _terminate(self, ids: list[str]) -> list[Instance]:
        try:
            result = self._transport.call(
                "POST", "/instance-operations/terminate", TerminateResult, body={"instance_ids": ids}
            )
        except errors.Forbidden as exc:
            if exc.code == _FORBIDDEN_CODE:
                raise _reserved_error(exc, ids) from exc
            raise
        return result.terminated_instances

    def _live_ids(self, ids: list[str]) -> list[str]:
        wanted = set(ids)
        live = {i.id for i in self.list_instances() if i.id in wanted and i.status not in _TERMINATING}
        return [i for i in ids if i in live]

    def restart_instances(self, instance_ids: Iterable[str]) -> list[Instance]:
        """Restart active instances; returns them. Raises Conflict when one is not active (e.g. booting),
        NotFound for an unknown id. Retried only after a 429 (a restart is not idempotent)."""
        from ._transport import Retry

        result = self._transport.call(
            "POST", "/instance-operations/restart", RestartResult,
            body={"instance_ids": list(instance_ids)}, retry=Retry.IF_NOT_APPLIED,
        )
        return result.restarted_instances

    # ----------------------------------------------------------------------------- catalogue and account
    def instance_types(self) -> dict[str, InstanceTypeAvailability]:
        """GET /instance-types as a typed map: type name -> type and `regions_with_capacity_available`."""
        return self._transport.call("GET", "/instance-types", dict[str, InstanceTypeAvailability])

    def list_instance_types(self) -> Pager[InstanceTypeAvailability]:
        """The entries of `instance_types()`, lazily."""
        return single_page(lambda: list(self.instance_types().values()))

    def list_regions(self) -> Pager[Region]:
        return single_page(lambda: self._transport.call("GET", "/regions", list[Region]))

    def list_images(self) -> Pager[Image]:
        """Images, one entry per (image, region)."""
        return single_page(lambda: self._transport.call("GET", "/images", list[Image]))

    def list_reservations(self) -> Pager[Reservation]:
        """Reserved capacity of the account (mock extension: the real API has no such endpoint)."""
        return single_page(lambda: self._transport.call("GET", "/reservations", list[Reservation]))

    # ------------------------------------------------------------------------------------------ ssh keys
    def list_ssh_keys(self) -> Pager[SSHKey]:
        return single_page(lambda: self._transport.call("GET", "/ssh-keys", list[SSHKey]))

    def add_ssh_key(self, name: str, public_key: str | None = None) -> SSHKey | GeneratedSSHKey:
        """Add a public key, or without one have Lambda generate a pair (GeneratedSSHKey with `private_key`,
        returned only now). Not retried blindly (a retry could add the key twice)."""
        from ._transport import Retry

        body = {"name": name} if public_key is None else {"name": name, "public_key": public_key}
        type_ = GeneratedSSHKey if public_key is None else SSHKey
        return self._transport.call("POST", "/ssh-keys", type_, body=body, retry=Retry.IF_NOT_APPLIED)

    def delete_ssh_key(self, key_id: str, *, missing_ok: bool = True) -> None:
        """Delete a key; an unknown id is fine unless `missing_ok=False` (then NotFound)."""
        self._delete(f"/ssh-keys/{_segment(key_id)}", missing_ok)

    # ------------------------------------------------------------------------------------------ firewall
    def list_firewall_rules(self) -> Pager[FirewallRule]:
        """The account's inbound firewall rules (GET /firewall-rules, firewallRulesList). Lambda: they "do not
        apply to the us-south-1 region"."""
        return single_page(lambda: self._transport.call("GET", "/firewall-rules", list[FirewallRule]))

    def set_firewall_rules(self, rules: Iterable[FirewallRule]) -> list[FirewallRule]:
        """Replace every inbound rule with `rules` (PUT /firewall-rules, firewallRulesSet) and return the rules
        now in force; an empty `rules` closes every port, SSH included. To open one more port, list the rules
        and send them with the new one. Retried like a read: sending the same list twice changes nothing.
        Raises InvalidParameters for a malformed rule (nothing is changed)."""
        body = FirewallRulesPut(list(rules))
        return self._transport.call("PUT", "/firewall-rules", list[FirewallRule], body=body)

    # --------------------------------------------------------------------------------------- file systems
    def list_filesystems(self) -> Pager[Filesystem]:
        return single_page(lambda: self._transport.call("GET", "/file-systems", list[Filesystem]))

    def create_filesystem(self, name: str, region_name: str) -> Filesystem:
        """Create a file system in a region. Raises Conflict (duplicate name) or QuotaError.

        Not retried blindly (no idempotency key): after ResponseNotReceived, look in `list_filesystems`."""
        from ._transport import Retry

        body = {"name": name, "region": region_name}
        return self._transport.call("POST", "/filesystems", Filesystem, body=body, retry=Retry.IF_NOT_APPLIED)

    def delete_filesystem(self, filesystem_id: str, *, missing_ok: bool = True) -> None:
        """Delete a file system. Raises Conflict while it is in use; NotFound only with `missing_ok=False`."""
        self._delete(f"/filesystems/{_segment(filesystem_id)}", missing_ok)

    def _delete(self, path: str, missing_ok: bool) -> None:
        try:
            # the answer is {} for keys and {"deleted_ids": [...]} for file systems: nothing to return
            self._transport.call("DELETE", path, object)
        except errors.NotFound:
            if not missing_ok:
                raise


def _segment(value: str) -> str:
    """A path segment; rejects an empty id before it can turn into a list URL."""
    if not value:
        raise ValueError("id is empty")
    return urllib.parse.quote(value, safe="")


def _maybe_already_gone(exc: errors.APIError) -> bool:
    """404, or a 400 that an instance already terminating gets: `global/invalid-parameters` (the only 400 the
    1.10 spec declares for terminate) or the generic `global/unknown` the live API was seen to return."""
    return isinstance(exc, errors.NotFound) or exc.code in (_UNKNOWN_ERROR_CODE, _INVALID_PARAMETERS_CODE)


def _reserved_error(exc: errors.Forbidden, ids: list[str]) -> errors.ReservedInstanceError:
    """A `global/forbidden` refusal of terminate means a reserved instance (the mock's rule)."""
    error = errors.ReservedInstanceError(
        f"{exc.message} Nothing was terminated: the instances keep running (and billing).",
        status=exc.status, code=exc.code, suggestion=exc.suggestion, request_id=exc.request_id,
        method=exc.method, url=exc.url,
    )
    error.instance_ids = tuple(ids)
    return error
