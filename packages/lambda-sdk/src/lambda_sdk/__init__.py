"""lambda_sdk: a typed client of the Lambda Cloud REST API.

    from lambda_sdk import LambdaClient
    client = LambdaClient()  # $LAMBDA_API_KEY, https://cloud.lambda.ai/api/v1
    op = client.launch_instance(region_name="us-east-1", instance_type_name="gpu_1x_a10",
                                ssh_key_names=["me"], name="web-1")
    instance = op.result(timeout=1800)  # active, with an IP

Importing the package is cheap: `requests` and `msgspec` load when a client or a model is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import (
    Aborted,
    APIError,
    AuthError,
    CapacityError,
    Conflict,
    ConnectError,
    Forbidden,
    InvalidParameters,
    LambdaError,
    NotFound,
    OperationFailed,
    OperationTimeout,
    PaginationLoop,
    PagingLoopError,
    QuotaError,
    RateLimited,
    RequestNotSent,
    ReservedInstanceError,
    ResponseNotReceived,
    ServerError,
    TransportError,
)

if TYPE_CHECKING:
    from ._operation import LaunchOperation
    from ._pager import Page, Pager
    from ._policy import PollPolicy, RateLimit, RetryPolicy
    from .client import LambdaClient
    from .models import (
        ActionAvailability,
        Architecture,
        Filesystem,
        FileSystemMount,
        FirewallProtocol,
        FirewallRule,
        GeneratedSSHKey,
        Image,
        ImageSpec,
        Instance,
        InstanceActions,
        InstanceStatus,
        InstanceType,
        InstanceTypeAvailability,
        InstanceTypeSpecs,
        Region,
        Reservation,
        SSHKey,
        Tag,
        User,
    )

_MODELS = (
    "ActionAvailability", "Architecture", "FileSystemMount", "Filesystem", "FirewallProtocol", "FirewallRule",
    "GeneratedSSHKey", "Image",
    "ImageSpec", "Instance", "InstanceActions", "InstanceStatus", "InstanceType", "InstanceTypeAvailability",
    "InstanceTypeSpecs", "Region", "Reservation", "SSHKey", "Tag", "User",
)
# Public names loaded on first access (PEP 562): `import lambda_sdk` pulls in neither requests nor msgspec.
_LAZY = {
    "LambdaClient": "client",
    "LaunchOperation": "_operation",
    "Page": "_pager",
    "Pager": "_pager",
    "PollPolicy": "_policy",
    "RateLimit": "_policy",
    "RetryPolicy": "_policy",
    **dict.fromkeys(_MODELS, "models"),
}

__all__ = [
    "APIError", "Aborted", "ActionAvailability", "Architecture", "AuthError", "CapacityError", "Conflict",
    "ConnectError", "FileSystemMount", "Filesystem", "FirewallProtocol", "FirewallRule", "Forbidden",
    "GeneratedSSHKey", "Image", "ImageSpec", "Instance",
    "InstanceActions", "InstanceStatus", "InstanceType", "InstanceTypeAvailability", "InstanceTypeSpecs",
    "InvalidParameters", "LambdaClient", "LambdaError", "LaunchOperation", "NotFound", "OperationFailed",
    "OperationTimeout", "Page", "Pager", "PaginationLoop", "PagingLoopError", "PollPolicy", "QuotaError",
    "RateLimit", "RateLimited", "Region", "RequestNotSent", "Reservation", "ReservedInstanceError",
    "ResponseNotReceived", "RetryPolicy", "SSHKey", "ServerError", "Tag", "TransportError", "User",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lambda_sdk' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
