"""Request bodies of the VM endpoints (swagger `InstancesPostRequestV1Alpha5` and `...PatchRequest...`).

Field names and enums are the real ones. Decoding is strict about types; unknown fields are rejected, which is
stricter than the real Go server (mock extension: it catches client typos that the real API would ignore).
"""

from __future__ import annotations

from typing import Literal

import msgspec

MaintenancePolicy = Literal["manual", "stop-vm", "unspecified"]


class _Body(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Base of every request body: unknown fields are a 400."""


class ReservationSpecification(_Body):
    """`{"selection_strategy": "lowest_cost" | "on_demand"}` or `{"id": "<reservation id>"}`, not both."""

    selection_strategy: Literal["lowest_cost", "on_demand"] | None = None
    id: str | None = None


class DiskAttachment(_Body):
    disk_id: str
    mode: Literal["read-only", "read-write"] = "read-write"
    attachment_type: Literal["os", "data"] = "data"


class PublicIpv4(_Body):
    type: Literal["static", "dynamic"] = "dynamic"
    address: str = ""
    id: str = ""


class PrivateIpv4(_Body):
    address: str = ""


class IpAddresses(_Body):
    private_ipv4: PrivateIpv4 | None = None
    public_ipv4: PublicIpv4 | None = None


class NetworkInterfaceSpec(_Body):
    """The swagger's full `NetworkInterface`; clients send only `subnet` and/or `ips[0].public_ipv4.type`."""

    subnet: str = ""
    ips: list[IpAddresses] = []
    id: str = ""
    name: str = ""
    network: str = ""
    interface_type: str = ""
    mac_address: str = ""
    external_dns_name: str = ""


class PartialHostChannelAdapter(_Body):
    transport_partition_id: str = ""
    ib_partition_id: str = ""  # deprecated alias of transport_partition_id


class VirtualizationFeatures(_Body):
    nested_virtualization: bool = False


class InstancesPostRequest(_Body):
    name: str
    type_: str = msgspec.field(name="type")
    location: str
    ssh_public_key: str
    image: str | None = None
    custom_image: str | None = None
    startup_script: str = ""
    shutdown_script: str = ""
    disks: list[DiskAttachment] = []
    network_interfaces: list[NetworkInterfaceSpec] = []
    host_channel_adapters: list[PartialHostChannelAdapter] = []
    reservation_specification: ReservationSpecification | None = None
    nvlink_domain_id: str = ""
    maintenance_policy: MaintenancePolicy = "unspecified"
    install_crusoe_watch_agent: bool = False
    crusoe_watch_agent_install_mode: Literal["docker", "native"] | None = None
    virtualization_features: VirtualizationFeatures | None = None
    commitment_period: int = 0


class PatchAction(msgspec.Struct):
    """Only the `action` of a PATCH body, read leniently first: the real API answers a body without a valid
    action (e.g. `{"state": "stopped"}`) with "invalid action" rather than a complaint about other fields."""

    action: str = ""


class InstancesPatchRequest(_Body):
    action: str
    type_: str | None = msgspec.field(name="type", default=None)
    reservation_id: str | None = None
    network_interfaces: list[NetworkInterfaceSpec] | None = None
    host_channel_adapters: list[PartialHostChannelAdapter] | None = None
    maintenance_policy: MaintenancePolicy | None = None
    commitment_period: int | None = None
