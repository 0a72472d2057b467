"""Typed models of the Crusoe Cloud v1alpha5 wire format (msgspec Structs).

Field names are the wire names (`Instance.created_at_text` is the wire's `created_at`, read as a time by the
`created_at` property). The transport reads `null` members as absent and numeric strings as numbers. Decoding
ignores fields this SDK does not know and maps state values it does not know to an UNKNOWN member, so a server
that adds either keeps working. Fields the API marks optional, or that older/newer servers may omit, have
defaults.
"""

from __future__ import annotations

import datetime as _dt
import enum
from typing import Any, Generic, TypeVar

import msgspec

T = TypeVar("T")


class _Model(msgspec.Struct, kw_only=True):
    """Base of every response model."""


# ------------------------------------------------------------------------------------------------ states
class InstanceState(enum.StrEnum):
    """A VM's `state`. Names seen from code that talks to the real API, plus the libvirt-derived and UI states
    the research infers; any other value decodes as UNKNOWN."""

    UNSPECIFIED = "STATE_UNSPECIFIED"
    DEFINING = "STATE_DEFINING"
    INITIALIZING = "STATE_INITIALIZING"
    STARTING = "STATE_STARTING"
    RUNNING = "STATE_RUNNING"
    BLOCKED = "STATE_BLOCKED"
    PAUSED = "STATE_PAUSED"
    SHUTDOWN = "STATE_SHUTDOWN"
    SHUTOFF = "STATE_SHUTOFF"
    STOPPED = "STATE_STOPPED"
    CRASHED = "STATE_CRASHED"
    PMSUSPENDED = "STATE_PMSUSPENDED"
    ERROR = "STATE_ERROR"
    DELETING = "STATE_DELETING"
    DELETED = "STATE_DELETED"
    UNKNOWN = "UNKNOWN"

    @classmethod
    def _missing_(cls, value: object) -> InstanceState:
        return cls.UNKNOWN

    @property
    def is_stopped(self) -> bool:
        """Powered off: STOPPED or SHUTOFF (as terraform reads them). SHUTDOWN is libvirt's "being shut
        down", a transition."""
        return self in _STOPPED_STATES

    @property
    def is_gone(self) -> bool:
        return self in (InstanceState.DELETING, InstanceState.DELETED)


_STOPPED_STATES = frozenset({InstanceState.STOPPED, InstanceState.SHUTOFF})


class OperationState(enum.StrEnum):
    IN_PROGRESS = "IN_PROGRESS"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    UNKNOWN = "UNKNOWN"

    @classmethod
    def _missing_(cls, value: object) -> OperationState:
        return cls.UNKNOWN

    @property
    def is_terminal(self) -> bool:
        return self in (OperationState.SUCCEEDED, OperationState.FAILED)


class InstanceAction(enum.StrEnum):
    """The `action` of PATCH /instances/{id}: the real API's START, STOP, RESET (hard reset), RESERVE, UNRESERVE
    and UPDATE. There is no guest reboot (the mock clouds' REBOOT and RESTART extensions are not part of it)."""

    START = "START"
    STOP = "STOP"
    RESET = "RESET"
    RESERVE = "RESERVE"
    UNRESERVE = "UNRESERVE"
    UPDATE = "UPDATE"


# ------------------------------------------------------------------------------------------------ instances
class PrivateIPv4(_Model):
    address: str = ""


class PublicIPv4(_Model):
    address: str = ""
    id: str = ""
    type: str = ""  # static | dynamic


class IPAddresses(_Model):
    private_ipv4: PrivateIPv4 | None = None
    public_ipv4: PublicIPv4 | None = None


class NetworkInterface(_Model):
    id: str = ""
    name: str = ""
    network: str = ""
    subnet: str = ""
    interface_type: str = ""
    mac_address: str = ""
    external_dns_name: str = ""
    ips: list[IPAddresses] = []


class AttachedDisk(_Model):
    id: str = ""
    name: str = ""
    type: str = ""  # persistent-ssd | shared-volume
    size: str = ""  # e.g. "10GiB"
    location: str = ""
    block_size: int = 0
    created_at: str = ""
    updated_at: str = ""
    serial_number: str = ""
    attachment_type: str = ""  # os | data
    mode: str = ""  # read-only | read-write


