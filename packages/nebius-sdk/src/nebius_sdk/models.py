"""The typed models of the API: betterproto2 messages generated from `protos/` (see `nebius_sdk._pb`).

Re-exported here so callers never import the generated package directly. Unknown enum values from a newer
server decode to a placeholder member and unknown fields are kept, so newer servers do not break this SDK.
`Tenant`, `Project` and `Subnet` are small typed views of IAM `Container`s and a VPC `Subnet` message (what
discovering a tenant's regions and a project's subnet needs), each keeping the message as `raw`.
Importing this module loads grpc and the generated code.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._pb.google.rpc import Status
from ._pb.nebius.billing.v1 import PricingPolicy, PricingPolicyStatusSchedulingState
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
    Disk,
    DiskSpec,
    DiskSpecDiskType,
    ExistingDisk,
    FollowsSpotPriceSpec,
    GpuCluster,
    GpuClusterSpec,
    Image,
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
from ._pb.nebius.iam.v1 import Container, ContainerSpec, ContainerStatus
from ._pb.nebius.vpc.v1 import (
    RuleAccessAction,
    RuleEgress,
    RuleIngress,
    RuleProtocol,
    SecurityGroup,
    SecurityRule,
    SecurityRuleSpec,
    SubnetSpec,
    SubnetStatus,
    SubnetStatusState,
)
from ._pb.nebius.vpc.v1 import Subnet as SubnetMessage

InstanceState = InstanceStatusInstanceState
SubnetState = SubnetStatusState

__all__ = [
    "AttachedDiskSpec",
    "AttachedDiskSpecAttachMode",
    "BadRequestViolation",
    "Container",
    "ContainerSpec",
    "ContainerStatus",
    "Disk",
    "DiskSpec",
    "DiskSpecDiskType",
    "ExistingDisk",
    "FollowsSpotPriceSpec",
    "GpuCluster",
    "GpuClusterSpec",
    "Image",
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
    "PricingPolicy",
    "PricingPolicyStatusSchedulingState",
    "Project",
    "PublicIpAddress",
    "QuotaFailureViolation",
    "RawOperation",
    "ReservationPolicy",
    "ReservationPolicyPolicy",
    "ResourceMetadata",
    "ResourcesSpec",
    "RuleAccessAction",
    "RuleEgress",
    "RuleIngress",
    "RuleProtocol",
    "SecurityGroup",
    "SecurityRule",
    "SecurityRuleSpec",
    "ServiceError",
    "SourceImageFamily",
    "SpotPricingPolicySpec",
    "Status",
    "Subnet",
    "SubnetMessage",
    "SubnetSpec",
    "SubnetState",
    "SubnetStatus",
    "SubnetStatusState",
    "Tenant",
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


@dataclass(frozen=True)
class Project:
    """A project: the IAM `Container` (`nebius.iam.v1.ProjectService`) whose parent is a tenant. Each project and its
    resources belong to one region. `raw` is the message as received."""

    id: str  # project-e00...
    name: str
    tenant_id: str  # tenant-e00..., metadata.parent_id
    region: str  # status.region, else spec.region; "" when the server says neither
    raw: Container

    @classmethod
    def of(cls, container: Container) -> Project:
        metadata, spec, status = container.metadata, container.spec, container.status
        region = (status.region if status is not None else "") or (spec.region if spec is not None else "")
        return cls(
            id=metadata.id if metadata is not None else "",
            name=metadata.name if metadata is not None else "",
            tenant_id=metadata.parent_id if metadata is not None else "",
            region=region,
            raw=container,
        )


@dataclass(frozen=True)
class Subnet:
    """A VPC subnet (`nebius.vpc.v1.SubnetService`) of a project; instances take their network interface's addresses
    from one. `raw` is the message as received."""

    id: str  # vpcsubnet-e00...
    name: str  # the subnet a project is created with is named default-subnet-...
    project_id: str  # metadata.parent_id
    network_id: str  # vpcnetwork-..., spec.network_id
    state: SubnetStatusState  # STATE_UNSPECIFIED when the server sent no status
    raw: SubnetMessage

    @classmethod
    def of(cls, message: SubnetMessage) -> Subnet:
        metadata = message.metadata
        return cls(
            id=metadata.id if metadata is not None else "",
            name=metadata.name if metadata is not None else "",
            project_id=metadata.parent_id if metadata is not None else "",
            network_id=message.spec.network_id if message.spec is not None else "",
            state=message.status.state if message.status is not None else SubnetStatusState.STATE_UNSPECIFIED,
            raw=message,
        )


@dataclass(frozen=True)
class Tenant:
    """A tenant: the IAM `Container` (`nebius.iam.v1.TenantService`) at the top of the hierarchy, the parent of
    projects. A tenant has no region. `raw` is the message as received."""

    id: str  # tenant-e00...
    name: str
    raw: Container

    @classmethod
    def of(cls, container: Container) -> Tenant:
        metadata = container.metadata
        return cls(id=metadata.id if metadata is not None else "", name=metadata.name if metadata is not None else "",
                   raw=container)
