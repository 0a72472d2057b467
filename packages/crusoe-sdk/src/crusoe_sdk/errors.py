"""Errors raised by crusoe_sdk.

    CrusoeError                      root of everything this SDK raises (besides ValueError for bad arguments)
    ├── RequestNotSent               the request never reached the server (connection refused, DNS, connect
    │   │                            timeout): nothing happened, retrying is always safe
    │   └── ConnectError             the endpoint has never answered this client and cannot be reached (its name
    │                                does not resolve, nothing listens, TLS verification or the proxy failed):
    │                                raised at once, not retried; `.cause` says why (cloud_sdk_core.net.Cause)
    ├── NoResponse                   the request was sent but no complete response came back (connection
    │                                dropped, read timeout): the action MAY have happened
    ├── PaginationLoop               the server handed back a page token it had already given
    ├── ProjectUnresolved            the project to use could not be chosen (a name that matches no project, or
    │                                none given and the key sees zero or several); `.wanted`, `.projects`
    ├── OperationTimeout             a wait reached its deadline; the operation goes on (also a TimeoutError)
    └── APIError                     the API answered with an error: status, code, message, request_id,
        │                            method, url
        ├── BadRequest               400 bad_request
        ├── AuthError                401 bad_credential(s): wrong key, bad signature, clock skew
        │   └── PermissionDenied     403 unauthorized
        │       ├── ProjectUnavailable     403 on a project's path: the project is unknown or not this key's
        │       └── OperationUnavailable   403 polling an operation: unknown, expired, or started by others
        ├── NotFound                 404 not_found
        ├── Conflict                 409: the resource is busy or in the wrong state
        ├── RateLimited              429 too_many_requests; `.retry_after` seconds (None if not sent)
        ├── ServerError              5xx
        └── OperationFailed          an asynchronous operation ended FAILED; `.operation_id`, `.operation`
            ├── CapacityError        code out_of_stock: no hardware for the type in that location
            └── QuotaError           a quota code: the project's quota would be exceeded

The class is chosen from (HTTP status, Crusoe error code) by the tables in `crusoe_sdk._errormap`, never by
matching text. An operation failure is reported by a successful poll (status 200) whose body says FAILED, so
`OperationFailed.status` is that poll's status and `.code`/`.message` come from the operation's result.
CapacityError/QuotaError raised for an HTTP error response (not an operation) have an empty `operation_id`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cloud_sdk_core.net import Cause

    from .models import OperationRecord, Project


class CrusoeError(Exception):
    """Root of the crusoe_sdk error hierarchy."""


class RequestNotSent(CrusoeError):
    """The request never reached the server; the cloud is unchanged and a retry is safe."""

    def __init__(self, message: str, *, method: str = "", url: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.method = method
        self.url = url


class ConnectError(RequestNotSent):
    """The endpoint has never answered this client and cannot be reached; raised at once, without retries.

    The message is one line: `cannot reach HOST:PORT (ENDPOINT): CAUSE`, CAUSE being `cause.text` from
    `cloud_sdk_core.net.diagnose` (e.g. `DNS: api.cloud.crusoe.ai does not resolve`); `cause.kind` says which kind
    (DNS, REFUSED, UNREACHABLE, TLS, PROXY). Once the endpoint has answered, connection failures are plain
    RequestNotSent and retried as before. Never contains a secret.
    """

    def __init__(self, message: str, *, cause: Cause, endpoint: str, method: str = "", url: str = "") -> None:
        super().__init__(message, method=method, url=url)
        self.cause = cause
        self.endpoint = endpoint


class NoResponse(CrusoeError):
    """The request was sent but its response was lost; the action may or may not have happened.

    After a NoResponse on a create, look the instance up by name (`CrusoeClient.find_instance`) before
    creating again.
    """

    def __init__(self, message: str, *, method: str = "", url: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.method = method
        self.url = url


class PaginationLoop(CrusoeError):
    """A list returned a page token already seen; iterating further would never end."""


class ProjectUnresolved(CrusoeError):
    """The client's project could not be chosen (Crusoe's convention: a UUID is used as is, a name is looked up,
    none means the only project the key can see).

    `wanted` is the name asked for ("" when none was); `projects` the projects the key can see (listed by
    `listing()`): `wanted` matched none of them, or none was asked for and there are zero or several.
    """

    def __init__(self, message: str, *, wanted: str, projects: Sequence[Project]) -> None:
        super().__init__(message)
        self.message = message
        self.wanted = wanted
        self.projects = tuple(projects)

    def listing(self, limit: int = 10) -> str:
        """`projects` as `project_listing` spells them."""
        return project_listing(self.projects, limit)


def project_listing(projects: Sequence[Project], limit: int = 10) -> str:
    """`name (uuid), name (uuid), ... and N more`, sorted by name, at most `limit`; `none` when there are none."""
    ordered = sorted(projects, key=lambda p: (p.name, p.id))
    shown = ", ".join(f"{p.name} ({p.id})" for p in ordered[:limit])
    more = f" and {len(ordered) - limit} more" if len(ordered) > limit else ""
    return shown + more if ordered else "none"


class OperationTimeout(CrusoeError, TimeoutError):
    """`wait()`/`result()` reached the deadline. The operation itself was not cancelled and goes on."""

    def __init__(self, operation_id: str, timeout: float, last_state: str) -> None:
        super().__init__(
            f"operation {operation_id} not finished after {timeout:g}s (last state {last_state}); "
            "it continues in the cloud: resume it with CrusoeClient.resume_operation(op.continuation_token())"
        )
        self.operation_id = operation_id
        self.timeout = timeout
        self.last_state = last_state


class APIError(CrusoeError):
    """The Crusoe API reported an error.

    `status` is the HTTP status, `code` the Crusoe slug (`not_found`, `out_of_stock`...; "" when the body had
    none), `request_id` the body's `error_id` (or a request-id header), `method`/`url` the request that got
    it.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int = 0,
        code: str = "",
        request_id: str = "",
        method: str = "",
        url: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.request_id = request_id
        self.method = method
        self.url = url

    def __str__(self) -> str:
        where = f" ({self.method} {self.url})" if self.method else ""
        ident = f" [error_id {self.request_id}]" if self.request_id else ""
        code = f" {self.code}" if self.code else ""
        return f"{self.status}{code}: {self.message}{where}{ident}"


