"""The extension point for clouds: one small Protocol, plus optional capability Protocols.

A provider package registers a `ProviderPlugin` under the entry-point group `vm_core.providers`; vm-core's own
adapters (crusoe, lambda, nebius) register the same way. Callers check capabilities with `isinstance`
(`SupportsStopStart`, `SupportsReboot`, `SupportsReservations`, `SupportsAccount`, `SupportsBatchDestroy`,
`SupportsGetMany`, `SupportsGetStates`, `Paced`) and never catch NotImplementedError. A fleet follows every VM of
one provider (creates, deletions, adopted VMs) with one read per `poll_interval`: `get_states` where the cloud can
read many ids at once, else one listing (vm_core.fleet.follower).

Every method raises only `vm_core.errors` exceptions (adapters translate their SDK's errors at the edge).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from .errors import VmError
from .model import CreateSpec, Instance, InstanceState, Offer

if TYPE_CHECKING:
    from .native import NativeCredentials

T_co = TypeVar("T_co", covariant=True)


@runtime_checkable
class Pending(Protocol[T_co]):
    """A long-running cloud action. Waiting never cancels the action in the cloud."""

    @property
    def id(self) -> str:
        """The cloud's operation id (or the instance id where the cloud has no operations)."""
        ...

    @property
    def resource_id(self) -> str:
        """The instance the action is about; known as soon as the action was accepted."""
        ...

    def done(self) -> bool:
        """Whether the action has finished (may make one API call; does not block otherwise)."""
        ...

    def wait(self, timeout: float) -> T_co:
        """Block until finished or `timeout` seconds pass (then raise Timeout); raise the normalized error of a
        failed action (CapacityError, QuotaError, VmError...)."""
        ...


@runtime_checkable
class Completes(Protocol):
    """A create's Pending that makes its result from its VM as a read of many VMs shows it running, so a fleet
    that follows many creates with one read per round never reads a VM or an operation per create. A Pending
    without it is asked `wait` once its VM runs."""

    def completed(self, instance: Instance, timeout: float) -> Instance | None:
        """The create's result, given its VM as a read shows it RUNNING: the Instance `wait` would return, or None
        when the VM is not complete yet (e.g. it has no address yet: it is followed again). Makes no API call
        except to clean up: raises the VmError `wait` would raise for a VM that is not what was asked for (e.g. a
        strict create that landed off its reservation, destroyed first, blocking at most `timeout` seconds)."""
        ...


@runtime_checkable
class Explained(Protocol):
    """A Pending that tells the user something they did not ask for: how the cloud carries out the action (a
    reboot done as a stop then a start), or, once `wait` returned, what came of it (a start that fell back to
    on-demand capacity, with its price). "" when there is nothing to say."""

    @property
    def note(self) -> str: ...


@runtime_checkable
class Staged(Protocol):
    """A Pending whose later steps are sent by its own `done()`/`wait()` (a reboot done as a stop, then a
    start). While `must_wait` is True, a caller that stops polling leaves the action half done (a VM stopped and
    never started), so `--no-wait` waits for it anyway."""

    @property
    def must_wait(self) -> bool: ...


@runtime_checkable
class Provider(Protocol):
    """One cloud account, connected. Methods may block on network calls; none waits for a long action."""

    name: str

    def list_instances(self) -> Iterator[Instance]:
        """Every live instance the account can see (lazily paged)."""
        ...

    def get_instance(self, instance_id: str) -> Instance:
        """Raises NotFound when it does not exist (or no longer exists)."""
        ...

    def find_instance(self, name: str) -> Instance | None:
        """The live instance with this exact name, or None. Used to resolve ambiguous creates."""
        ...

    def begin_create(self, spec: CreateSpec) -> Pending[Instance]:
        """Ask for one VM. Never retried blindly after an ambiguous failure: callers resolve with
        find_instance. Raises CapacityError/QuotaError when the cloud refuses at once."""
        ...

    def begin_destroy(self, instance_id: str) -> Pending[None]:
        """Delete an instance; an instance that is already gone gives an already-finished Pending.
        Raises Unsupported when the cloud refuses to delete it (e.g. a reserved Lambda instance)."""
        ...

    def offers(self, gpu: str, gpu_count: int | None = None) -> list[Offer]:
        """Shapes of `gpu` (with `gpu_count` GPUs per VM, or every count) in every region, with prices,
        capacity where the cloud reports it, and the account's reservations. The capacity of a reserved offer is
        what is free of it now, except for a provider that cannot list its reservations (not
        SupportsReservations): there it is the reservation's size where the provider knows it (a Nebius
        capacity block from the contract), and the fleet engine takes its own VMs on it off."""
        ...


