"""Crusoe Cloud adapter: `plugin` (entry point `vm_core.providers: crusoe`) and `CrusoeProvider`.

Importing this module does not import crusoe_sdk or requests: `plugin.connect()` does.

Crusoe is asynchronous: create, stop, start, reboot and delete return an operation that `Pending.wait` polls
(`/instances/operations/{id}`). Poll intervals and retry backoff are multiplied by the `time_scale` setting
(1.0 for the real cloud; the mock clouds' scale in tests, so waits poll every few milliseconds there).
A fleet follows all its VMs with one listing per `poll_interval` (POLL_INTERVAL): a running VM is done; a create that
failed (`out_of_stock`) removes its VM, so only its operation can say why, and the fleet asks the operation of a VM
the listing does not show.

`--reservation` on Crusoe:

    vm flag             reservation_specification        where the VM lands
    ------------------  -------------------------------  -------------------------------------------------
    auto (default)      {"selection_strategy":           the cheapest matching reservation with room, else
                         "lowest_cost"}                  on-demand (the server's default strategy)
    none                {"selection_strategy":           on-demand (never a reservation)
                         "on_demand"}
    ID                  {"id": ID}                       as auto: the backend ignores the id at create
    ID --strict         {"id": ID}                       as auto; a VM not on ID is destroyed (CapacityError)
    auto --strict       refused: Unsupported             Crusoe cannot require "some reservation"; name one

Without `--region`, a location is chosen before the create: for auto/ID the first zone covered by a matching
reservation with room (cheapest first, as lowest_cost would pick), else (auto/none) the first zone that
`GET /capacities` says has the shape; none anywhere is a CapacityError of scope provider. Reservations name
regions (`us-east1`), VMs zones (`us-east1-a`): a reservation covers the zones of its regions.

The real backend has ignored `{"id": ID}` at create since early 2026 (terraform-provider-crusoe
internal/vm/vm_resource.go:468-476; a RESERVE after the create is ignored too, vm_by_template_resource.go:616-618).
So every create's Pending reads where the VM landed (`reservation_id`) and says it with the prices in its `note`;
with `--reservation ID --strict` a VM that landed elsewhere is destroyed and the create fails (_crusoe_landing).

Cluster fleets: 8-GPU InfiniBand types join the fleet's IB partition of their location (SupportsPlacementGroups,
_crusoe_fabric), passed at create as `host_channel_adapters`.

Prices: Crusoe's API has none. A VM on a reservation costs the reservation's price ($/GPU-h) x its GPUs; any
other VM the catalog's list price. Reboot: the v1alpha5 API's actions are START, STOP, RESET, RESERVE, UNRESERVE
and UPDATE, with no guest reboot: `hard=True` sends RESET, `hard=False` STOP then START (one Pending; its `note`
says so). The mock clouds' REBOOT and RESTART extensions are not used.

The project: `project_id` (CRUSOE_DEFAULT_PROJECT, `default_project` of ~/.crusoe/config) is a UUID or a name, or
unset for the key's only project, as Crusoe's CLI and Terraform provider take it; the SDK resolves it on the first
call that needs it. A name that matches nothing, or no project and several, is a ConfigError listing the projects.

SSH key: the API requires `ssh_public_key` on every create. It is the create's (`--ssh-key`), else the
`ssh_public_key` setting (the profile's, else `ssh_public_key_file` of ~/.crusoe/config, else the user's
~/.ssh/id_ed25519.pub...: sshkeys.py); none is a UsageError before any call. `--no-ssh-key` (sshkeys.NO_KEY)
sends a fresh random ed25519 public key whose private half never existed, so nobody can log in.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..catalog import Catalog, ShapeEntry
from ..errors import CapacityError, ConfigError, NotFound, Scope, Unsupported, UsageError
from ..hints import Command, Hint
from ..kit import GivenCatalog, Noted, OperationPending, ShapesFile, chunks, id_check, offer, scaled
from ..kit.settings import optional_text, parse_settings, positive_number, setting, settings_of
from ..kit.shapes import GpusFile
from ..machine import ImageInfo, MachineOptions, unknown_image
from ..model import CreateSpec, Instance, InstanceState, Offer, ReservationMode, ReservationRequest
from ..provider import Pending, ReservationInfo, ReservationListing, ReservationTerms, Setting
from ..sshkeys import NO_KEY, no_key_error, public_key_setting, unheld_key
from . import _crusoe_fabric as fabric
from . import billing_rules
from ._chain import StopThenStart
from ._crusoe_landing import Landed, landing_of
from ._crusoe_map import (
    NAME,
    TITLE,
    ErrorContext,
    instance_state,
    product_line,
    reservation_gpu,
    reservation_spec,
    translated,
)

if TYPE_CHECKING:
    from ..native import NativeCredentials

T = TypeVar("T")

log = logging.getLogger(__name__)
RESERVATIONS_UNREADABLE = ("Crusoe: this key may not read the reservations of organisation {organization} (403); "
                           "going on without them: offers show no reserved capacity and creates name no "
                           "reservation")

SSH_USER = "ubuntu"  # the login of Crusoe's ubuntu22.04 images, which VMs boot by default
SPOT_BILLING = "Spot"  # `billing_type` of a spot VM (the API's enum: On-demand | Spot | PoC)
REBOOT_NOTE = "rebooting as a stop then a start (Crusoe Cloud's API has no guest reboot; --hard resets)"

# Seconds between two listings that follow pending creates or deletions (times time_scale): Crusoe documents no
# rate limit; its own clients poll operations every 1 to 2 s (research crusoe.md section 4).
POLL_INTERVAL = 1.0
IDS_PER_LISTING = 100  # ids in one `ids=` filter: 3.7 KB of query, well under common URL limits
ID_PATTERN = r"(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # a UUID


@dataclass(frozen=True, kw_only=True)
class CrusoeSettings:
    """The settings of a Crusoe profile, validated (kit.settings)."""

    access_key_id: str = setting(env="CRUSOE_ACCESS_KEY_ID", help="Crusoe API access key id")
    secret_key: str = setting(env="CRUSOE_SECRET_KEY", secret=True, help="Crusoe API secret key")
    project_id: str | None = setting(env="CRUSOE_DEFAULT_PROJECT", default=None, parse=optional_text,
                                     help="project that owns the VMs, by name or UUID (default: the key's only one)")
    api_endpoint: str | None = setting(env="CRUSOE_API_ENDPOINT", default=None, parse=optional_text,
                                       help="API base URL (default https://api.cloud.crusoe.ai/v1alpha5)")
    ssh_public_key: str | None = setting(default=None, parse=lambda raw: public_key_setting(raw, NAME),
                                         help="public key installed on new VMs (default: ssh_public_key_file of "
                                              "~/.crusoe/config, else ~/.ssh/id_ed25519.pub, id_ecdsa.pub or "
                                              "id_rsa.pub)")
    time_scale: float = setting(default=1.0, parse=positive_number,
                                help="multiplies poll intervals (mock clouds only; default 1.0)")


@dataclass(frozen=True)
class CrusoePlugin:
    """The `vm_core.providers` entry point of Crusoe."""

    name: str = NAME
    title: str = TITLE
    settings: tuple[Setting, ...] = settings_of(CrusoeSettings)
    settings_type = CrusoeSettings  # the session parses the settings into one (DeclaresSettingsType)
    instance_id_pattern = ID_PATTERN
    instance_id_example = "a UUID such as 3f0c6a1e-2b4d-4c8e-9a7f-1d2e3f4a5b6c"
    create_concurrency = 32  # Crusoe documents no rate limit
    billing = billing_rules.CRUSOE  # how its cloud bills a VM's time (docs/billing.md)
    debug_loggers = ("crusoe_sdk",)

    shapes = ShapesFile(NAME, __package__, "crusoe_shapes.toml")  # its rows of the GPU catalog
    gpus = GpusFile(__package__, "crusoe_shapes.toml")  # the GPU types only it sells

    def native_credentials(self, environ: Mapping[str, str], home: Path) -> NativeCredentials:
        """ReadsNativeCredentials: the cloud's own variables and files (crusoe_native.py)."""
        from .crusoe_native import native_credentials

        return native_credentials(environ, home)

    def embedded_settings(self, endpoint: Mapping[str, Any], time_scale: float) -> dict[str, Any]:
        """Settings for the mock Crusoe of the embedded clouds, from its endpoint record."""
        return {"access_key_id": endpoint["access_key_id"], "secret_key": endpoint["secret_key"],
                "project_id": endpoint["project_id"], "api_endpoint": endpoint["url"], "time_scale": time_scale}

    def connect(self, settings: Mapping[str, Any] | CrusoeSettings) -> CrusoeProvider:
        """A provider for these settings (profile values win over the env vars). No network call: the project (a
        UUID, a name, or none for the key's only project) is resolved by the first call that needs it.

        Raises ConfigError naming a missing setting and its env var, or a malformed secret/time_scale, or a CA
        variable (SSL_CERT_FILE...) naming no file.
        """
        config = parse_settings(CrusoeSettings, settings, title=TITLE, provider=NAME)
        from crusoe_sdk import CrusoeClient

        poll, retry = policies(config.time_scale)
        try:
            client = CrusoeClient(config.access_key_id, config.secret_key, project=config.project_id,
                                  base_url=config.api_endpoint, poll=poll, retry=retry)
        except ValueError as exc:  # the SDK's message never contains the secret
            raise ConfigError(f"Crusoe settings are not usable: {exc}", provider=NAME) from None
        return CrusoeProvider(client, ssh_public_key=config.ssh_public_key,
                              poll_interval=POLL_INTERVAL * config.time_scale)


