"""Nebius errors: a gRPC status code plus a `google.rpc.Status` whose details hold `Any(ServiceError)`.

The real API sends the Status in the `grpc-status-details-bin` trailer of a failed call, and the same Status
in `Operation.status` of a failed operation (research §6). `ServiceError.code` is the name of the detail
message ("NotEnoughResources", "QuotaFailure", "PermissionDenied", ...), as in the real errors quoted by the
research.
"""

from __future__ import annotations

from typing import NoReturn, TypedDict, Unpack

import grpc

from ..core.world import WorldError
from ._pb.google.protobuf import Any
from ._pb.google.rpc import Status
from ._pb.nebius.common import v1 as common

SERVICE = "compute"
IAM_SERVICE = "iam"  # ServiceError.service of the token exchange's errors (inference: no real one was seen)
STATUS_DETAILS_KEY = "grpc-status-details-bin"
SCHEDULE_TIMEOUT = "VM schedule timeout, most likely due to insufficient hardware resources"
# Echoed client values are clipped and violations capped, so an error fits the 8 KiB gRPC metadata limit.
MAX_ECHO = 256
MAX_VIOLATIONS = 10


def clip(value: str) -> str:
    """`value` as echoed in an error: at most MAX_ECHO characters."""
    return value if len(value) <= MAX_ECHO else value[: MAX_ECHO - 3] + "..."


class ApiError(Exception):
    """A failed call or operation: gRPC code, user-readable message and an optional ServiceError.

    `rich=False` marks transport-level failures (a reset connection, an overloaded proxy) that carry no
    `grpc-status-details-bin` trailer.
    """

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        error: common.ServiceError | None = None,
        *,
        rich: bool = True,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.error = error
        self.rich = rich

    def status(self) -> Status:
        details = [Any.pack(self.error)] if self.error is not None else []
        return Status(code=self.code.value[0], message=self.message, details=details)

    def abort(self, context: grpc.ServicerContext) -> NoReturn:
        """End the call with this error (raises, as `ServicerContext.abort` does)."""
        if self.rich:
            context.set_trailing_metadata(((STATUS_DETAILS_KEY, bytes(self.status())),))
        context.abort(self.code, self.message)


class _Detail(TypedDict, total=False):
    """What a ServiceError carries besides service and code: one detail (its `details` oneof), a retry type."""

    bad_request: common.BadRequest
    bad_resource_state: common.BadResourceState
    resource_not_found: common.ResourceNotFound
    resource_already_exists: common.ResourceAlreadyExists
    out_of_range: common.OutOfRange
    permission_denied: common.PermissionDenied
    resource_conflict: common.ResourceConflict
    operation_aborted: common.OperationAborted
    operation_conflict: common.OperationConflict
    too_many_requests: common.TooManyRequests
    quota_failure: common.QuotaFailure
    not_enough_resources: common.NotEnoughResources
    internal_error: common.InternalError
    retry_type: common.ServiceErrorRetryType


def _service_error(code: str, service: str = SERVICE, **detail: Unpack[_Detail]) -> common.ServiceError:
    return common.ServiceError(service=service, code=code, **detail)


def bad_request(violations: list[tuple[str, str]], service: str = SERVICE) -> ApiError:
    """INVALID_ARGUMENT with one BadRequest violation per (field path, message), at most MAX_VIOLATIONS. The
    status message is "<field> - <message>" as in a live answer (real-clouds.md §2, the spot row); joining several
    with "; " is an inference."""
    violations = violations[:MAX_VIOLATIONS]
    items = [common.BadRequestViolation(field=f, message=clip(m)) for f, m in violations]
    message = "; ".join(f"{f} - {clip(m)}" for f, m in violations)
    error = _service_error("BadRequest", service, bad_request=common.BadRequest(violations=items))
    return ApiError(grpc.StatusCode.INVALID_ARGUMENT, message, error)


def not_found(resource_id: str, what: str = "resource") -> ApiError:
    resource_id = clip(resource_id)
    error = _service_error(
        "ResourceNotFound", resource_not_found=common.ResourceNotFound(resource_id=resource_id)
    )
    return ApiError(grpc.StatusCode.NOT_FOUND, f"{what} {resource_id} not found", error)


def permission_denied(resource_id: str) -> ApiError:
    resource_id = clip(resource_id)
    error = _service_error(
        "PermissionDenied", permission_denied=common.PermissionDenied(resource_id=resource_id)
    )
    return ApiError(grpc.StatusCode.PERMISSION_DENIED, f"permission denied for {resource_id}", error)


