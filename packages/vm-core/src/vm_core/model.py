"""The provider-neutral model: instances, states, offers, and what a create asks for.

Plain frozen dataclasses (cheap to import); every provider adapter maps its native objects into these.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .machine import MachineOptions


class InstanceState(enum.StrEnum):
    """One state vocabulary for all clouds; each adapter has an explicit map with an UNKNOWN fallback."""

    CREATING = "creating"
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"
    REBOOTING = "rebooting"
    TERMINATING = "terminating"
    TERMINATED = "terminated"
    ERROR = "error"
    UNKNOWN = "unknown"
    MISSING = "missing"  # vm recorded the VM (a fleet member) but its cloud no longer has it
    PREEMPTED = "preempted"  # the cloud took a spot VM's capacity back (Lambda says so; Nebius shows STOPPED)

    @property
    def gone(self) -> bool:
        """Deleted or being deleted: no longer a live VM (a lookup by name passes it over)."""
        return self in (InstanceState.TERMINATING, InstanceState.TERMINATED)

    @property
    def ended(self) -> bool:
        """Can no longer run: failed, preempted, or deleted or being deleted (a wait for running stops here)."""
        return self.gone or self in (InstanceState.ERROR, InstanceState.PREEMPTED)

    @property
    def ends_a_create(self) -> bool:
        """A create never passes through this state on its way to running: seen during a create, it failed
        (`ended`, or stopping or stopped)."""
        return self.ended or self in (InstanceState.STOPPING, InstanceState.STOPPED)

    @property
    def on_its_way(self) -> bool:
        """Not running yet but may still get there (creating, starting, or a state the adapter cannot name)."""
        return self in (InstanceState.CREATING, InstanceState.STARTING, InstanceState.UNKNOWN)

    @property
    def not_billed(self) -> bool:
        """A VM in this state has no running price (stopped, or gone)."""
        return self in (InstanceState.STOPPED, InstanceState.TERMINATED, InstanceState.MISSING,
                        InstanceState.PREEMPTED)


@dataclass(frozen=True, slots=True)
class Instance:
    """A VM as vm sees it. `native` is the SDK object, for `-o json --raw`."""

    provider: str
    id: str
    name: str
    state: InstanceState
    gpu: str  # canonical GPU name ("" if the shape is not in the catalog)
    gpu_count: int  # GPUs per VM
    region: str
    shape: str  # native shape name (Crusoe type, Lambda instance type, Nebius "platform/preset")
    reserved: bool = False
    reservation_id: str = ""
    price_per_hour: float | None = None
    fleet: str | None = None
    created_at: datetime | None = None
    public_ip: str = ""  # "" while the cloud reports none (booting, stopped, no public interface)
    ssh_user: str = ""  # the login of the image the adapter boots ("ubuntu" for the built-in ones)
    native: Any = field(default=None, repr=False, compare=False)
    # Nebius metadata.labels, Lambda tags; always empty on clouds without labels (Crusoe).
    labels: Mapping[str, str] = field(default_factory=dict, compare=False)
    # A spot (preemptible) VM: the cloud may stop it to take its capacity back. Never on a reservation.
    spot: bool = False

    @property
    def ssh(self) -> str:
        """The command line that logs in: "" unless the VM runs with a public IP (a stopped VM may still show
        an address its cloud keeps for it, but nothing answers there). `vm ssh` runs exactly this."""
        import shlex

        return shlex.join(self.ssh_argv()) if self.public_ip and self.state is InstanceState.RUNNING else ""

    def ssh_argv(self, command: Sequence[str] = (), options: Sequence[str] = ()) -> list[str]:
        """The argv of `ssh` that logs in, with `options` and then the remote `command` (after `--` and the
        destination, so a command starting with "-" is never read as an option). Needs a public IP."""
        target = f"{self.ssh_user}@{self.public_ip}" if self.ssh_user else self.public_ip
        return ["ssh", *options, *(["--", target, *command] if command else [target])]

    @property
    def running_price(self) -> float | None:
        """$/h while it runs: None when stopped or terminated (no running price) or when unknown."""
        return None if self.state.not_billed else self.price_per_hour

    def to_json(self) -> dict[str, Any]:
        """The stable JSON schema of `vm ... -o json` (keys documented in the README); `price_per_hour` is the
        running price."""
        return {
            "provider": self.provider,
            "id": self.id,
            "name": self.name,
            "state": self.state.value,
            "gpu": self.gpu,
            "gpu_count": self.gpu_count,
            "region": self.region,
            "reserved": self.reserved,
            "reservation_id": self.reservation_id,
            "spot": self.spot,
            "price_per_hour": self.running_price,
            "fleet": self.fleet,
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "public_ip": self.public_ip or None,
            "ssh": self.ssh or None,
        }


class PriceSource(enum.StrEnum):
    """Where an offer's price comes from."""

    API = "api"  # the cloud's API priced it just now (a price list or calculator call)
    CATALOG = "catalog"  # vm's catalog of list prices (the cloud's price page when the catalog was written)
    CONTRACT = "contract"  # the user's configured contract terms (a reservation's agreed price)


