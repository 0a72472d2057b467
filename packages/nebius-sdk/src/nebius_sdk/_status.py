"""Turn a non-OK gRPC status (an RPC's trailers or an Operation's `status`) into a typed `APIError`.

A Nebius error is a `google.rpc.Status` whose `details` hold `Any(nebius.common.v1.ServiceError)`; on an RPC
it travels in the `grpc-status-details-bin` trailer. The class comes from two tables: (code, ServiceError
detail) first, then the code alone. No message text is ever inspected.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import betterproto2

from . import errors
from ._pb.google.rpc import Status
from ._pb.message_pool import default_message_pool
from ._pb.nebius.common import v1 as common  # registers ServiceError in the message pool for Any.unpack()
from .errors import Code

STATUS_DETAILS_KEY = "grpc-status-details-bin"
REQUEST_ID_KEY = "x-request-id"
TRACE_ID_KEY = "x-trace-id"

# ServiceError.code values for errors sent without the `details` oneof set.
_DETAIL_OF_PROVIDER_CODE = {
    "NotEnoughResources": "not_enough_resources",
    "QuotaFailure": "quota_failure",
    "TooManyRequests": "too_many_requests",
    "OperationConflict": "operation_conflict",
    "OperationAborted": "operation_aborted",
    "ResourceAlreadyExists": "resource_already_exists",
    "ResourceNotFound": "resource_not_found",
    "BadRequest": "bad_request",
}

_BY_DETAIL: dict[tuple[Code, str], type[errors.APIError]] = {
    (Code.RESOURCE_EXHAUSTED, "not_enough_resources"): errors.CapacityError,
    (Code.RESOURCE_EXHAUSTED, "quota_failure"): errors.QuotaError,
    (Code.RESOURCE_EXHAUSTED, "too_many_requests"): errors.RateLimited,
    (Code.FAILED_PRECONDITION, "operation_conflict"): errors.Conflict,
    (Code.ABORTED, "operation_conflict"): errors.Conflict,
    (Code.ABORTED, "operation_aborted"): errors.Conflict,
}

_BY_CODE: dict[Code, type[errors.APIError]] = {
    Code.INVALID_ARGUMENT: errors.InvalidArgument,
    Code.OUT_OF_RANGE: errors.InvalidArgument,
    Code.NOT_FOUND: errors.NotFound,
    Code.ALREADY_EXISTS: errors.AlreadyExists,
    Code.FAILED_PRECONDITION: errors.Conflict,
    Code.ABORTED: errors.Conflict,
    Code.UNAUTHENTICATED: errors.AuthError,
    Code.PERMISSION_DENIED: errors.PermissionDenied,
    Code.RESOURCE_EXHAUSTED: errors.RateLimited,  # on an RPC without details: gRPC's "slow down"
    Code.UNAVAILABLE: errors.Unavailable,
    Code.DEADLINE_EXCEEDED: errors.Unavailable,
}

# An operation's final status: RESOURCE_EXHAUSTED there means the work could not be placed, never "slow down".
_BY_CODE_FOR_OPERATION: dict[Code, type[errors.APIError]] = {
    **_BY_CODE,
    Code.RESOURCE_EXHAUSTED: errors.CapacityError,
}


def decode_service_error(details: Iterable[Any]) -> common.ServiceError | None:
    """The first `ServiceError` among a Status's `details` (Any messages); unknown types are skipped."""
    for detail in details:
        message = unpack(detail)
        if isinstance(message, common.ServiceError):
            return message
    return None


def unpack(detail: Any) -> betterproto2.Message | None:
    """The message packed in an `Any`, or None for a type this SDK does not know. The type is the last
    '/'-separated part of the type URL, whatever comes before it (protobuf's rule for `Any`, and how the vendor's
    SDK resolves details: pysdk `nebius/base/protos/registry.py`), not only `type.googleapis.com/...`."""
    name = detail.type_url.rpartition("/")[2]
    for url, message_type in default_message_pool.url_to_type.items():
        if name and url.rpartition("/")[2] == name:
            return message_type.parse(detail.value)
    return None


def detail_kind(service_error: common.ServiceError | None) -> str:
    """The `details` oneof member that is set (e.g. "not_enough_resources"), else derived from `code`."""
    if service_error is None:
        return ""
    name, _ = betterproto2.which_one_of(service_error, "details")
    return name or _DETAIL_OF_PROVIDER_CODE.get(service_error.code, "")


def error_class(
    code: Code, service_error: common.ServiceError | None, *, operation: bool
) -> type[errors.APIError]:
    by_detail = _BY_DETAIL.get((code, detail_kind(service_error)))
    if by_detail is not None:
        return by_detail
    table = _BY_CODE_FOR_OPERATION if operation else _BY_CODE
    fallback = errors.OperationFailed if operation else errors.APIError
    return table.get(code, fallback)


def operation_error(status: Status, *, operation_id: str, target: str = "") -> errors.APIError:
    """The typed error for an operation that finished with a non-OK `status`."""
    code = Code(status.code)
    service_error = decode_service_error(status.details)
    cls = error_class(code, service_error, operation=True)
    return cls(code, status.message, service_error=service_error, operation_id=operation_id, target=target)


def status_error(status: Status, *, method: str, target: str) -> errors.APIError:
    """The typed error a per-item `google.rpc.Status` stands for (e.g. one entry of a BatchGet answer),
    classified exactly as the same status on a failed RPC would be."""
    code = Code(status.code)
    service_error = decode_service_error(status.details)
    cls = error_class(code, service_error, operation=False)
    return cls(code, status.message, service_error=service_error, method=method, target=target)


def rpc_error(exc: Any, *, method: str, target: str) -> errors.APIError:
    """The typed error for a failed RPC (`exc` is a `grpc.RpcError` that is also a `grpc.Call`)."""
    code = Code(exc.code().value[0])
    metadata = _metadata(exc)
    service_error = _trailer_service_error(metadata)
    cls = error_class(code, service_error, operation=False)
    return cls(
        code,
        exc.details() or "",
        service_error=service_error,
        request_id=metadata.get(REQUEST_ID_KEY, ""),
        trace_id=metadata.get(TRACE_ID_KEY, ""),
        method=method,
        target=target,
    )


def request_id(metadata: Any) -> str:
    """The `x-request-id` among response metadata pairs ("" when absent)."""
    return next((value for key, value in metadata or () if key == REQUEST_ID_KEY), "")


def _metadata(exc: Any) -> dict[str, Any]:
    """Initial and trailing metadata of a failed call, as one dict (trailing entries win)."""
    merged: dict[str, Any] = {}
    for part in (exc.initial_metadata(), exc.trailing_metadata()):
        for key, value in part or ():
            merged[key] = value
    return merged


def _trailer_service_error(metadata: dict[str, Any]) -> common.ServiceError | None:
    raw = metadata.get(STATUS_DETAILS_KEY)
    if not raw:
        return None
    try:
        status = Status.parse(raw)
    except Exception:  # noqa: BLE001 - a corrupt trailer must not hide the RPC error itself
        return None
    return decode_service_error(status.details)