@runtime_checkable
class SupportsStopStart(Protocol):
    def begin_stop(self, instance_id: str) -> Pending[Instance]: ...

    def begin_start(self, instance_id: str) -> Pending[Instance]: ...


@runtime_checkable
class SupportsReservedStart(Protocol):
    def begin_start_reserved(self, instance_id: str) -> Pending[Instance]:
        """Start a stopped instance only onto reserved capacity: CapacityError, before anything is sent, when no
        reservation it may use has room (`vm start --strict`)."""
        ...


@runtime_checkable
class SupportsReboot(Protocol):
    def begin_reboot(self, instance_id: str, *, hard: bool = False) -> Pending[Instance]: ...


@runtime_checkable
class SupportsSpot(Protocol):
    """Spot (preemptible) capacity: `spot_offers` lists it, and `begin_create` honours `CreateSpec.spot`."""

    def spot_offers(self, gpu: str, gpu_count: int | None = None) -> list[Offer]: ...


@runtime_checkable
class SupportsPlacementGroups(Protocol):
    """A cloud object that holds a cluster fleet's VMs together on one interconnect (a Nebius GPU cluster on an
    InfiniBand fabric), made for `--placement cluster` and deleted with the fleet. Groups carry the fleet's
    identity labels; a provider never touches a group that does not carry all of them."""

    def placement_group(self, labels: Mapping[str, str], region: str, shape: str) -> str | None:
        """The id of the group for this fleet's VMs of `shape` in `region`: the one labelled `labels`, else a new
        one; None when that place needs none (the shape cannot join one, or the region has no fabric for it).
        Blocks until the group exists; raises VmError."""
        ...

    def delete_placement_groups(self, labels: Mapping[str, str]) -> list[str]:
        """Delete every group carrying all of `labels` (and no other), blocking until they are gone; those already
        gone count as deleted. The ids deleted; raises VmError."""
        ...


@runtime_checkable
class SupportsSpotPriceCap(Protocol):
    """Spot VMs with a price cap (a Nebius pricing policy): `begin_create` honours `CreateSpec.spot_max_price`."""

    def spot_price_cap(self, region: str, shape: str, max_price_per_hour: float) -> str:
        """The id of the cloud's cap for spot VMs of `shape` in `region` costing at most `max_price_per_hour` USD:
        the existing one of that cap, else a new one. Blocks; raises UsageError for a cap the cloud refuses,
        CapacityError when the spot price is above it now."""
        ...


@dataclass(frozen=True, slots=True)
class ReservationInfo:
    provider: str
    id: str
    gpu: str
    regions: tuple[str, ...]
    total_gpus: int | None
    used_gpus: int | None
    price_per_gpu_hour: float | None
    terminable: bool = True  # False where the cloud refuses to delete instances placed on it (Lambda)


@runtime_checkable
class SupportsReservations(Protocol):
    def list_reservations(self) -> list[ReservationInfo]: ...


@dataclass(frozen=True, slots=True)
class ReservationTerms:
    """A reservation with the terms `vm reservations` shows: `name` ("" where the cloud has none), its contract
    period (epoch seconds; None where the cloud does not say), and `instance_ids`, this account's VMs on it as
    the cloud lists them (None where the cloud does not say which: vm finds them by each VM's reservation).
    `usable`: new VMs of this account may use it (False for a Crusoe reservation of the organisation scoped to
    other projects)."""

    info: ReservationInfo
    name: str = ""
    starts_at: float | None = None
    ends_at: float | None = None
    instance_ids: tuple[str, ...] | None = None
    usable: bool = True


@dataclass(frozen=True, slots=True)
class ReservationListing:
    """What a provider knows of its account's reservations. `note` says where they come from when it is not the
    cloud's own listing (a Nebius capacity block from the profile's `capacity_blocks` setting), or why there
    are none (an API without reservations); "" for a complete listing by the cloud."""

    reservations: tuple[ReservationTerms, ...]
    note: str = ""


@runtime_checkable
class SupportsReservationTerms(Protocol):
    """Optional: the account's reservations with their terms (`vm reservations`), including those the cloud
    cannot list but the profile states (Nebius capacity blocks)."""

    def reservation_terms(self) -> ReservationListing:
        """One listing call at most (none where the reservations come from settings); raises VmError."""
        ...