plugin = CrusoePlugin()


def policies(time_scale: float) -> tuple[Any, Any]:
    """The SDK's (PollPolicy, RetryPolicy) with every interval multiplied by `time_scale`."""
    from crusoe_sdk import PollPolicy, RetryPolicy

    return scaled(PollPolicy(), time_scale), scaled(RetryPolicy(), time_scale)


def _pending(operation: Any, convert: Callable[[Any], T], context: ErrorContext) -> OperationPending[T]:
    """A Crusoe operation as a vm-core Pending (every call translates SDK errors). `id` is the operation id, or
    the instance id when nothing had to be done (deleting a gone VM)."""
    return OperationPending(operation, lambda: translated(context), id=str(operation.id or operation.resource_id),
                            resource_id=str(operation.resource_id), block=operation.result, finish=convert)


class CrusoeProvider:
    """One Crusoe project. Implements Provider, SupportsStopStart, SupportsReservedStart, SupportsReboot,
    SupportsReservations, SupportsReservationTerms, SupportsPlacementGroups (IB partitions), SupportsGetMany and
    Paced.

    Every method may block on HTTP calls (reads are retried by the SDK); none waits for an operation.
    Raises only vm_core.errors exceptions.
    """

    name = NAME
    _catalog = GivenCatalog()  # the catalog given, else the default one

    def __init__(self, client: Any, *, ssh_public_key: str | None = None,
                 catalog: Catalog | None = None, poll_interval: float = POLL_INTERVAL) -> None:
        self._client = client
        self._poll_interval = poll_interval
        self._ssh_public_key = ssh_public_key
        self._given_catalog = catalog
        self._prices: dict[str, float | None] = {}  # reservation id -> $/GPU-h (contract prices do not move)
        self._reservations_unreadable = False  # the key got 403 on the organisation's reservations

    def __repr__(self) -> str:
        return f"CrusoeProvider({self._client!r})"

    @property
    def poll_interval(self) -> float:
        """Seconds between two reads that follow VMs (POLL_INTERVAL, scaled): Crusoe documents no rate limit, and
        a follower's one filtered listing covers every followed VM."""
        return self._poll_interval

    @property
    def endpoint(self) -> str:
        """The API base URL the client uses (the public endpoint when none is configured); DescribesEndpoint."""
        return str(self._client.base_url)

    def account(self) -> str:
        """The project id: Crusoe instances are project-scoped (resolving the project if not done yet)."""
        with translated():
            return f"project {self._client.project_id}"

    # ------------------------------------------------------------------------------------------ reads
    def list_instances(self) -> Iterator[Instance]:
        """Every VM of the project that is not terminated, lazily paged."""
        with translated():
            for vm in self._client.list_instances():
                instance = self._instance(vm)
                if instance.state is not InstanceState.TERMINATED:
                    yield instance

    def get_instance(self, instance_id: str) -> Instance:
        """Raises NotFound when the VM does not exist (any more); UsageError for a malformed id."""
        _check_id(instance_id)
        with translated(ErrorContext(resource_id=instance_id)):
            return self._instance(self._client.get_instance(instance_id))

    def find_instance(self, name: str) -> Instance | None:
        """The oldest VM with exactly this name that is not terminated, or None."""
        with translated():
            # The API's `names` filter is comma-separated: a name with a comma needs the whole list.
            candidates = self._client.list_instances(**({} if "," in name else {"names": [name]}))
            for vm in candidates:
                if vm.name == name and instance_state(vm.state) is not InstanceState.TERMINATED:
                    return self._instance(vm)
        return None

    def get_instances(self, instance_ids: Collection[str]) -> dict[str, Instance | None]:
        """One listing of the project filtered by id (SupportsGetMany; one call per IDS_PER_LISTING ids, which keeps
        the query short and the answer small in a busy project): each id maps to its VM (a terminated one too), or
        to None when the listing does not show it (a failed create removes its VM). Raises VmError."""
        for instance_id in instance_ids:
            _check_id(instance_id)
        with translated():
            listed = {vm.id: self._instance(vm) for part in chunks(list(instance_ids), IDS_PER_LISTING)
                      for vm in self._client.list_instances(ids=part)}
        return {i: listed.get(i) for i in instance_ids}

    # ------------------------------------------------------------------------------------------ create
    def begin_create(self, spec: CreateSpec) -> Pending[Instance]:
        """Ask for one VM (never retried). UsageError/Unsupported before any call for a shape Crusoe does not
        sell, `auto --strict` or spot (Crusoe's API has no spot capacity); CapacityError (scope provider) when no
        location can host it."""
        if spec.spot:
            raise Unsupported("Crusoe's API offers no spot instances", provider=NAME)
        shape = self._shape_for(spec)
        reservation = reservation_spec(spec.reservation, shape.gpu)
        if spec.machine.disk_gib is not None:
            raise _no_disk_size()
        ssh_public_key = self._key_for(spec)
        with translated():
            location = spec.region or self._pick_location(shape, spec.reservation)
        with translated(ErrorContext(region=location, gpu=shape.gpu)):
            operation = self._client.begin_create_instance(
                name=spec.name, type=shape.shape, location=location,
                ssh_public_key=ssh_public_key, reservation_specification=reservation,
                image=spec.machine.image or default_image(shape.shape),
                startup_script=spec.machine.startup_script or "",
                host_channel_adapters=_adapters(spec.placement_group),
            )
        pending = _pending(operation, self._instance, ErrorContext(location, operation.resource_id, shape.gpu))
        return Landed(pending, landing_of(spec.reservation, shape), self._destroy_now)

    def _destroy_now(self, instance_id: str, timeout: float) -> None:
        """Delete a VM and wait until it is gone (at most `timeout` seconds)."""
        self.begin_destroy(instance_id).wait(timeout)

    def _key_for(self, spec: CreateSpec) -> str:
        """The public key the create sends (see the module's docstring); UsageError when there is none."""
        key = spec.ssh_public_key if spec.ssh_public_key is not None else self._ssh_public_key
        if key == NO_KEY:
            return unheld_key()
        if not key:
            raise no_key_error(NAME)
        return key

    def images(self, gpu: str | None, gpu_count: int | None = None, region: str | None = None) -> list[ImageInfo]:
        """Crusoe's public images (`GET /compute/images`), one per `name:tag`, in `region` (a zone) when given;
        the default for the smallest shape of `gpu` is marked (SupportsMachineOptions)."""
        default = default_image(self._shape_for(CreateSpec(name="", gpu=gpu, gpu_count=gpu_count)).shape) \
            if gpu else ""
        with translated():
            listed = list(self._client.list_images())
        return [ImageInfo(NAME, ref, image.description, tuple(image.locations), ref == default, image.id)
                for image in listed for ref in image.references
                if region is None or not image.locations or region in image.locations]

    def check_machine(self, gpu: str, gpu_count: int | None, region: str | None, options: MachineOptions) -> None:
        """UsageError when Crusoe would refuse the options: an image it does not list (in `region`), or a disk
        size (Crusoe's create has no boot disk size: the OS disk comes with the image). Crusoe documents no limit
        on `startup_script`."""
        if options.disk_gib is not None:
            raise _no_disk_size()
        if options.image is None:
            return
        offered = self.images(None, region=region)
        if not any(i.name == options.image for i in offered):
            where = f" in {region}" if region else ""
            raise unknown_image(options.image, NAME, where, sorted({i.name for i in offered}))

    def _shape_for(self, spec: CreateSpec) -> ShapeEntry:
        """The pinned shape, else the smallest catalog shape of the GPU (UsageError listing what Crusoe sells)."""
        gpu = self._catalog.gpu(spec.gpu).name
        if spec.shape:
            return self._catalog.lookup(NAME, spec.shape) or ShapeEntry(NAME, gpu, spec.shape, spec.gpu_count or 0)
        shapes = self._catalog.shapes_for(NAME, gpu, spec.gpu_count)
        if shapes:
            return shapes[0]
        sold = ", ".join(f"{s.gpu}:{s.gpu_count} ({s.shape})" for s in self._catalog.shapes if s.provider == NAME)
        wanted = f"{gpu}:{spec.gpu_count}" if spec.gpu_count else gpu
        raise UsageError(f"Crusoe sells no {wanted} shape; it sells {sold}", provider=NAME)

    def _pick_location(self, shape: ShapeEntry, request: ReservationRequest) -> str:
        if request.mode is not ReservationMode.NONE:
            zone = self._reserved_zone(shape, request)
            if zone:
                return zone
        free = (zone for (_shape, zone), quantity in self._capacities([shape.shape]).items() if quantity > 0)
        zone = next(free, None)
        if zone is None:
            raise CapacityError(f"Crusoe has no capacity for {shape.shape} in any location",
                                scope=Scope.PROVIDER, provider=NAME)
        return zone

    def _reserved_zone(self, shape: ShapeEntry, request: ReservationRequest) -> str | None:
        """The first zone of the cheapest usable reservation with room for one VM of `shape` (the named one
        for `--reservation ID`, which raises NotFound/CapacityError when it cannot host it)."""
        usable = self._usable_reservations(shape, self._reservations())
        if request.mode is ReservationMode.ID:
            usable = [r for r in usable if r.id == request.reservation_id]
            if not usable:
                raise NotFound(f"no reservation {request.reservation_id} for {shape.shape} in this project",
                               provider=NAME, suggestion=Hint.say("{} lists reservations", Command.of(
                                   "offers", "--gpu", shape.gpu, "--provider", NAME)))
        zones = self._zones()
        with_room = (r for r in usable if r.free_quantity >= max(1, shape.gpu_count))
        zone = next((z for r in with_room for z in _zones_of(r.locations, zones)), None)
        if zone is None and request.mode is ReservationMode.ID:
            raise CapacityError(f"reservation {request.reservation_id} has no room for {shape.shape}",
                                scope=Scope.PROVIDER, provider=NAME)
        return zone

    # ------------------------------------------------------------------------------------------ IB partitions
    def placement_group(self, labels: Mapping[str, str], region: str, shape: str) -> str | None:
        """The fleet's IB partition for 8-GPU InfiniBand `shape` VMs in `region` (`_crusoe_fabric`: the one named
        after the fleet's id there, else made on the location's IB network for the type); None for another type
        or a location without such a network. Blocks; raises VmError."""
        entry = self._catalog.lookup(NAME, shape)
        if not fabric.joins_fabric(shape, entry.gpu_count if entry is not None else 0):
            return None
        return fabric.ensure(self._client, labels, region, shape)

    def delete_placement_groups(self, labels: Mapping[str, str]) -> list[str]:
        """Delete the IB partitions named after the fleet's id (never another); the ids deleted. Raises VmError
        (a partition still in use by a VM is a refusal)."""
        return fabric.delete_all(self._client, labels)

    # ------------------------------------------------------------------------------------------ actions
    def begin_destroy(self, instance_id: str) -> Pending[None]:
        """Delete a VM; an already-gone VM gives an already-finished Pending."""
        return self._act(self._client.begin_delete_instance, instance_id, lambda _result: None)

    def begin_stop(self, instance_id: str) -> Pending[Instance]:
        """STOP: releases the VM's reserved capacity."""
        return self._act(self._client.begin_stop_instance, instance_id, self._instance)

    def begin_start(self, instance_id: str) -> Pending[Instance]:
        """START: the VM tries to go back to a reservation (CapacityError from wait() when nothing fits). When
        it comes back on-demand although a reservation it may use exists, the Pending's `note` says so after
        `wait`, with both prices."""
        return self._start(instance_id, strict=False)

    def begin_start_reserved(self, instance_id: str) -> Pending[Instance]:
        """START only when a reservation the VM may use (product line, zone, project) has room for it now;
        CapacityError before anything is sent otherwise. Should the reservation fill up meanwhile and the VM
        start on-demand, wait() raises CapacityError saying so (the VM is left running)."""
        return self._start(instance_id, strict=True)

    def _start(self, instance_id: str, *, strict: bool) -> Pending[Instance]:
        _check_id(instance_id)
        with translated(ErrorContext(resource_id=instance_id)):
            vm = self._client.get_instance(instance_id)
            shape = self._catalog.lookup(NAME, vm.type) or ShapeEntry(NAME, "", vm.type, 0)
            usable = [r for r in self._usable_reservations(shape, self._reservations())
                      if _zones_of(r.locations, [vm.location])]
        room = [r for r in usable if r.free_quantity >= max(1, shape.gpu_count)]
        if strict and not room:
            full = f" (full: {', '.join(r.id for r in usable)})" if usable else ""
            raise CapacityError(f"no reservation {vm.name} may use has room for {vm.type} in {vm.location}"
                                f"{full}; not started", scope=Scope.REGION, region=vm.location, provider=NAME,
                                suggestion=Hint.run("start", instance_id, "--provider", NAME))
        pending = self._act(self._client.begin_start_instance, instance_id, self._instance)
        reserved_price = self._prices.get(usable[0].id) if usable else None
        fallback = _Fallback(usable[0].id, reserved_price * shape.gpu_count if reserved_price else None, strict) \
            if usable else None
        return Noted(pending, fallback.check if fallback else lambda _instance: "")

    def begin_reboot(self, instance_id: str, *, hard: bool = False) -> Pending[Instance]:
        """`hard`: RESET (a hard reset; the VM keeps its reservation). Else STOP, then START (the API has no
        guest reboot): the stop releases reserved capacity, which the start tries to get back; the Pending's
        `note` says so."""
        if hard:
            return self._act(self._client.begin_reset_instance, instance_id, self._instance)
        return StopThenStart(self.begin_stop(instance_id), self.begin_start, note=REBOOT_NOTE)

    def _act(self, begin: Callable[[str], Any], instance_id: str, convert: Callable[[Any], T]) -> Pending[T]:
        _check_id(instance_id)
        context = ErrorContext(resource_id=instance_id)
        with translated(context):
            return _pending(begin(instance_id), convert, context)

    # ------------------------------------------------------------------------------------------ offers
    def offers(self, gpu: str, gpu_count: int | None = None) -> list[Offer]:
        """On-demand offers per shape and zone from `/capacities` (catalog list price), plus one reserved
        offer per zone of each usable reservation large enough for one VM of the shape: with the VMs its free
        GPUs hold as capacity, so a full reservation is an offer with capacity 0 (not available). Cheapest
        first."""
        shapes = self._catalog.shapes_for(NAME, self._catalog.gpu(gpu).name, gpu_count)
        if not shapes:
            return []
        with translated():
            capacity = self._capacities([s.shape for s in shapes])
            reservations = self._reservations()
            reserved = [(s, r) for s in shapes for r in self._usable_reservations(s, reservations)
                        if r.quantity >= s.gpu_count]
            zones = self._zones() if reserved else []
        offers = [offer(s, zone, s.price_per_hour or 0.0, qty, available=qty > 0)
                  for s in shapes for (kind, zone), qty in capacity.items() if kind == s.shape]
        offers += [o for s, r in reserved for o in self._reserved_offers(s, r, zones)]
        return sorted(offers, key=lambda o: (o.price_per_hour, o.region, o.shape))

    def _reserved_offers(self, shape: ShapeEntry, reservation: Any, zones: list[str]) -> list[Offer]:
        per_gpu = self._prices.get(reservation.id)
        if per_gpu is None or shape.gpu_count < 1:
            return []
        capacity = reservation.free_quantity // shape.gpu_count
        return [offer(shape, zone, round(per_gpu * shape.gpu_count, 4), capacity, available=capacity > 0,
                      reservation_id=reservation.id) for zone in _zones_of(reservation.locations, zones)]

    # ------------------------------------------------------------------------------------------ reservations
    def list_reservations(self) -> list[ReservationInfo]:
        """The organisation's effective reservations."""
        with translated():
            reservations = self._reservations()
        return [self._reservation_info(r) for r in reservations]

    def reservation_terms(self) -> ReservationListing:
        """SupportsReservationTerms: the effective reservations with their contract period and VMs."""
        from crusoe_sdk.models import parse_time

        with translated():
            reservations = self._reservations()
        note = RESERVATIONS_UNREADABLE.format(organization=self._client.organization_id()) \
            if self._reservations_unreadable else ""
        return ReservationListing(tuple(
            ReservationTerms(self._reservation_info(r), starts_at=_epoch(parse_time(r.contract_start_date)),
                             ends_at=_epoch(parse_time(r.contract_end_date)), instance_ids=tuple(r.vm_ids),
                             usable=not r.projects or self._client.project_id in r.projects)
            for r in reservations), note)

    def _reservation_info(self, r: Any) -> ReservationInfo:
        return ReservationInfo(provider=NAME, id=r.id, gpu=reservation_gpu(r.product_line, self._catalog),
                               regions=tuple(r.locations), total_gpus=r.quantity, used_gpus=r.used_quantity,
                               price_per_gpu_hour=self._prices.get(r.id))

    # ------------------------------------------------------------------------------------------ helpers
    def _reservations(self) -> list[Any]:
        """Effective reservations of the organisation (fresh usage); refreshes the price cache. A key that may
        not read them (403 on the organisation's reservations) gets none, and one warning on stderr: creates and
        offers go on without reservations (the cloud's lowest_cost may still place a VM in one)."""
        if self._reservations_unreadable:
            return []
        from crusoe_sdk import PermissionDenied, ProjectUnavailable

        organization = self._client.organization_id()
        try:
            reservations = list(self._client.list_reservations(status="effective", organization_id=organization))
        except PermissionDenied as exc:
            if isinstance(exc, ProjectUnavailable):
                raise
            self._reservations_unreadable = True
            log.warning("vm: warning: %s", RESERVATIONS_UNREADABLE.format(organization=organization))
            return []
        self._prices.update({r.id: _price(r.price) for r in reservations})
        return reservations

    def _usable_reservations(self, shape: ShapeEntry, reservations: list[Any]) -> list[Any]:
        """Those of `reservations` this project may use that can host `shape`, cheapest first (as lowest_cost
        picks)."""
        line = product_line(shape.shape)
        project = self._client.project_id
        usable = [r for r in reservations
                  if line and r.product_line == line and (not r.projects or project in r.projects)]
        return sorted(usable, key=lambda r: (self._prices.get(r.id) or float("inf"), r.id))

    def _capacities(self, shapes: list[str]) -> dict[tuple[str, str], int]:
        """(shape, zone) -> VMs `/capacities` says fit, in the API's order (largest row of duplicates)."""
        found: dict[tuple[str, str], int] = {}
        for row in self._client.list_capacities(types=shapes):
            key = (row.type, row.location)
            found[key] = max(found.get(key, 0), row.quantity)
        return found

    def _zones(self) -> list[str]:
        return list(self._client.list_locations())

    def _instance(self, vm: Any) -> Instance:
        """The vm-core Instance of a Crusoe VM. `billing_type` "Spot" (a VM made elsewhere: this API creates
        none) is a spot VM."""
        entry = self._catalog.lookup(NAME, vm.type)
        spot = vm.billing_type == SPOT_BILLING
        return Instance(
            provider=NAME, id=vm.id, name=vm.name, state=instance_state(vm.state),
            gpu=entry.gpu if entry else "", gpu_count=entry.gpu_count if entry else 0, region=vm.location,
            shape=vm.type, reserved=vm.reservation_id != "", reservation_id=vm.reservation_id,
            price_per_hour=self._vm_price(vm.reservation_id, entry, spot=spot), created_at=vm.created_at,
            public_ip=vm.public_ipv4, ssh_user=SSH_USER, native=vm, spot=spot,
        )

    def _vm_price(self, reservation_id: str, entry: ShapeEntry | None, *, spot: bool = False) -> float | None:
        """Reservation $/GPU-h x GPUs for a reserved VM, else the catalog's list price: its spot price for a spot
        VM (None if unknown)."""
        if entry is None:
            return None
        if spot:
            return entry.spot_price_per_hour
        if reservation_id:
            if reservation_id not in self._prices:
                self._reservations()
            per_gpu = self._prices.setdefault(reservation_id, None)
            if per_gpu is not None:
                return round(per_gpu * entry.gpu_count, 4)
        return entry.price_per_hour


