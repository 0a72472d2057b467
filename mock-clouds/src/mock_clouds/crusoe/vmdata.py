"""Crusoe-only facts about a VM (image, addresses, OS disk, IB adapters), kept in the core's `VM.native`.

Addresses follow the documented defaults: each project has a default VPC network with one default subnet per
location (172.27.0.0/20, 172.27.16.0/20, ... in location order); private IPs are static; dynamic public IPs
change on every start. Public addresses come from 198.18.0.0/15, a range reserved for benchmarking that never
routes anywhere (mock extension: real addresses are Crusoe's own).
"""

from __future__ import annotations

import ipaddress
import uuid

import msgspec

from ..core import ids
from ..core.models import VM, Provider
from ..core.world import World

_NAMESPACE = uuid.UUID("4c6f2a53-0d6c-4a8e-9a43-6d6f636b2d63")  # for stable ids of default networks
_PRIVATE_BASE = ipaddress.IPv4Address("172.27.0.0")
_SUBNET_SIZE = 4096  # a /20 per location
_PUBLIC_BASE = ipaddress.IPv4Address("198.18.0.0")
_PUBLIC_SIZE = 1 << 17  # 198.18.0.0/15
_COUNTERS = "crusoe_address_counters"  # key in world.state.extra_state
OS_DISK_SIZE = "128GiB"  # mock choice; the real size depends on the image


class PublicAddress(msgspec.Struct, kw_only=True):
    id: str
    address: str
    type: str  # "dynamic" | "static"


class NicRecord(msgspec.Struct, kw_only=True):
    id: str
    network: str
    subnet: str
    mac_address: str
    private_address: str
    public: PublicAddress


class DiskRecord(msgspec.Struct, kw_only=True):
    id: str
    name: str
    serial_number: str


class HcaRecord(msgspec.Struct, kw_only=True):
    guid: str
    ib_network_id: str
    transport_partition_id: str


class VmExtras(msgspec.Struct, kw_only=True):
    image: str
    maintenance_policy: str
    nvlink_domain_id: str
    nested_virtualization: bool
    nic: NicRecord
    os_disk: DiskRecord
    host_channel_adapters: list[HcaRecord] = []
    # The key the create sent. The real API never shows it back; the admin inventory does (mock extension).
    ssh_public_key: str = ""
    # What the create's startup_script was (its SHA-256 and size), never shown by the API either (mock extension).
    startup_script_sha256: str = ""
    startup_script_bytes: int = 0


def load(vm: VM) -> VmExtras:
    """The VM's Crusoe facts; VMs made without this front end (e.g. directly in the world) get stable
    defaults derived from their id, so rendering them never fails."""
    try:
        return msgspec.convert(vm.native, VmExtras)
    except msgspec.ValidationError:
        return _derived(vm)


def _derived(vm: VM) -> VmExtras:
    def stable(kind: str) -> str:
        return str(uuid.uuid5(_NAMESPACE, f"{kind}:{vm.id}"))

    host = uuid.UUID(stable("host")).int
    return VmExtras(
        image="ubuntu22.04:latest",
        maintenance_policy="unspecified",
        nvlink_domain_id="",
        nested_virtualization=False,
        nic=NicRecord(
            id=stable("nic"),
            network=default_network_id(vm.scope),
            subnet=default_subnet_id(vm.scope, vm.region),
            mac_address="02:" + ":".join(f"{(host >> (8 * i)) & 0xFF:02x}" for i in range(5)),
            private_address=str(_PRIVATE_BASE + 2 + host % (_SUBNET_SIZE - 4)),
            public=PublicAddress(id=stable("public-ip"), address=_derived_public(host), type="dynamic"),
        ),
        os_disk=DiskRecord(id=stable("disk"), name=f"{vm.name}-os-disk", serial_number=f"{host:019X}"[:19]),
    )


def to_native(extras: VmExtras) -> dict[str, object]:
    native: dict[str, object] = msgspec.to_builtins(extras)
    return native


def store(vm: VM, extras: VmExtras) -> None:
    vm.native = to_native(extras)


def _derived_public(host: int) -> str:
    return str(_PUBLIC_BASE + 1 + host % (_PUBLIC_SIZE - 2))


def default_network_id(project_id: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"vpc-network:{project_id}"))


def default_subnet_id(project_id: str, location: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"vpc-subnet:{project_id}:{location}"))


def ib_network_id(location: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"ib-network:{location}"))


def new_nic(world: World, project_id: str, location: str, subnet: str, public_type: str) -> NicRecord:
    return NicRecord(
        id=str(ids.random_uuid()),
        network=default_network_id(project_id),
        subnet=subnet or default_subnet_id(project_id, location),
        mac_address="02:" + ":".join(f"{b:02x}" for b in ids.random_bytes(5)),  # locally administered
        private_address=_private_address(world, location),
        public=PublicAddress(id=str(ids.random_uuid()), address=public_address(world), type=public_type),
    )


def new_os_disk(vm_name: str) -> DiskRecord:
    return DiskRecord(
        id=str(ids.random_uuid()), name=f"{vm_name}-os-disk", serial_number=ids.random_bytes(10).hex()[:19].upper()
    )


def new_hca(location: str, transport_partition_id: str) -> HcaRecord:
    guid = ":".join(ids.random_bytes(2).hex() for _ in range(4))
    return HcaRecord(
        guid=guid, ib_network_id=ib_network_id(location), transport_partition_id=transport_partition_id
    )


def public_address(world: World) -> str:
    return str(_PUBLIC_BASE + 1 + _next(world, "public") % (_PUBLIC_SIZE - 2))


def subnet_base(world: World, location: str) -> ipaddress.IPv4Address:
    """The network address of a location's default subnet (a /20, in location order)."""
    locations = list(world.config(Provider.CRUSOE).regions)
    subnet_index = locations.index(location) if location in locations else 0
    return _PRIVATE_BASE + subnet_index * _SUBNET_SIZE


def _private_address(world: World, location: str) -> str:
    host = 2 + _next(world, f"private:{location}") % (_SUBNET_SIZE - 4)
    return str(subnet_base(world, location) + host)


def _next(world: World, counter: str) -> int:
    counters = world.state.extra_state.setdefault(_COUNTERS, {})
    assert isinstance(counters, dict)
    value = int(counters.get(counter, 0))
    counters[counter] = value + 1
    return value
