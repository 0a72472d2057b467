"""nebius-sdk: a typed, standalone client of the Nebius AI Cloud compute gRPC API (and of the IAM projects and VPC
subnets that say where to create).

    from nebius_sdk import NebiusClient, ServiceAccount
    with NebiusClient(parent_id="project-e00...") as client:       # token from $NEBIUS_IAM_TOKEN
        op = client.begin_create_instance("vm-1", "gpu-h100-sxm", "1gpu-16vcpu-200gb", subnet_id="vpcsubnet-")
        instance = op.result(timeout=1800)
    NebiusClient(ServiceAccount.from_credentials_file("~/.nebius/credentials.json"), parent_id=...)  # renewed

Importing this package is cheap: grpc and the generated code load on first use of a name that needs them
(PEP 562 `__getattr__`). The exceptions in `nebius_sdk.errors` never need grpc.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._backoff import Backoff, PollPolicy, RetryPolicy
from ._pager import Page, Pager
from .errors import (
    AlreadyExists,
    APIError,
    AuthError,
    CapacityError,
    Code,
    Conflict,
    CredentialsError,
    InvalidArgument,
    NebiusError,
    NotFound,
    OperationFailed,
    OperationTimeout,
    PaginationLoop,
    PermissionDenied,
    QuotaError,
    RateLimited,
    RequestNotSent,
    Unavailable,
    Unreachable,
)

if TYPE_CHECKING:
    from ._operation import Operation
    from .auth import ServiceAccount, StaticToken, TokenCommand, TokenFile, TokenSource
    from .client import InstanceStatusSummary, NebiusClient
    from .endpoints import DEFAULT_DOMAIN, service_address
    from .specs import (
        build_instance_spec,
        existing_boot_disk,
        managed_boot_disk,
        network_interface,
        reservation_policy,
    )

__version__ = "0.1.0"

# name -> module that defines it; loaded on first attribute access.
_LAZY = {
    "NebiusClient": ".client",
    "ServiceAccount": ".auth",
    "StaticToken": ".auth",
    "TokenCommand": ".auth",
    "TokenFile": ".auth",
    "TokenSource": ".auth",
    "DEFAULT_DOMAIN": ".endpoints",
    "service_address": ".endpoints",
    "Operation": "._operation",
    "InstanceStatusSummary": ".client",
    "build_instance_spec": ".specs",
    "existing_boot_disk": ".specs",
    "managed_boot_disk": ".specs",
    "network_interface": ".specs",
    "reservation_policy": ".specs",
}

__all__ = [
    "DEFAULT_DOMAIN",
    "APIError",
    "AlreadyExists",
    "AuthError",
    "Backoff",
    "CapacityError",
    "Code",
    "Conflict",
    "CredentialsError",
    "InstanceStatusSummary",
    "InvalidArgument",
    "NebiusClient",
    "NebiusError",
    "NotFound",
    "Operation",
    "OperationFailed",
    "OperationTimeout",
    "Page",
    "Pager",
    "PaginationLoop",
    "PermissionDenied",
    "PollPolicy",
    "QuotaError",
    "RateLimited",
    "RequestNotSent",
    "RetryPolicy",
    "ServiceAccount",
    "StaticToken",
    "TokenCommand",
    "TokenFile",
    "TokenSource",
    "Unavailable",
    "Unreachable",
    "build_instance_spec",
    "existing_boot_disk",
    "managed_boot_disk",
    "network_interface",
    "reservation_policy",
    "service_address",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nebius_sdk' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
