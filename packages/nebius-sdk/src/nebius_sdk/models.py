"""The typed models of the API: betterproto2 messages generated from `protos/` (see `nebius_sdk._pb`).

Re-exported here so callers never import the generated package directly. Unknown enum values from a newer
server decode to a placeholder member and unknown fields are kept, so newer servers do not break this SDK.
Importing this module loads grpc and the generated code.
"""

from __future__ import annotations

from ._pb.google.rpc import Status
from ._pb.nebius.common.v1 import (
    BadRequestViolation,
    NotEnoughResourcesViolation,
    QuotaFailureViolation,
    ResourceMetadata,
    ServiceError,
)
from ._pb.nebius.common.v1 import Operation as RawOperation
from ._pb.nebius.compute.v1 import (
    AttachedDiskSpec,
    AttachedDiskSpecAttachMode,
    DiskSpec,
    DiskSpecDiskType,
    ExistingDisk,
    Instance,
    InstanceGpuClusterSpec,
    InstanceRecoveryPolicy,
    InstanceSpec,
    InstanceStatus,
    InstanceStatusInstanceState,
    IpAddress,
    ManagedDisk,
    NetworkInterfaceSpec,
    Platform,
    PreemptibleSpec,
    PreemptibleSpecPreemptionPolicy,
    Preset,
    PublicIpAddress,
    ReservationPolicy,
    ReservationPolicyPolicy,
    ResourcesSpec,
    SourceImageFamily,
    SpotPricingPolicySpec,
)

InstanceState = InstanceStatusInstanceState

__all__ = [
    "AttachedDiskSpec",
    "AttachedDiskSpecAttachMode",
    "BadRequestViolation",
    "DiskSpec",
    "DiskSpecDiskType",
    "ExistingDisk",
    "Instance",
    "InstanceGpuClusterSpec",
    "InstanceRecoveryPolicy",
    "InstanceSpec",
    "InstanceState",
    "InstanceStatus",
    "InstanceStatusInstanceState",
    "IpAddress",
    "ManagedDisk",
    "NetworkInterfaceSpec",
    "NotEnoughResourcesViolation",
    "Platform",
    "PreemptibleSpec",
    "PreemptibleSpecPreemptionPolicy",
    "Preset",
    "PublicIpAddress",
    "QuotaFailureViolation",
    "RawOperation",
    "ReservationPolicy",
    "ReservationPolicyPolicy",
    "ResourceMetadata",
    "ResourcesSpec",
    "ServiceError",
    "SourceImageFamily",
    "SpotPricingPolicySpec",
    "Status",
    "instance_state",
    "is_preemptible",
    "private_ip",
    "public_ip",
]


def instance_state(instance: Instance) -> InstanceStatusInstanceState:
    """The instance's state; UNSPECIFIED when the server sent no status yet."""
    return instance.status.state if instance.status is not None else InstanceStatusInstanceState.UNSPECIFIED


def is_preemptible(instance: Instance) -> bool:
    """A preemptible (spot) instance: `spec.preemptible` set, or a spot member of the `pricing_model` oneof."""
    spec = instance.spec
    return spec is not None and (
        spec.preemptible is not None or spec.follows_spot_price is not None or spec.spot_pricing_policy is not None
    )


def public_ip(instance: Instance) -> str | None:
    """The first public IPv4 address without its "/32" suffix, or None."""
    for nic in instance.status.network_interfaces if instance.status else ():
        if nic.public_ip_address is not None and nic.public_ip_address.address:
            return nic.public_ip_address.address.split("/")[0]
    return None


def private_ip(instance: Instance) -> str | None:
    """The first private IPv4 address without its "/32" suffix, or None."""
    for nic in instance.status.network_interfaces if instance.status else ():
        if nic.ip_address is not None and nic.ip_address.address:
            return nic.ip_address.address.split("/")[0]
    return None
