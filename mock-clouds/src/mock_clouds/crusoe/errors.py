"""Crusoe's error body (`ErrorBody` in the swagger) and the exception handlers raise to produce it.

Real bodies carry a snake_case slug in `code` (`bad_request`, `bad_credential`, `unauthorized`, `not_found`,
`too_many_requests`, `internal_error`) and a human `message`; `internal_error` adds an `error_id`.
"""

from __future__ import annotations

import uuid

from ..http import Response

# The prefix of every real 400 message seen ("bad request, check request parameters: invalid action").
BAD_REQUEST_PREFIX = "bad request, check request parameters: "


class ApiError(Exception):
    """A request the API refuses; `response()` renders it as Crusoe does."""

    def __init__(
        self, status: int, code: str, message: str, *, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}

    def response(self) -> Response:
        return Response(self.status, error_body(self.code, self.message), dict(self.headers))


def error_body(code: str, message: str) -> dict[str, str]:
    """`{"code", "message"}`, plus a fresh `error_id` for internal errors (clients quote it to support)."""
    body = {"code": code, "message": message}
    if code == "internal_error":
        body["error_id"] = str(uuid.uuid4())
    return body


def bad_request(detail: str, status: int = 400) -> ApiError:
    return ApiError(status, "bad_request", BAD_REQUEST_PREFIX + detail)


def bad_credential(detail: str) -> ApiError:
    # swagger's authError example uses `bad_credential`; a support article spells it `bad_credentials`.
    return ApiError(401, "bad_credential", f"bad credential: {detail}")


def unauthorized(detail: str) -> ApiError:
    return ApiError(403, "unauthorized", detail)


def not_found(detail: str) -> ApiError:
    return ApiError(404, "not_found", detail)


def method_not_allowed(method: str) -> ApiError:
    return ApiError(
        405, "method_not_allowed", f"method {method} is not allowed on this path"
    )  # mock extension


def too_many_requests(retry_after: float) -> ApiError:
    seconds = max(1, int(retry_after + 0.999))
    return ApiError(
        429,
        "too_many_requests",
        "too many requests, please retry later",
        headers={"Retry-After": str(seconds)},
    )