class HostChannelAdapter(_Model):
    type: str = ""
    guid: str = ""
    ib_network_id: str = ""
    ib_partition_id: str = ""
    transport_network_id: str = ""
    transport_partition_id: str = ""


class VirtualizationFeatures(_Model):
    nested_virtualization: bool = False


class Instance(_Model):
    """A VM (`InstanceV1Alpha5`). `reservation_id` is "" when the VM runs on demand."""

    id: str
    name: str
    type: str
    location: str
    state: InstanceState = InstanceState.UNKNOWN
    project_id: str = ""
    created_at_text: str = msgspec.field(name="created_at", default="")  # as the server wrote it
    updated_at_text: str = msgspec.field(name="updated_at", default="")
    billing_type: str = ""  # On-demand | Spot | PoC
    reservation_id: str = ""
    maintenance_policy: str = ""  # manual | stop-vm | unspecified
    disks: list[AttachedDisk] = []
    network_interfaces: list[NetworkInterface] = []
    host_channel_adapters: list[HostChannelAdapter] = []
    instance_group_id: str = ""
    instance_template_id: str = ""
    nvlink_domain_id: str = ""
    pod_id: str = ""
    commitment_period: int = 0
    commitment_end: str = ""
    virtualization_features: VirtualizationFeatures | None = None

    @property
    def created_at(self) -> _dt.datetime | None:
        """`created_at` as a time (None when absent or not RFC 3339; `created_at_text` keeps it as given)."""
        return parse_time(self.created_at_text)

    @property
    def updated_at(self) -> _dt.datetime | None:
        return parse_time(self.updated_at_text)

    @property
    def public_ipv4(self) -> str:
        """The first public IPv4 address ("" if none). Dynamic addresses change on stop/start."""
        return next((ip.public_ipv4.address for ip in self._ips() if ip.public_ipv4), "")

    @property
    def private_ipv4(self) -> str:
        return next((ip.private_ipv4.address for ip in self._ips() if ip.private_ipv4), "")

    def _ips(self) -> list[IPAddresses]:
        return [ip for nic in self.network_interfaces for ip in nic.ips]


def parse_time(text: str) -> _dt.datetime | None:
    """An RFC 3339 / ISO 8601 time (`2021-12-03T19:58:34Z`, fractions and offsets too) as an aware datetime
    (UTC when it names no zone); None for "" or anything else. Never raises: the swagger declares these fields
    plain strings, so a server may write another form."""
    try:
        parsed = _dt.datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=_dt.UTC)


# ------------------------------------------------------------------------------------------------ operations
class OperationRecord(_Model):
    """An asynchronous operation as the server reported it (the `Operation` object of the API).

    `metadata["id"]` is the id of the resource being changed, set as soon as the operation exists. `result` is
    the resource on SUCCEEDED and `{"code", "message"}` on FAILED. Timestamps are RFC 3339 strings;
    `completed_at` is "" while IN_PROGRESS.
    """

    operation_id: str
    state: OperationState = OperationState.UNKNOWN
    metadata: dict[str, Any] = {}
    result: Any = None
    started_at: str = ""
    completed_at: str = ""

    @property
    def resource_id(self) -> str:
        value = self.metadata.get("id", "") if isinstance(self.metadata, dict) else ""
        return value if isinstance(value, str) else ""

    @property
    def error(self) -> ErrorBody:
        """The failure reason of a FAILED operation (empty fields otherwise)."""
        if self.state is OperationState.FAILED and isinstance(self.result, dict):
            return msgspec.convert(self.result, ErrorBody)
        return ErrorBody()


class ErrorBody(_Model):
    """The error object of error responses and failed operations; `code` is a snake_case slug."""

    code: str = ""
    message: str = ""
    error_id: str = ""
    reason: str = ""


# ------------------------------------------------------------------------------------------------ catalogue
class Project(_Model):
    id: str
    name: str = ""
    organization_id: str = ""
    relation: str = ""  # deprecated by the API
    resources: dict[str, Any] | None = None  # null when the server skipped loading them


