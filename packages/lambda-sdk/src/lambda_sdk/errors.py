"""Errors raised by lambda_sdk.

    LambdaError                        root: catch this to catch everything the SDK raises
    ├── TransportError                 no HTTP response was received
    │   ├── RequestNotSent             connection refused, DNS failure, connect timeout: nothing was sent
    │   │   ├── ConnectError           the endpoint never answered this client and cannot be reached (name does
    │   │   │                          not resolve, refused, TLS verification or proxy failed): raised at once,
    │   │   │                          not retried; `.cause` says why (cloud_sdk_core.net.Cause)
    │   │   └── Aborted                the caller's `abort` was set while the call waited to be sent
    │   └── ResponseNotReceived        the request was sent but the answer was lost (reset, read timeout):
    │                                  the call may or may not have taken effect
    ├── APIError                       the server answered with an error (status, code, message, suggestion)
    │   ├── InvalidParameters          400 global/invalid-parameters (and other request-shape errors)
    │   ├── AuthError                  401 global/invalid-api-key
    │   ├── Forbidden                  403 global/forbidden, account-inactive, invalid-address
    │   │   └── ReservedInstanceError  terminate refused for a reserved instance: it keeps running
    │   ├── NotFound                   404 global/object-does-not-exist, global/not-found
    │   ├── Conflict                   409 global/conflict, 400 global/duplicate, ...-in-use
    │   ├── CapacityError              400 instance-operations/launch/insufficient-capacity
    │   ├── QuotaError                 400 global/quota-exceeded, provider/quota-exceeded
    │   ├── RateLimited                429 (carries retry_after seconds)
    │   └── ServerError                5xx; provider/internal-unavailable whatever its status
    ├── OperationFailed                a launched instance ended unhealthy, terminated or preempted
    ├── OperationTimeout               a wait reached its deadline (the cloud operation goes on)
    └── PaginationLoop                 a server returned the same page token twice (alias PagingLoopError)

The class is chosen from the provider error code (Lambda's documented contract: "use the value of `code`"),
then from the HTTP status, through the tables below; messages are never parsed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cloud_sdk_core.net import Cause

    from .models import Instance, InstanceStatus


class LambdaError(Exception):
    """Root of every error raised by lambda_sdk."""


class TransportError(LambdaError):
    """No HTTP response was received for `method` `url`."""

    def __init__(self, message: str, *, method: str, url: str) -> None:
        super().__init__(f"{message} ({method} {url})")
        self.method = method
        self.url = url


class RequestNotSent(TransportError):
    """The request never reached the server; retrying it cannot duplicate anything."""


class Aborted(RequestNotSent):
    """The caller's `abort` event was set while the call waited to be sent (for the rate limiter, for another
    launch, or before a retry): it was not sent."""


class ConnectError(RequestNotSent):
    """The endpoint has never answered this client and cannot be reached; raised at once, without retries.

    `str()` is one line, `cannot reach HOST:PORT (ENDPOINT): CAUSE`, CAUSE being `cause.text` from
    `cloud_sdk_core.net.diagnose` (e.g. `connection refused`); `cause.kind` says which kind (DNS, REFUSED,
    UNREACHABLE, TLS, PROXY). Once the endpoint has answered, connection failures are plain RequestNotSent and
    retried as before. Never contains a secret.
    """

    def __init__(self, message: str, *, cause: Cause, endpoint: str, method: str, url: str) -> None:
        super().__init__(message, method=method, url=url)
        self.message = message
        self.cause = cause
        self.endpoint = endpoint

    def __str__(self) -> str:
        return self.message


class ResponseNotReceived(TransportError):
    """The request was sent but no response arrived; the call may have taken effect.

    After a launch this is the case that leaks instances: look the instance up by name
    (`LambdaClient.find_instance`) before launching again.
    """


class APIError(LambdaError):
    """The Lambda API answered with an error envelope (or a non-JSON error body)."""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        code: str = "",
        suggestion: str = "",
        request_id: str = "",
        method: str = "",
        url: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.suggestion = suggestion
        self.request_id = request_id
        self.method = method
        self.url = url
        self.retry_after = retry_after  # seconds from a Retry-After header (429, sometimes 503), else None

    def __str__(self) -> str:
        text = f"{self.status} {self.code or 'error'}: {self.message} ({self.method} {self.url})"
        if self.suggestion:
            text += f" Suggestion: {self.suggestion}"
        return text


class InvalidParameters(APIError):
    """The request was rejected as malformed (bad id, missing field, too many instances...)."""


class AuthError(APIError):
    """The API key is missing, invalid, expired or deleted."""


class Forbidden(APIError):
    """The account may not do this (inactive account, invalid billing address, forbidden action)."""


class ReservedInstanceError(Forbidden):
    """Terminate was refused because an instance is reserved: nothing was terminated, all keep running.

    Reserved capacity is managed by contract, not through the API (mock extension of the real API).
    `instance_ids` are the ids of the refused request.
    """

    instance_ids: tuple[str, ...] = ()


class NotFound(APIError):
    """The resource does not exist (or is not visible to this API key)."""


class Conflict(APIError):
    """The request conflicts with the resource's state (restart while booting, duplicate name, in use)."""


