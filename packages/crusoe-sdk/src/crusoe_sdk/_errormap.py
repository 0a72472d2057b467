"""From an error response or a failed operation to the error class: tables keyed by status and Crusoe code.

Lookup order for a response: (status, code) -> code alone -> status -> status class (5xx) -> APIError.
Codes are the slugs Crusoe puts in `code` (research crusoe.md section 7); text is never inspected.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TypedDict

import msgspec
from cloud_sdk_core import parse_retry_after

from . import errors
from .models import ErrorBody, OperationRecord

log = logging.getLogger("crusoe_sdk")


class _ErrorFields(TypedDict):
    """The keyword arguments every APIError takes."""

    status: int
    code: str
    request_id: str
    method: str
    url: str


# Quota slugs are not documented by Crusoe; these are the ones the mock clouds and other clients use.
QUOTA_CODES = ("quota_exceeded", "insufficient_quota", "quota")

BY_STATUS_AND_CODE: dict[tuple[int, str], type[errors.APIError]] = {
    (401, "bad_credential"): errors.AuthError,
    (401, "bad_credentials"): errors.AuthError,
    (403, "unauthorized"): errors.PermissionDenied,
    (404, "not_found"): errors.NotFound,
    (429, "too_many_requests"): errors.RateLimited,
}

BY_CODE: dict[str, type[errors.APIError]] = {
    "out_of_stock": errors.CapacityError,
    **{code: errors.QuotaError for code in QUOTA_CODES},
}

BY_STATUS: dict[int, type[errors.APIError]] = {
    400: errors.BadRequest,
    401: errors.AuthError,
    403: errors.PermissionDenied,
    404: errors.NotFound,
    409: errors.Conflict,
    429: errors.RateLimited,
}

# What a FAILED operation's result code means; anything else is a plain OperationFailed.
OPERATION_FAILURES: dict[str, type[errors.OperationFailed]] = {
    "out_of_stock": errors.CapacityError,
    **{code: errors.QuotaError for code in QUOTA_CODES},
}


def error_class(status: int, code: str) -> type[errors.APIError]:
    found = BY_STATUS_AND_CODE.get((status, code)) or BY_CODE.get(code) or BY_STATUS.get(status)
    if found is not None:
        return found
    return errors.ServerError if status >= 500 else errors.APIError


def parse_error_body(body: bytes) -> ErrorBody:
    """The `{code, message, error_id}` body; an empty ErrorBody when the body is not that JSON object."""
    try:
        return msgspec.json.decode(body, type=ErrorBody) if body else ErrorBody()
    except msgspec.DecodeError:
        return ErrorBody()


def from_response(
    status: int, body: bytes, headers: Mapping[str, str], *, method: str, url: str, project: str = ""
) -> errors.APIError:
    """The typed error for an HTTP error (or redirect) response (`headers` must be case-insensitive, as requests'
    are). `project`: the project whose path was asked for, if any; a 403 there is ProjectUnavailable."""
    if 300 <= status < 400:
        return _redirected(status, headers, method=method, url=url)
    parsed = parse_error_body(body)
    cls = error_class(status, parsed.code)
    fields = _ErrorFields(
        status=status,
        code=parsed.code,
        request_id=parsed.error_id or headers.get("x-request-id", ""),
        method=method,
        url=url,
    )
    message = parsed.message or f"HTTP {status} with no error message"
    if issubclass(cls, errors.RateLimited):
        return cls(message, retry_after=parse_retry_after(headers.get("retry-after")), **fields)
    if cls is errors.PermissionDenied and project:
        text = f"project {project} is unknown or not readable with this key (server said: {message})"
        return errors.ProjectUnavailable(text, project_id=project, **fields)
    return cls(message, **fields)


def _redirected(status: int, headers: Mapping[str, str], *, method: str, url: str) -> errors.APIError:
    """A 3xx: never followed (a redirected POST would become a GET, and the signature covers the path)."""
    where = headers.get("location") or "no location"
    return errors.APIError(
        f"redirected to {where}; redirects are not followed: set the endpoint to the new URL",
        status=status, method=method, url=url,
    )


def from_operation(
    record: OperationRecord, *, method: str, url: str, status: int = 200
) -> errors.OperationFailed:
    """The typed error of a FAILED operation, from its result code. A code this table does not know is logged
    (debug, logger `crusoe_sdk`) with the operation's body, so that real codes (quota ones are undocumented)
    can be learned."""
    failure = record.error
    cls = OPERATION_FAILURES.get(failure.code, errors.OperationFailed)
    if failure.code not in OPERATION_FAILURES:
        log.debug("operation %s failed with a code this SDK does not know (%r): %s", record.operation_id,
                  failure.code, msgspec.json.encode(record).decode())
    return cls(
        failure.message or "the operation failed without a message",
        operation_id=record.operation_id,
        operation=record,
        status=status,
        code=failure.code,
        request_id=failure.error_id,
        method=method,
        url=url,
    )
