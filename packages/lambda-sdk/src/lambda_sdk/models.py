"""Typed models of the Lambda Cloud API (OpenAPI 1.10; research lambda.md section 4).

Decoding ignores unknown fields and maps unknown enum values to an UNKNOWN member, so a newer server does not
break an older SDK. Optional fields the API may leave out are `None` (or empty lists) here.
"""

from __future__ import annotations

import datetime
import enum
from typing import Generic, TypeVar

import msgspec

T = TypeVar("T")


class _Enum(enum.StrEnum):
    """A string enum whose unknown values decode to UNKNOWN (forward compatibility)."""

    @classmethod
    def _missing_(cls, value: object) -> _Enum:
        return cls["UNKNOWN"]


class InstanceStatus(_Enum):
    BOOTING = "booting"
    ACTIVE = "active"
    UNHEALTHY = "unhealthy"
    TERMINATING = "terminating"
    TERMINATED = "terminated"
    PREEMPTED = "preempted"
    UNKNOWN = "unknown"


# A launch that reaches one of these will never become active.
FAILED_STATUSES = frozenset(
    {InstanceStatus.UNHEALTHY, InstanceStatus.TERMINATING, InstanceStatus.TERMINATED,
     InstanceStatus.PREEMPTED}
)
# An instance in one of these is gone or going; terminating it again is a no-op.
GONE_STATUSES = frozenset({InstanceStatus.TERMINATING, InstanceStatus.TERMINATED, InstanceStatus.PREEMPTED})


class Architecture(_Enum):
    X86_64 = "x86_64"
    ARM64 = "arm64"
    UNKNOWN = "unknown"


class UserStatus(_Enum):
    ACTIVE = "active"
    DEACTIVATED = "deactivated"
    UNKNOWN = "unknown"


class Region(msgspec.Struct, frozen=True):
    name: str
    description: str


class InstanceTypeSpecs(msgspec.Struct, frozen=True):
    vcpus: int
    memory_gib: int
    storage_gib: int
    gpus: int


class InstanceType(msgspec.Struct, frozen=True):
    name: str
    description: str
    gpu_description: str
    price_cents_per_hour: int
    specs: InstanceTypeSpecs


class InstanceTypeAvailability(msgspec.Struct, frozen=True):
    """One entry of GET /instance-types: a type and the regions that can launch it right now."""

    instance_type: InstanceType
    regions_with_capacity_available: list[Region]

    def has_capacity(self, region_name: str) -> bool:
        """True when `region_name` is listed as having capacity (a listing is no guarantee of a launch)."""
        return any(r.name == region_name for r in self.regions_with_capacity_available)


class ActionAvailability(msgspec.Struct, frozen=True):
    available: bool
    reason_code: str | None = None  # e.g. "vm-has-not-launched"; the API allows new codes
    reason_description: str | None = None


class InstanceActions(msgspec.Struct, frozen=True):
    migrate: ActionAvailability
    rebuild: ActionAvailability
    restart: ActionAvailability
    cold_reboot: ActionAvailability
    terminate: ActionAvailability


class FileSystemMount(msgspec.Struct, frozen=True):
    mount_point: str
    file_system_id: str


class Tag(msgspec.Struct, frozen=True):
    key: str
    value: str


class FirewallRulesetRef(msgspec.Struct, frozen=True):
    id: str


class FirewallProtocol(_Enum):
    TCP = "tcp"
    UDP = "udp"
    ICMP = "icmp"
    ALL = "all"
    UNKNOWN = "unknown"


class FirewallRule(msgspec.Struct, frozen=True, omit_defaults=True):
    """One inbound rule (spec 1.10 FirewallRule): `port_range` is `(min, max)` (1..65535; `(22, 22)` for one
    port), required for every protocol but icmp, where it must be None; `source_network` is an IPv4 CIDR;
    `description` has at most 128 characters."""

    protocol: FirewallProtocol
    source_network: str
    description: str
    port_range: tuple[int, int] | None = None