class VMType(_Model):
    """An instance type (`product_name` like `h100-80gb-sxm-ib.8x`). The API exposes no prices."""

    product_name: str
    description: str = ""
    cpu_cores: int = 0
    cpu_type: str = ""
    memory_gb: int = 0
    memory_type: str = ""
    disk_gb: int = 0  # ephemeral NVMe, 0 if none
    disk_type: str = ""
    num_gpu: int = 0
    gpu_type: str = ""


class Image(_Model):
    """A public image (`GET /compute/images`): a create names it as `"<name>:<tag>"`, e.g.
    `ubuntu22.04-nvidia-sxm-docker:latest`."""

    id: str
    name: str
    description: str = ""
    tags: list[str] = []
    created_at: str = ""
    locations: list[str] = []

    @property
    def references(self) -> list[str]:
        """The `image` values of a create that boot it: `name:tag` for each tag."""
        return [f"{self.name}:{tag}" for tag in self.tags] or [self.name]


class Capacity(_Model):
    """Hardware availability for a type in a location (not the project's quota).

    Several rows may exist for one (type, location): take the largest `quantity`."""

    location: str
    quantity: int
    type: str = ""
    num_slices: int = 0
    quota_type: str = ""


class Quota(_Model):
    type: str = ""
    programmatic_name: str = ""  # the instance family prefix, e.g. "l40s"
    description: str = ""
    category: str = ""
    max: int = 0
    used: int = 0
    available: int = 0


class Reservation(_Model):
    """Reserved capacity of the organisation, counted in GPUs (vCPUs for CPU types). `price` is a string."""

    id: str
    reservation_type: str = ""
    product_line: str = ""
    duration: float = 0.0
    quantity: int = 0
    used_quantity: int = 0
    locations: list[str] = []
    projects: list[str] = []
    contract_start_date: str = ""
    contract_end_date: str = ""
    delivery_deadline: str = ""
    date_delivered: str = ""
    vm_ids: list[str] = []
    price: str = ""

    @property
    def free_quantity(self) -> int:
        return max(0, self.quantity - self.used_quantity)


# ------------------------------------------------------------------------------------------------ requests
class LowestCost(msgspec.Struct, frozen=True):
    """Place the VM in the cheapest matching reservation with room, else on demand (the API default)."""

    def to_wire(self) -> dict[str, str]:
        return {"selection_strategy": "lowest_cost"}


class OnDemand(msgspec.Struct, frozen=True):
    """Never use a reservation."""

    def to_wire(self) -> dict[str, str]:
        return {"selection_strategy": "on_demand"}


class ById(msgspec.Struct, frozen=True):
    """Ask for this reservation. The real backend has ignored it at create since early 2026 and places the VM as
    `LowestCost` does: read the created VM's `reservation_id` for where it landed."""

    id: str

    def to_wire(self) -> dict[str, str]:
        return {"id": self.id}


ReservationSpecification = LowestCost | OnDemand | ById


class DiskAttachment(msgspec.Struct, frozen=True, kw_only=True):
    disk_id: str
    mode: str = "read-write"  # read-only | read-write
    attachment_type: str = "data"  # os | data


class HostChannelAdapterRequest(msgspec.Struct, frozen=True):
    """A create's host channel adapter: the IB partition an InfiniBand type joins."""

    ib_partition_id: str


class CreateInstanceRequest(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The body of POST /instances (`InstancesPostRequest`). Empty fields are not sent."""

    name: str
    type: str
    location: str
    ssh_public_key: str
    image: str = ""
    custom_image: str = ""
    startup_script: str = ""
    shutdown_script: str = ""
    disks: list[DiskAttachment] = []
    host_channel_adapters: list[HostChannelAdapterRequest] = []
    reservation_specification: dict[str, str] = {}
    maintenance_policy: str = ""


# ------------------------------------------------------------------------------------------------ envelopes
class ItemsPage(_Model, Generic[T]):
    """`{"items": [...]}`, with page tokens on the paged lists ("" on the last page)."""

    items: list[T] = []
    next_page_token: str = ""
    prev_page_token: str = ""


class OperationEnvelope(_Model):
    operation: OperationRecord


class QuotasResponse(_Model):
    quotas: list[Quota] = []