def unauthenticated(message: str) -> ApiError:
    return ApiError(grpc.StatusCode.UNAUTHENTICATED, message)


def already_exists(resource_id: str, name: str) -> ApiError:
    detail = common.ResourceAlreadyExists(resource_id=resource_id)
    error = _service_error("ResourceAlreadyExists", resource_already_exists=detail)
    return ApiError(grpc.StatusCode.ALREADY_EXISTS, f"instance with name {name!r} already exists", error)


def operation_conflict(resource_id: str, operation_id: str) -> ApiError:
    detail = common.OperationConflict(conflicting_operation_id=operation_id, resource_id=resource_id)
    error = _service_error("OperationConflict", operation_conflict=detail)
    message = f"operation {operation_id} is in progress on {resource_id}"
    return ApiError(grpc.StatusCode.FAILED_PRECONDITION, message, error)


def bad_resource_state(resource_id: str, message: str) -> ApiError:
    detail = common.BadResourceState(resource_id=resource_id, message=message)
    return ApiError(
        grpc.StatusCode.FAILED_PRECONDITION,
        message,
        _service_error("BadResourceState", bad_resource_state=detail),
    )


def resource_conflict(resource_id: str, message: str) -> ApiError:
    """A stale `resource_version` (research §2: code undocumented; ABORTED is gRPC's optimistic-lock code)."""
    detail = common.ResourceConflict(resource_id=resource_id, message=message)
    return ApiError(
        grpc.StatusCode.ABORTED, message, _service_error("ResourceConflict", resource_conflict=detail)
    )


def too_many_requests(violation: str) -> ApiError:
    error = _service_error(
        "TooManyRequests",
        too_many_requests=common.TooManyRequests(violation=violation),
        retry_type=common.ServiceErrorRetryType.CALL,
    )
    return ApiError(grpc.StatusCode.RESOURCE_EXHAUSTED, f"too many requests: {violation}", error)


def unavailable(message: str) -> ApiError:
    return ApiError(grpc.StatusCode.UNAVAILABLE, message, rich=False)


def internal(request_id: str, message: str = "internal error") -> ApiError:
    error = _service_error("InternalError", internal_error=common.InternalError(request_id=request_id))
    return ApiError(grpc.StatusCode.INTERNAL, message, error)


def not_enough_resources(preset: str) -> ApiError:
    violation = common.NotEnoughResourcesViolation(
        resource_type="virtualMachine", requested=preset, message=SCHEDULE_TIMEOUT
    )
    detail = common.NotEnoughResources(violations=[violation])
    error = _service_error("NotEnoughResources", not_enough_resources=detail)
    return ApiError(grpc.StatusCode.RESOURCE_EXHAUSTED, f"Not enough resources: {SCHEDULE_TIMEOUT}", error)


def quota_failure(quota: str, limit: int, requested: int) -> ApiError:
    violation = common.QuotaFailureViolation(
        quota=quota, limit=str(limit), requested=str(requested), message="quota exceeded"
    )
    error = _service_error("QuotaFailure", quota_failure=common.QuotaFailure(violations=[violation]))
    return ApiError(
        grpc.StatusCode.RESOURCE_EXHAUSTED, f"Quota limit exceeded: {quota}, {requested} of {limit}", error
    )


def operation_aborted(operation_id: str, aborted_by: str, resource_id: str) -> ApiError:
    detail = common.OperationAborted(
        operation_id=operation_id, aborted_by_operation_id=aborted_by, resource_id=resource_id
    )
    error = _service_error("OperationAborted", operation_aborted=detail)
    return ApiError(
        grpc.StatusCode.ABORTED, f"operation aborted by {aborted_by or 'another operation'}", error
    )


def from_world_error(exc: WorldError) -> ApiError:
    """The Nebius rendering of a refusal by the simulation core."""
    if exc.kind == "conflict":
        if exc.operation_id:
            return operation_conflict(exc.resource_id, exc.operation_id)
        return bad_resource_state(exc.resource_id, exc.message)  # e.g. Stop of a STOPPED instance (inference)
    builder = _WORLD_ERRORS.get(exc.kind)
    if builder is None:
        return ApiError(grpc.StatusCode.INTERNAL, "internal error")
    return builder(exc)


_WORLD_ERRORS = {
    "not_found": lambda exc: not_found(exc.resource_id, "instance"),
    "invalid": lambda exc: bad_request([("", exc.message)]),
    "capacity": lambda exc: ApiError(grpc.StatusCode.RESOURCE_EXHAUSTED, exc.message),
    "quota": lambda exc: ApiError(grpc.StatusCode.RESOURCE_EXHAUSTED, exc.message),
}
