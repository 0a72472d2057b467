"""Exceptions raised by nebius_sdk.

    NebiusError                     root of everything this package raises on purpose
    ├── RequestNotSent              the call never reached the server (connection refused, DNS): safe to retry
    │   └── Unreachable             ... and the client never reached that target: not retried, says why
    ├── CredentialsError            no token could be had from the credentials (file, command, service account)
    ├── APIError                    the server (or the call deadline) ended the call with a non-OK status
    │   ├── InvalidArgument         INVALID_ARGUMENT / OUT_OF_RANGE; `.violations` from BadRequest
    │   ├── NotFound                NOT_FOUND
    │   ├── Conflict                FAILED_PRECONDITION / ABORTED (operation conflict, bad resource state)
    │   │   └── AlreadyExists       ALREADY_EXISTS (a name is unique per parent)
    │   ├── AuthError               UNAUTHENTICATED (missing, wrong or expired token)
    │   │   └── PermissionDenied    PERMISSION_DENIED
    │   ├── RateLimited             RESOURCE_EXHAUSTED + TooManyRequests (retried by the SDK first)
    │   ├── CapacityError           RESOURCE_EXHAUSTED + NotEnoughResources: no hardware for the preset now
    │   ├── QuotaError              RESOURCE_EXHAUSTED + QuotaFailure: the tenant's quota is too small
    │   ├── Unavailable             UNAVAILABLE / DEADLINE_EXCEEDED: the request may or may not have run
    │   └── OperationFailed         an operation finished with a status no class above describes (INTERNAL...)
    ├── OperationTimeout            Operation.wait() reached its deadline; the cloud operation keeps running
    └── PaginationLoop              a server repeated a page token

The class is picked from the gRPC status code and the `nebius.common.v1.ServiceError` detail by lookup tables
(`nebius_sdk._status`), never from message text. An error coming from a failed *operation* is an instance of
the same classes (a capacity shortage in a create operation raises `CapacityError`) and has `operation_id`
set.

This module imports neither grpc nor the generated code, so `import nebius_sdk` stays cheap.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cloud_sdk_core.net import Cause


class Code(enum.IntEnum):
    """gRPC / google.rpc status codes (same numbers as `grpc.StatusCode`)."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16

    @classmethod
    def _missing_(cls, value: object) -> Code:
        return cls.UNKNOWN


class NebiusError(Exception):
    """Root of the nebius_sdk exception hierarchy."""


class RequestNotSent(NebiusError):
    """The call could not be delivered: no connection to `target` could be made. Nothing happened remotely."""

    def __init__(self, message: str, *, method: str = "", target: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.method = method
        self.target = target

    def __str__(self) -> str:
        return f"request not sent to {self.target}{self.method}: {self.message}"


class Unreachable(RequestNotSent):
    """The channel could not connect to `target`, which no call of this client ever reached, for a reason that does
    not pass in seconds: the SDK fails at once, without retries, saying why (`cause`, from
    `cloud_sdk_core.net.diagnose`: DNS, refused, no route, TLS, proxy).

    `host` is the target's host name, `cause.kind` a `CauseKind`. `str()` is one line naming the host, the target
    and the cause. Nothing was sent.
    """

    def __init__(self, *, host: str, target: str, cause: Cause, method: str = "") -> None:
        super().__init__(f"cannot reach {host} (target {target}): {cause.text}", method=method, target=target)
        self.host = host
        self.cause = cause

    def __str__(self) -> str:
        return self.message


class CredentialsError(NebiusError):
    """No access token could be obtained: a token file is missing or empty, a token command failed, a service
    account's credentials are malformed, or the token service refused its JWT.

    `source` names the kind of credentials ("token", "token file", "token command", "service account"); `code` is
    the token service's status code when it refused (else None). The message never contains a token, a JWT or a
    private key.
    """

    def __init__(self, message: str, *, source: str, code: Code | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.source = source
        self.code = code


class APIError(NebiusError):
    """A call (or an operation) ended with a non-OK gRPC status.

    Attributes: `code` (Code), `message` (server text), `provider_code` (ServiceError.code, e.g.
    "NotEnoughResources", "" when absent), `service` (ServiceError.service), `service_error` (the decoded
    `nebius.common.v1.ServiceError` message or None), `request_id` / `trace_id` (from the response metadata),
    `method` (full RPC path, e.g. "/nebius.compute.v1.InstanceService/Create"), `target` (host:port) and
    `operation_id` (set when the error is the final status of an operation).
    """

    def __init__(
        self,
        code: Code,
        message: str,
        *,
        service_error: Any = None,
        request_id: str = "",
        trace_id: str = "",
        method: str = "",
        target: str = "",
        operation_id: str = "",
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.service_error = service_error
        self.provider_code: str = getattr(service_error, "code", "") or ""
        self.service: str = getattr(service_error, "service", "") or ""
        self.request_id = request_id
        self.trace_id = trace_id
        self.method = method
        self.target = target
        self.operation_id = operation_id

    @property
    def url(self) -> str:
        """`target` + `method`, the gRPC equivalent of a request URL."""
        return f"{self.target}{self.method}"

    def __str__(self) -> str:
        where = f"operation {self.operation_id}" if self.operation_id else self.method or "call"
        code = f" [{self.provider_code}]" if self.provider_code else ""
        rid = f", request id {self.request_id}" if self.request_id else ""
        return f"{self.code.name}{code}: {self.message} ({where}{rid})"

    def _violations(self, detail: str) -> list[Any]:
        found = getattr(self.service_error, detail, None)
        return list(found.violations) if found is not None else []


class InvalidArgument(APIError):
    """The request was malformed; `violations` lists BadRequest field violations (field, message)."""

    @property
    def violations(self) -> list[Any]:
        return self._violations("bad_request")


class NotFound(APIError):
    """The resource (or operation) does not exist in the given parent."""


class Conflict(APIError):
    """The resource's current state or another operation in flight forbids the request."""


class AlreadyExists(Conflict):
    """A resource with that name already exists in the parent."""


class AuthError(APIError):
    """The token is missing, malformed or expired."""


class PermissionDenied(AuthError):
    """The token is valid but may not act on this resource or parent."""


class RateLimited(APIError):
    """Too many requests. gRPC carries no Retry-After: `retry_after` is None and the SDK backs off itself."""

    retry_after: float | None = None


class CapacityError(APIError):
    """No hardware for the platform/preset right now; `violations` are NotEnoughResources violations."""

    @property
    def violations(self) -> list[Any]:
        return self._violations("not_enough_resources")


class QuotaError(APIError):
    """A tenant quota is exhausted; `violations` are QuotaFailure violations (quota, limit, requested)."""

    @property
    def violations(self) -> list[Any]:
        return self._violations("quota_failure")


class Unavailable(APIError):
    """The service did not answer in time or dropped the call: the request may or may not have been processed.

    Mutating calls carry an `x-idempotency-key`, so repeating them (as the SDK does) cannot act twice.
    """


class OperationFailed(APIError):
    """An operation finished with a non-OK status that no more specific class describes."""


class OperationTimeout(NebiusError):
    """`Operation.wait()` gave up at its deadline. The cloud operation itself is not cancelled."""

    def __init__(self, operation_id: str, timeout: float) -> None:
        super().__init__(f"operation {operation_id} not finished after {timeout:g} s")
        self.operation_id = operation_id
        self.timeout = timeout


class PaginationLoop(NebiusError):
    """The server returned a page token that was already used: iterating further would never end."""

    def __init__(self, token: str) -> None:
        super().__init__(f"page token {token!r} repeated; aborting pagination")
        self.token = token
