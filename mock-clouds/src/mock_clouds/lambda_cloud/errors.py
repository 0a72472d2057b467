"""Lambda Cloud error envelopes: `{"error": {"code", "message", "suggestion"?}}` with the documented statuses.

Codes, default messages and suggestions come from the 1.10 spec and live captures (research/lambda.md
section 6).
Codes and texts the real API does not document are marked "mock extension".
"""

from __future__ import annotations

import math

from ..http import Response

INVALID_PARAMETERS_SUGGESTION = "Retry the request after fixing the request parameters."  # live capture
CAPACITY_SUGGESTION = "Choose an instance type with more availability, or try again later."  # live capture


class ApiError(Exception):
    """A refusal rendered as Lambda's error envelope with its HTTP status (and optional headers)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        suggestion: str | None = None,
        *,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.suggestion = suggestion
        self.headers = headers or {}

    def response(self) -> Response:
        error = {"code": self.code, "message": self.message}
        if self.suggestion is not None:
            error["suggestion"] = self.suggestion
        return Response(self.status, {"error": error}, dict(self.headers))


def invalid_api_key() -> ApiError:
    return ApiError(
        401,
        "global/invalid-api-key",
        "API key was invalid, expired, or deleted.",
        "Check your API key or create a new one, then try again.",
    )


def invalid_parameters(message: str = "Invalid request data.", status: int = 400) -> ApiError:
    return ApiError(status, "global/invalid-parameters", message, INVALID_PARAMETERS_SUGGESTION)


def not_found() -> ApiError:
    """An unknown path or method (ApiErrorNotFound)."""
    return ApiError(404, "global/not-found", "The requested resource was not found.")


def instance_not_found() -> ApiError:
    return ApiError(404, "global/object-does-not-exist", "Specified instance does not exist.")


def resource_not_found(message: str, suggestion: str) -> ApiError:
    """ApiErrorLaunchResourceNotFound / ApiErrorResourceNotFound: the suggestion is required."""
    return ApiError(404, "global/object-does-not-exist", message, suggestion)


def firewall_ruleset_not_found() -> ApiError:
    """ApiErrorFirewallRulesetNotFound (its default message and suggestion)."""
    return ApiError(
        404,
        "global/object-does-not-exist",
        "Firewall ruleset does not exist or you do not have permission to access it.",
        "Check your firewall ruleset ID and try again.",
    )


def firewall_ruleset_in_use() -> ApiError:
    """ApiErrorFirewallRulesetInUse (its default message and suggestion)."""
    return ApiError(
        400,
        "firewall-rulesets/firewall-ruleset-in-use",
        "Firewall ruleset is in use by one or more instances.",
        "Terminate all instances that are using the ruleset before deleting it.",
    )


def filesystem_not_found() -> ApiError:
    return ApiError(404, "global/object-does-not-exist", "Filesystem was not found.")


def insufficient_capacity(suggestion: str = CAPACITY_SUGGESTION) -> ApiError:
    return ApiError(
        400,
        "instance-operations/launch/insufficient-capacity",
        "Not enough capacity to fulfill launch request.",
        suggestion,
    )


def quota_exceeded() -> ApiError:
    return ApiError(
        400, "global/quota-exceeded", "Quota exceeded.", "Contact Support to increase your quota."
    )


def conflict(message: str = "The request conflicts with the current state of the resource.") -> ApiError:
    return ApiError(409, "global/conflict", message)


def forbidden(message: str, suggestion: str) -> ApiError:
    return ApiError(403, "global/forbidden", message, suggestion)


def already_terminated(instance_id: str, status: str) -> ApiError:
    """Terminating an instance that is already terminating or terminated.

    The live API was seen answering `global/unknown` here (SkyPilot #3410), a code the 1.10 spec no longer
    declares anywhere; the spec's only 400 body for terminate is `global/invalid-parameters`, which the
    generated client can parse, so the mock answers that.
    """
    return invalid_parameters(f"Instance '{instance_id}' is already {status}.")


def duplicate(message: str) -> ApiError:
    return ApiError(400, "global/duplicate", message)


def filesystem_in_use() -> ApiError:
    # mock extension: the spec gives no default message for this code
    return ApiError(
        400,
        "filesystems/filesystem-in-use",
        "Filesystem is in use by one or more instances.",
        "Terminate all instances that are using the filesystem before deleting it.",
    )


def file_system_in_wrong_region(message: str) -> ApiError:
    return ApiError(
        400,
        "instance-operations/launch/file-system-in-wrong-region",
        message,
        "Launch the instance in the filesystem's region, or use a filesystem in the instance's region.",
    )


def internal_error() -> ApiError:
    return ApiError(
        500,
        "global/internal-error",
        "An internal server error occurred.",
        "Try again later. Contact Support if the problem persists.",
    )


def provider_unavailable() -> ApiError:
    """The spec's example of an upstream `provider/` error."""
    return ApiError(503, "provider/internal-unavailable", "Provider unavailable", "Try again shortly")


def rate_limited(wait_seconds: float) -> ApiError:
    """HTTP 429. Mock extension: the real body and headers are undocumented, so the code is invented.

    `Retry-After` carries whole seconds (RFC 9110 delta-seconds, at least 1): what real clients parse.
    The exact (time-scaled) wait is also given in milliseconds in `retry-after-ms`, a header some HTTP
    APIs use and clients may honour, so fast test worlds need not sleep a whole second.
    """
    headers = {
        "Retry-After": str(max(1, math.ceil(wait_seconds))),
        "retry-after-ms": str(max(1, math.ceil(wait_seconds * 1000))),
    }
    return ApiError(
        429,
        "global/rate-limited",
        "Too many requests; the API rate limit was exceeded.",
        f"Wait {wait_seconds:.3f} seconds, then try again.",
        headers=headers,
    )
