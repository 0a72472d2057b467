"""Error classification is a table lookup on (status, code); messages are never parsed."""

from __future__ import annotations

import pytest
from lambda_sdk import errors
from lambda_sdk.errors import error_class


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (401, "global/invalid-api-key", errors.AuthError),
        (403, "global/forbidden", errors.Forbidden),
        (403, "global/account-inactive", errors.Forbidden),
        (400, "global/invalid-parameters", errors.InvalidParameters),
        (404, "global/object-does-not-exist", errors.NotFound),
        (404, "global/not-found", errors.NotFound),
        (400, "instance-operations/launch/insufficient-capacity", errors.CapacityError),
        (400, "global/quota-exceeded", errors.QuotaError),
        (409, "global/conflict", errors.Conflict),
        (400, "global/duplicate", errors.Conflict),
        (400, "filesystems/filesystem-in-use", errors.Conflict),
        (429, "global/rate-limited", errors.RateLimited),
        (429, "", errors.RateLimited),
        (500, "global/internal-error", errors.ServerError),
        (503, "provider/internal-unavailable", errors.ServerError),
        (502, "", errors.ServerError),
        (404, "something/new", errors.NotFound),  # unknown code: the status decides
        (400, "global/unknown", errors.APIError),  # Lambda's catch-all: not a known kind of error
        (418, "", errors.APIError),
    ],
)
def test_error_class_table(status: int, code: str, expected: type[errors.APIError]) -> None:
    assert error_class(status, code) is expected


def test_a_message_mentioning_capacity_does_not_make_a_capacity_error() -> None:
    assert error_class(400, "global/invalid-parameters") is errors.InvalidParameters


def test_api_error_carries_every_field_and_prints_the_suggestion() -> None:
    exc = errors.CapacityError(
        "Not enough capacity to fulfill launch request.", status=400,
        code="instance-operations/launch/insufficient-capacity", suggestion="Try again later.",
        request_id="r-1", method="POST", url="http://x/api/v1/instance-operations/launch",
    )
    assert (exc.status, exc.code, exc.request_id, exc.method) == (400, exc.code, "r-1", "POST")
    text = str(exc)
    assert "400 instance-operations/launch/insufficient-capacity" in text
    assert "Suggestion: Try again later." in text and exc.url in text


def test_hierarchy() -> None:
    assert issubclass(errors.ReservedInstanceError, errors.Forbidden)
    assert issubclass(errors.RequestNotSent, errors.TransportError)
    assert issubclass(errors.ResponseNotReceived, errors.TransportError)
    for cls in (errors.APIError, errors.TransportError, errors.OperationFailed, errors.OperationTimeout,
                errors.PaginationLoop):
        assert issubclass(cls, errors.LambdaError)
    assert not issubclass(errors.RequestNotSent, errors.APIError)
