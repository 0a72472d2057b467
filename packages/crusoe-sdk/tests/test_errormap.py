"""Error classification tables (pure): status + Crusoe code -> class; failed operation -> class."""

from __future__ import annotations

import email.utils
import time

import pytest
from crusoe_sdk import _errormap, errors
from crusoe_sdk.models import OperationRecord, OperationState
from requests.structures import CaseInsensitiveDict


def response_error(status: int, body: bytes, **headers: str) -> errors.APIError:
    return _errormap.from_response(
        status, body, CaseInsensitiveDict(headers), method="GET", url="http://x/v1alpha5/locations"
    )


@pytest.mark.parametrize(
    ("status", "code", "cls"),
    [
        (400, "bad_request", errors.BadRequest),
        (401, "bad_credential", errors.AuthError),
        (401, "bad_credentials", errors.AuthError),
        (403, "unauthorized", errors.PermissionDenied),
        (404, "not_found", errors.NotFound),
        (409, "conflict", errors.Conflict),
        (409, "", errors.Conflict),
        (429, "too_many_requests", errors.RateLimited),
        (500, "internal_error", errors.ServerError),
        (503, "", errors.ServerError),
        (418, "teapot", errors.APIError),
        (400, "out_of_stock", errors.CapacityError),
        (400, "quota_exceeded", errors.QuotaError),
    ],
)
def test_status_and_code_pick_the_class(status: int, code: str, cls: type[errors.APIError]) -> None:
    body = f'{{"code": "{code}", "message": "m", "error_id": "e-1"}}'.encode()
    error = response_error(status, body)
    assert type(error) is cls
    assert (error.status, error.code, error.message, error.request_id) == (status, code, "m", "e-1")
    assert (error.method, error.url) == ("GET", "http://x/v1alpha5/locations")


def test_the_message_text_never_decides_the_class() -> None:
    error = response_error(400, b'{"code": "bad_request", "message": "out_of_stock quota not_found"}')
    assert type(error) is errors.BadRequest


def test_a_body_that_is_not_an_error_object_still_gives_a_typed_error() -> None:
    error = response_error(502, b"<html>bad gateway</html>")
    assert type(error) is errors.ServerError
    assert error.code == "" and "502" in error.message


@pytest.mark.parametrize(
    ("header", "expected"),
    [("7", 7.0), ("0.5", 0.5), ("", None), ("soon", None)],
)
def test_rate_limited_carries_retry_after_seconds(header: str, expected: float | None) -> None:
    headers = {"Retry-After": header} if header else {}
    error = response_error(429, b'{"code": "too_many_requests"}', **headers)
    assert isinstance(error, errors.RateLimited)
    assert error.retry_after == expected


def test_retry_after_as_an_http_date() -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    error = response_error(429, b"{}", **{"Retry-After": when})
    assert isinstance(error, errors.RateLimited)
    assert error.retry_after is not None and 20 <= error.retry_after <= 31


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        ("out_of_stock", errors.CapacityError),
        ("quota_exceeded", errors.QuotaError),
        ("internal_error", errors.OperationFailed),
        ("", errors.OperationFailed),
    ],
)
def test_failed_operation_maps_its_result_code(code: str, cls: type[errors.OperationFailed]) -> None:
    record = OperationRecord(
        operation_id="OP-1", state=OperationState.FAILED, metadata={"id": "vm-1"},
        result={"code": code, "message": "no luck"},
    )
    error = _errormap.from_operation(record, method="GET", url="http://x/op")
    assert type(error) is cls
    assert isinstance(error, errors.APIError)
    assert (error.operation_id, error.operation, error.code) == ("OP-1", record, code)
    assert "operation OP-1 failed" in str(error)


def test_hierarchy_has_one_root() -> None:
    leaves = [
        errors.RequestNotSent, errors.NoResponse, errors.PaginationLoop, errors.OperationTimeout,
        errors.BadRequest, errors.AuthError, errors.PermissionDenied, errors.OperationUnavailable,
        errors.NotFound, errors.Conflict, errors.RateLimited, errors.ServerError, errors.OperationFailed,
        errors.CapacityError, errors.QuotaError,
    ]
    assert all(issubclass(cls, errors.CrusoeError) for cls in leaves)
    assert not issubclass(errors.RequestNotSent, errors.APIError)
    assert not issubclass(errors.NoResponse, errors.APIError)
    assert issubclass(errors.OperationTimeout, TimeoutError)


def test_every_class_is_in_the_tree_of_the_module_docstring() -> None:
    names = [n for n, v in vars(errors).items() if isinstance(v, type) and issubclass(v, errors.CrusoeError)]
    assert all(name in (errors.__doc__ or "") for name in names)