@dataclass(frozen=True, slots=True)
class Offer:
    """Somewhere a VM of one shape could be created now, and at what price.

    `capacity` is the number of VMs the cloud says it can place (None when the cloud does not say how many);
    `available` is False when the cloud says there is none. A reserved offer names its reservation. A spot offer
    is for a preemptible VM (the cloud may stop it to take the capacity back), at the spot price. `price_source`
    says where the price comes from, None when the provider does not say.
    """

    provider: str
    region: str
    gpu: str
    gpu_count: int
    shape: str
    price_per_hour: float
    capacity: int | None
    available: bool = True
    reservation_id: str = ""
    spot: bool = False
    price_source: PriceSource | None = None

    @property
    def reserved(self) -> bool:
        return bool(self.reservation_id)

    def to_json(self) -> dict[str, Any]:
        return {
            "provider": self.provider, "region": self.region, "gpu": self.gpu, "gpu_count": self.gpu_count,
            "shape": self.shape, "price_per_hour": self.price_per_hour, "capacity": self.capacity,
            "available": self.available, "reserved": self.reserved, "reservation_id": self.reservation_id,
            "spot": self.spot, "price_source": self.price_source.value if self.price_source else None,
        }


class ReservationMode(enum.StrEnum):
    AUTO = "auto"  # use reserved capacity the cloud picks when it can, else on-demand
    NONE = "none"  # on-demand only
    ID = "id"  # this reservation


class ReservationProblem(enum.Enum):
    """Why a reservation request cannot be (the CLI words each with its option names)."""

    EMPTY = "empty"  # neither auto, none nor an id
    STRICT_WITHOUT_RESERVATION = "strict_without_reservation"  # strict, yet no reservation may be used


class ReservationError(ValueError):
    """A reservation request that cannot be; `problem` says why."""

    def __init__(self, problem: ReservationProblem) -> None:
        super().__init__(problem.value)
        self.problem = problem


@dataclass(frozen=True, slots=True)
class ReservationRequest:
    """`--reservation auto|none|ID` and `--strict` (fail rather than fall back to on-demand)."""

    mode: ReservationMode = ReservationMode.AUTO
    reservation_id: str = ""
    strict: bool = False

    @classmethod
    def parse(cls, value: str, *, strict: bool = False) -> ReservationRequest:
        """Raises ReservationError (a ValueError) for an empty value or `strict` with `none`."""
        text = value.strip()
        if not text:
            raise ReservationError(ReservationProblem.EMPTY)
        if text.lower() in ("auto", "none"):
            mode = ReservationMode(text.lower())
            if mode is ReservationMode.NONE and strict:
                raise ReservationError(ReservationProblem.STRICT_WITHOUT_RESERVATION)
            return cls(mode=mode, strict=strict)
        return cls(mode=ReservationMode.ID, reservation_id=text, strict=strict)


@dataclass(frozen=True, slots=True)
class CreateSpec:
    """What to create. `shape` and `region` pin an exact offer (the fleet allocator does); otherwise the
    adapter picks the smallest shape of `gpu` with `gpu_count` GPUs per VM and a region with capacity.
    `spot` asks for a preemptible VM at the spot price (providers that are `SupportsSpot`; others refuse it).
    `abort` is set when the caller no longer wants the VM (Ctrl-C): an adapter that makes the create wait before
    it is sent (a cloud's pacing of launches) must not send it once `abort` is set, and raises Interrupted
    instead, meaning that nothing was sent. `machine` is the image, boot disk and startup script (None in each:
    the adapter's default, see vm_core.machine). `placement_group` is a group of the provider's
    `SupportsPlacementGroups` the VM joins (None: none). `spot_max_price`, with `spot`, is the most USD per hour
    the VM may cost (providers that are `SupportsSpotPriceCap`): the cloud preempts it rather than charge more."""

    name: str
    gpu: str
    gpu_count: int | None = None
    region: str | None = None
    shape: str | None = None
    reservation: ReservationRequest = ReservationRequest()
    ssh_public_key: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    spot: bool = False
    abort: threading.Event | None = field(default=None, compare=False, repr=False)
    machine: MachineOptions = MachineOptions()
    placement_group: str | None = None
    spot_max_price: float | None = None