class Instance(msgspec.Struct, frozen=True):
    """An instance. `ip` is None while booting; `private_ip` may be None even when active.

    `is_reserved` is undocumented in the schema but present in the API's examples; the repr hides the Jupyter
    token and URL (they are credentials).
    """

    id: str
    status: InstanceStatus
    ssh_key_names: list[str]
    file_system_names: list[str]
    region: Region
    instance_type: InstanceType
    actions: InstanceActions
    name: str | None = None
    ip: str | None = None
    private_ip: str | None = None
    hostname: str | None = None
    jupyter_token: str | None = None
    jupyter_url: str | None = None
    file_system_mounts: list[FileSystemMount] = []
    tags: list[Tag] = []
    firewall_rulesets: list[FirewallRulesetRef] = []
    is_reserved: bool = False

    def __repr__(self) -> str:
        return (
            f"Instance(id={self.id!r}, name={self.name!r}, status={self.status.value!r}, "
            f"region={self.region.name!r}, instance_type={self.instance_type.name!r}, ip={self.ip!r}, "
            f"is_reserved={self.is_reserved!r})"
        )


class SSHKey(msgspec.Struct, frozen=True):
    id: str
    name: str
    public_key: str


class GeneratedSSHKey(SSHKey, frozen=True):
    """A key pair Lambda generated; `private_key` is returned once and never stored by Lambda."""

    private_key: str

    def __repr__(self) -> str:
        return f"GeneratedSSHKey(id={self.id!r}, name={self.name!r}, private_key=<redacted>)"


class Image(msgspec.Struct, frozen=True):
    """One image in one region (the same id usually repeats across regions)."""

    id: str
    name: str
    description: str
    family: str
    version: str
    architecture: Architecture
    region: Region
    created_time: datetime.datetime | None = None
    updated_time: datetime.datetime | None = None


class User(msgspec.Struct, frozen=True):
    id: str
    email: str
    status: UserStatus


class Filesystem(msgspec.Struct, frozen=True):
    id: str
    name: str
    mount_point: str
    created: datetime.datetime
    created_by: User
    is_in_use: bool
    region: Region
    bytes_used: int | None = None


class Reservation(msgspec.Struct, frozen=True):
    """Reserved capacity, counted in GPUs (mock extension: the real API has no reservation endpoint).

    Launch into it with `launch_instance(..., reservation_id=...)`; such instances report `is_reserved` and
    cannot be terminated through the API. Only `id` is required, so that the invented shape can grow.
    """

    id: str
    name: str = ""
    region: Region | None = None
    instance_type_family: str | None = None
    gpu_description: str | None = None
    instance_type_names: list[str] = []
    quantity: int = 0
    used_quantity: int = 0
    available_quantity: int = 0
    instance_ids: list[str] = []  # this account's instances on the reservation
    price_cents_per_gpu_hour: int | None = None
    start_time: datetime.datetime | None = None
    end_time: datetime.datetime | None = None


class ImageSpec(msgspec.Struct, frozen=True, omit_defaults=True):
    """The image to launch: give exactly one of `id` or `family`."""

    id: str | None = None
    family: str | None = None


class LaunchRequest(msgspec.Struct, omit_defaults=True, kw_only=True):
    """Body of POST /instance-operations/launch. `quantity` is never sent: Lambda launches one at a time.

    The repr leaves out `user_data`, which often carries secrets (cloud-init scripts).
    """

    region_name: str
    instance_type_name: str
    ssh_key_names: list[str]
    name: str | None = None
    hostname: str | None = None
    image: ImageSpec | None = None
    file_system_names: list[str] = []
    file_system_mounts: list[FileSystemMount] = []
    user_data: str | None = None
    tags: list[Tag] = []
    firewall_rulesets: list[FirewallRulesetRef] = []
    reservation_id: str | None = None  # mock extension

    def __repr__(self) -> str:
        return (
            f"LaunchRequest(region_name={self.region_name!r}, "
            f"instance_type_name={self.instance_type_name!r}, name={self.name!r}, "
            f"reservation_id={self.reservation_id!r})"
        )


# ---------------------------------------------------------------------------------------------- envelopes
class Envelope(msgspec.Struct, Generic[T]):
    """Every success is `{"data": ...}`."""

    data: T


class ErrorBody(msgspec.Struct):
    code: str = ""
    message: str = ""
    suggestion: str | None = None


class ErrorEnvelope(msgspec.Struct):
    error: ErrorBody


class FirewallRulesPut(msgspec.Struct):
    """Body of PUT /firewall-rules: the rules, all of them."""

    data: list[FirewallRule]


class LaunchResult(msgspec.Struct):
    instance_ids: list[str]


class TerminateResult(msgspec.Struct):
    terminated_instances: list[Instance]


class RestartResult(msgspec.Struct):
    restarted_instances: list[Instance]
