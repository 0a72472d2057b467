"""Request bodies of the VM endpoints (swagger `InstancesPostRequestV1Alpha5` and `...PatchRequest...`).

Field names and enums are the real ones. Decoding follows the real server, which is written in Go: unknown fields
are ignored and JSON `null` leaves a field at its zero value (`Call.body` drops nulls before decoding, see
`drop_nulls`); wrong types are a 400.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec


def drop_nulls(value: Any) -> Any:
    """`value` without the object members whose value is JSON `null`, at any depth: Go's decoder leaves such a
    field at its zero value, which is what omitting it does here (e.g. the official Go client's `"ips": null`)."""
    if isinstance(value, dict):
        return {key: drop_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [drop_nulls(item) for item in value]
    return value


class _Body(msgspec.Struct, kw_only=True):
    """Base of every request body: unknown fields are ignored, as Go's `encoding/json` does."""


class ReservationSpecification(_Body):
    """`{"selection_strategy": "lowest_cost" | "on_demand"}` or `{"id": "<reservation id>"}`, not both."""

    selection_strategy: Literal["lowest_cost", "on_demand"] | None = None
    id: str | None = None


class DiskAttachment(_Body):
    disk_id: str
    mode: Literal["read-only", "read-write", ""] = "read-write"  # "" (Go zero value) means read-write
    attachment_type: Literal["os", "data", ""] = "data"  # "" means data


class PublicIpv4(_Body):
    type: Literal["static", "dynamic", ""] = ""  # "" (the Go zero value) means dynamic
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
    maintenance_policy: str = "unspecified"  # a free string in the spec
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
    maintenance_policy: str | None = None
    commitment_period: int | None = None