class CapacityError(APIError):
    """Lambda has no capacity for the instance type in that region right now."""


class QuotaError(APIError):
    """The account's quota does not allow this launch or file system."""


class RateLimited(APIError):
    """HTTP 429; `retry_after` is the server's Retry-After in seconds (None when absent).

    A 429 means the request was not carried out, so even a launch may be sent again.
    """


class ServerError(APIError):
    """HTTP 5xx: a server-side failure; reads are retried, creates are not."""


class OperationFailed(LambdaError):
    """A launched instance reached a state it will not leave (`status`); `instance` is its last snapshot.

    `instance` is None when the instance disappeared while being polled.
    """

    def __init__(self, message: str, *, instance_id: str, status: InstanceStatus | None,
                 instance: Instance | None = None) -> None:
        super().__init__(message)
        self.instance_id = instance_id
        self.status = status
        self.instance = instance


class OperationTimeout(LambdaError):
    """A wait reached its deadline. The cloud operation is not cancelled; resume it with
    `LambdaClient.resume_operation(instance_id)`."""

    def __init__(self, message: str, *, instance_id: str, timeout: float,
                 last_status: InstanceStatus | None) -> None:
        super().__init__(message)
        self.instance_id = instance_id
        self.timeout = timeout
        self.last_status = last_status


class PaginationLoop(LambdaError):
    """The server returned a page token that was already used: iterating further would never end."""


PagingLoopError = PaginationLoop  # the name before the SDKs agreed on PaginationLoop


# Provider error code -> class. Codes from the Lambda OpenAPI 1.10 (research lambda.md section 6).
ERRORS_BY_CODE: dict[str, type[APIError]] = {
    "global/invalid-api-key": AuthError,
    "global/account-inactive": Forbidden,
    "global/invalid-address": Forbidden,
    "global/forbidden": Forbidden,
    "global/invalid-parameters": InvalidParameters,
    "global/object-does-not-exist": NotFound,
    "global/not-found": NotFound,
    "global/quota-exceeded": QuotaError,
    "global/duplicate": Conflict,
    "global/conflict": Conflict,
    "global/internal-error": ServerError,
    "instance-operations/launch/insufficient-capacity": CapacityError,
    "instance-operations/launch/file-system-in-wrong-region": InvalidParameters,
    "instance-operations/launch/file-systems-not-supported": InvalidParameters,
    "filesystems/filesystem-in-use": Conflict,
    "firewall-rulesets/firewall-ruleset-in-use": Conflict,
    "ssh-keys/key-in-use": Conflict,
    # `provider/` codes come from Lambda's upstream providers; spec 1.10 names "network outages", "service
    # unavailability" and "quota limitations or resource exhaustion", gives no HTTP status, and shows one code.
    "provider/internal-unavailable": ServerError,  # the spec's example: "Provider unavailable", "Try again shortly"
    "provider/quota-exceeded": QuotaError,  # in a third-party client's error table, not in the spec (inferred)
}

# HTTP status -> class, for codes the table above does not know.
ERRORS_BY_STATUS: dict[int, type[APIError]] = {
    401: AuthError,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    429: RateLimited,
}


def error_class(status: int, code: str) -> type[APIError]:
    """The error class for an HTTP status and a Lambda error code.

    429 and 5xx win over the code (they describe the call, not the request); otherwise the code decides,
    then the status; anything else is a plain APIError. So `provider/internal-unavailable` is a ServerError,
    retried like one, even when Lambda sends it with a 4xx status (the spec gives none); a `provider/` code that
    is not in the table is classified by its status alone.
    """
    if status == 429:
        return RateLimited
    if status >= 500:
        return ServerError
    return ERRORS_BY_CODE.get(code) or ERRORS_BY_STATUS.get(status, APIError)
