"""Typed models of the Crusoe resources besides VMs (swagger v1alpha5): data disks, IB networks and partitions,
VPC subnets, SSH keys and organisation quotas. Field names are the wire names; see `models` for the decoding
rules (unknown fields ignored, `null` read as absent, numeric strings read as numbers)."""

from __future__ import annotations

import msgspec

from .models import _Model


class DiskVMAttachment(_Model):
    """One VM a disk is attached to (`VMAttachmentV1Alpha5`)."""

    vm_id: str
    attachment_type: str = ""  # os | data
    mode: str = ""  # read-only | read-write


class Disk(_Model):
    """A disk (`DiskV1Alpha5`); `size` is a string such as "100GiB"."""

    id: str
    name: str = ""
    type: str = ""  # persistent-ssd | shared-volume
    size: str = ""
    location: str = ""
    block_size: int = 0
    created_at: str = ""
    updated_at: str = ""
    serial_number: str = ""
    attached_to: list[DiskVMAttachment] = []
    dns_name: str = ""
    vips: list[str] = []


class CreateDiskRequest(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The body of POST /storage/disks (`DisksPostRequestV1Alpha5`)."""

    name: str
    size: str
    location: str
    type: str = "persistent-ssd"
    block_size: int = 4096
    snapshot_id: str = ""


class IBNetworkCapacity(_Model):
    slice_type: str  # the VM type the network can host, e.g. "h100-80gb-sxm-ib.8x"
    quantity: int = 0


class IBNetwork(_Model):
    """An InfiniBand network of one location (`IBNetwork`)."""

    id: str
    name: str = ""
    location: str = ""
    capacities: list[IBNetworkCapacity] = []

    def hosts(self, vm_type: str) -> bool:
        """Whether the network can host VMs of `vm_type` (dstack's test: a capacity row of that slice type)."""
        return any(c.slice_type == vm_type for c in self.capacities)


class IBPartition(_Model):
    """An IB partition: the VMs whose host channel adapters name it share one fabric (`IBPartition`)."""

    id: str
    name: str = ""
    ib_network_id: str = ""


class NATGateway(_Model):
    id: str = ""
    public_ipv4_id: str = ""
    public_ipv4_address: str = ""


class VPCSubnet(_Model):
    id: str
    name: str = ""
    vpc_network_id: str = ""
    cidr: str = ""
    location: str = ""
    nat_gateways: list[NATGateway] = []


class Fingerprints(_Model):
    md5: str = ""
    sha256: str = ""


class SSHKey(_Model):
    id: str
    name: str = ""
    public_key: str = ""
    created_at: str = ""
    fingerprints: Fingerprints = msgspec.field(default_factory=Fingerprints)


class OrgQuota(_Model):
    type: str = ""
    programmatic_name: str = ""
    description: str = ""
    max: int = 0
    used: int = 0
    available: int = 0


class SSHKeyEnvelope(_Model):
    ssh_key: SSHKey


class OrgQuotasResponse(_Model):
    quotas: list[OrgQuota] = []
