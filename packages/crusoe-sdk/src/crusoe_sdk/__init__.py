"""crusoe_sdk: a typed, standalone client of the Crusoe Cloud REST API.

    from crusoe_sdk import CrusoeClient
    client = CrusoeClient()            # CRUSOE_ACCESS_KEY_ID / CRUSOE_SECRET_KEY / CRUSOE_DEFAULT_PROJECT
    vm = client.begin_create_instance(name=..., type=..., location=..., ssh_public_key=...).result()

Importing the package is cheap: requests and msgspec load when a name that needs them is first used
(PEP 562 `__getattr__`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> submodule that defines it
_EXPORTS: dict[str, str] = {
    "CrusoeClient": "client",
    "Operation": "_operation",
    "Pager": "_pager",
    "Page": "_pager",
    "RetryPolicy": "_backoff",
    "PollPolicy": "_backoff",
    **{
        name: "errors"
        for name in (
            "CrusoeError", "RequestNotSent", "ConnectError", "NoResponse", "PaginationLoop", "ProjectUnresolved",
            "OperationTimeout", "APIError", "BadRequest", "AuthError", "PermissionDenied", "ProjectUnavailable",
            "OperationUnavailable", "NotFound", "Conflict", "RateLimited", "ServerError", "OperationFailed",
            "CapacityError", "QuotaError",
        )
    },
    **{
        name: "models"
        for name in (
            "Instance", "InstanceState", "InstanceAction", "OperationRecord", "OperationState", "Project",
            "VMType", "Image", "Capacity", "Quota", "Reservation", "LowestCost", "OnDemand", "ById",
            "ReservationSpecification", "DiskAttachment", "NetworkInterface", "AttachedDisk", "ErrorBody",
            "HostChannelAdapterRequest",
        )
    },
    **{
        name: "resources"
        for name in ("Disk", "DiskVMAttachment", "IBNetwork", "IBNetworkCapacity", "IBPartition", "VPCSubnet",
                     "SSHKey", "OrgQuota")
    },
}

# Written out (the keys of _EXPORTS, sorted) so that type checkers see the re-exports.
__all__ = [
    "APIError", "AttachedDisk", "AuthError", "BadRequest", "ById", "Capacity", "CapacityError", "Conflict",
    "ConnectError", "CrusoeClient", "CrusoeError", "Disk", "DiskAttachment", "DiskVMAttachment", "ErrorBody",
    "HostChannelAdapterRequest", "IBNetwork", "IBNetworkCapacity", "IBPartition", "Image", "Instance",
    "InstanceAction", "InstanceState", "LowestCost", "NetworkInterface", "NoResponse", "NotFound", "OnDemand",
    "Operation", "OperationFailed", "OperationRecord", "OperationState", "OperationTimeout", "OperationUnavailable",
    "OrgQuota", "Page", "Pager", "PaginationLoop", "PermissionDenied", "PollPolicy", "Project",
    "ProjectUnavailable", "ProjectUnresolved", "Quota", "QuotaError", "RateLimited", "RequestNotSent",
    "Reservation", "ReservationSpecification", "RetryPolicy", "SSHKey", "ServerError", "VMType", "VPCSubnet",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'crusoe_sdk' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # static view of the lazy names above
    from ._backoff import PollPolicy, RetryPolicy  # noqa: F401
    from ._operation import Operation  # noqa: F401
    from ._pager import Page, Pager  # noqa: F401
    from .client import CrusoeClient  # noqa: F401
    from .errors import (  # noqa: F401
        APIError,
        AuthError,
        BadRequest,
        CapacityError,
        Conflict,
        ConnectError,
        CrusoeError,
        NoResponse,
        NotFound,
        OperationFailed,
        OperationTimeout,
        OperationUnavailable,
        PaginationLoop,
        PermissionDenied,
        ProjectUnavailable,
        ProjectUnresolved,
        QuotaError,
        RateLimited,
        RequestNotSent,
        ServerError,
    )
    from .models import (  # noqa: F401
        AttachedDisk,
        ById,
        Capacity,
        DiskAttachment,
        ErrorBody,
        HostChannelAdapterRequest,
        Image,
        Instance,
        InstanceAction,
        InstanceState,
        LowestCost,
        NetworkInterface,
        OnDemand,
        OperationRecord,
        OperationState,
        Project,
        Quota,
        Reservation,
        ReservationSpecification,
        VMType,
    )
    from .resources import (  # noqa: F401
        Disk,
        DiskVMAttachment,
        IBNetwork,
        IBNetworkCapacity,
        IBPartition,
        OrgQuota,
        SSHKey,
        VPCSubnet,
    )