class BadRequest(APIError):
    """400: the request is invalid (missing field, unknown type or location, invalid action)."""


class AuthError(APIError):
    """401: the credentials were rejected (unknown key, bad signature, timestamp out of window)."""


class PermissionDenied(AuthError):
    """403: the credentials are valid but not allowed to do this (e.g. another organisation's project)."""


class ProjectUnavailable(PermissionDenied):
    """403 on a project's path: the project does not exist or the key may not read it (another organisation's,
    or a UUID mistyped). `project_id` is that project. The credentials themselves were accepted."""

    def __init__(self, message: str, *, project_id: str, **fields: Any) -> None:
        super().__init__(message, **fields)
        self.project_id = project_id


class OperationUnavailable(PermissionDenied):
    """403 while reading an operation: Crusoe's answer when it does not exist, has expired, or was started by
    someone else. The resource may still have changed; read it to find out."""


class NotFound(APIError):
    """404: the resource does not exist (or no longer exists)."""


class Conflict(APIError):
    """409: the resource is in a state that forbids the action, or another operation is in progress on it."""


class RateLimited(APIError):
    """429: too many requests. `retry_after` is the server's hint in seconds (None when it gave none)."""

    def __init__(self, message: str, *, retry_after: float | None = None, **fields: Any) -> None:
        super().__init__(message, **fields)
        self.retry_after = retry_after


class ServerError(APIError):
    """5xx: a server-side failure. Reads were already retried when this is raised."""


class OperationFailed(APIError):
    """An asynchronous operation ended in state FAILED. `operation` is the final record (None when the error
    came from a plain HTTP response rather than an operation)."""

    def __init__(
        self,
        message: str,
        *,
        operation_id: str = "",
        operation: OperationRecord | None = None,
        **fields: Any,
    ) -> None:
        super().__init__(message, **fields)
        self.operation_id = operation_id
        self.operation = operation

    def __str__(self) -> str:
        prefix = f"operation {self.operation_id} failed: " if self.operation_id else ""
        return prefix + super().__str__()


class CapacityError(OperationFailed):
    """No capacity for the instance type in the location (Crusoe code `out_of_stock`)."""


class QuotaError(OperationFailed):
    """The project's quota for the instance family would be exceeded."""