SXM_IMAGE = "ubuntu22.04-nvidia-sxm-docker:latest"
PCIE_IMAGE = "ubuntu22.04-nvidia-pcie-docker:latest"


def default_image(vm_type: str) -> str:
    """The image a create boots without `--image`, as dstack chooses: Ubuntu 22.04 with NVIDIA drivers, CUDA and
    Docker, for SXM GPUs (`...-sxm...` types, with Fabric Manager) or PCIe GPUs (the others)."""
    return SXM_IMAGE if "-sxm" in vm_type else PCIE_IMAGE


def _no_disk_size() -> UsageError:
    return UsageError("Crusoe's create takes no boot disk size: the OS disk comes with the image", provider=NAME,
                      suggestion="leave out --disk-size on Crusoe")


@dataclass(frozen=True)
class _Fallback:
    """The reservation a started VM could have gone back to (cheapest usable one), its price for the VM, and
    whether landing on-demand is an error (`--strict`)."""

    reservation_id: str
    price_per_hour: float | None
    strict: bool

    def check(self, instance: Instance) -> str:
        """"" when `instance` is reserved; else the note (or, when strict, CapacityError) that it is not."""
        if instance.reserved:
            return ""
        now = f"${instance.price_per_hour:.2f}/h" if instance.price_per_hour is not None else "the list price"
        was = f" (${self.price_per_hour:.2f}/h)" if self.price_per_hour is not None else ""
        note = f"started on-demand at {now}: reservation {self.reservation_id}{was} has no room for it"
        if self.strict:
            raise CapacityError(f"{instance.name or instance.id} {note} (it filled up during the start); the VM"
                                " is running on-demand", scope=Scope.REGION, region=instance.region,
                                provider=NAME, suggestion=Hint.run("stop", instance.id, "--provider", NAME))
        return note


def _adapters(partition_id: str | None) -> list[Any]:
    """The create's host channel adapters: one on the fleet's IB partition, or none."""
    from crusoe_sdk import HostChannelAdapterRequest

    return [HostChannelAdapterRequest(partition_id)] if partition_id else []


def _zones_of(regions: Iterable[str], zones: list[str]) -> list[str]:
    """The zones (`us-east1-a`) of Crusoe regions (`us-east1`); a zone name matches itself."""
    wanted = list(regions)
    return [z for z in zones if any(z == r or z.startswith(f"{r}-") for r in wanted)]


def _epoch(moment: Any) -> float | None:
    """A datetime (or None) as epoch seconds."""
    return None if moment is None else float(moment.timestamp())


def _price(text: str) -> float | None:
    """A reservation's `price` string as $/GPU-h (None when absent or unreadable)."""
    try:
        return float(text) if text else None
    except ValueError:
        return None


_check_id = id_check(ID_PATTERN, "{id!r} is not a Crusoe instance id (a UUID)", provider=NAME)