@runtime_checkable
class SupportsAccount(Protocol):
    def account(self) -> str:
        """A stable fingerprint of the account this provider acts in: never a secret, no network call. A fleet
        records it and refuses to act through a provider whose fingerprint differs."""
        ...


@runtime_checkable
class SupportsBatchDestroy(Protocol):
    """Deletes many instances per API call, where the cloud's delete takes a list of ids (Lambda's terminate)."""

    @property
    def batch_destroy_limit(self) -> int:
        """The most ids one call of `begin_destroy_many` sends together; callers pass at most this many."""
        ...

    def begin_destroy_many(self, instance_ids: Sequence[str]) -> dict[str, Pending[None] | VmError]:
        """Ask to delete every id (at most `batch_destroy_limit`), in as few calls as the API allows. Each id maps
        to a Pending like `begin_destroy`'s (an id already gone: a finished one), or to the error that refused it:
        Unsupported when the cloud refuses to delete it (it keeps running), another VmError when the request
        failed (it may still exist). Never raises for a refused or failed request: one id's refusal must not
        hide what happened to the others."""
        ...


@runtime_checkable
class SupportsGetMany(Protocol):
    """Reads many instances by id in fewer calls than one `get_instance` each (Nebius `InstanceService.BatchGet`)."""

    def get_instances(self, instance_ids: Collection[str]) -> dict[str, Instance | None]:
        """Each id read maps to its instance, or to None when it does not exist (any more); an id whose read
        failed is left out (unknown, not gone). Raises VmError when nothing could be read."""
        ...


@runtime_checkable
class SupportsGetStates(Protocol):
    """Reads the states of many instances by id for less than reading them whole (Nebius `BatchGet` decoding only
    each instance's status): what a watcher that only waits for a state needs."""

    def get_states(self, instance_ids: Collection[str]) -> dict[str, InstanceState | None]:
        """Each id read maps to its state, or to None when it does not exist (any more); an id whose read failed
        is left out (unknown, not gone). Raises VmError when nothing could be read."""
        ...


@runtime_checkable
class Paced(Protocol):
    """How often a watcher may read this provider while it follows pending actions."""

    @property
    def poll_interval(self) -> float:
        """Seconds between two reads (one listing or batch read each) of one watcher: within the API's documented
        rate limits, scaled by the provider's time scale like its other intervals."""
        ...


@dataclass(frozen=True, slots=True)
class Setting:
    """A configuration key of a provider (from the profile or the cloud's conventional env var)."""

    key: str
    env: str = ""
    secret: bool = False
    required: bool = True
    help: str = ""


class ProviderPlugin(Protocol):
    """What the `vm_core.providers` entry point names. Loading it must not import the cloud's SDK."""

    name: str
    title: str  # e.g. "Lambda Cloud"
    settings: tuple[Setting, ...]

    def connect(self, settings: Mapping[str, Any]) -> Provider:
        """A connected provider (no network call yet). Raises ConfigError for missing settings."""
        ...


@runtime_checkable
class DeclaresSettingsType(Protocol):
    """Optional for a plugin: its settings as one typed declaration, a dataclass of `vm_core.kit.setting` fields.

    The session then parses the resolved values (profile, embedded clouds, env vars) into an instance of
    `settings_type` itself, raising ConfigError that names a missing or malformed key (never a secret's value)
    before `connect` is called, and passes `connect` that instance instead of the mapping."""

    settings_type: type[Any]


@runtime_checkable
class ReadsNativeCredentials(Protocol):
    """Optional for a plugin: its cloud's own credential conventions (variables, the cloud CLI's files), read the
    way the cloud's own tools read them (native.py).

    The session calls it for profiles that are not the embedded mock clouds and layers the result under the
    profile's table; a plugin without it gets only its settings' `env` variables."""

    def native_credentials(self, environ: Mapping[str, str], home: Path) -> NativeCredentials:
        """What `environ` and the files under `home` say; no network call, no command run. Raises ConfigError
        for a file that exists but is malformed (naming it)."""
        ...


@runtime_checkable
class DescribesEndpoint(Protocol):
    """Optional for a connected provider: where its API is (what `vm providers` shows, and what was tried)."""

    @property
    def endpoint(self) -> str:
        """The effective base URL or gRPC target (the cloud's default when none is configured)."""
        ...
