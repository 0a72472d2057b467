"""The Lambda Cloud provider: vm-core's adapter over lambda_sdk.

How Lambda differs, and what this adapter does about it:
- No stop/start in the API: LambdaProvider is not SupportsStopStart (the CLI says "not supported by Lambda Cloud").
  Reboot is Lambda's restart; there is no API for a hard (cold) reboot.
- A launch answers with an instance id at once and the instance then boots: the Pending *is* the instance
  (`id` = `resource_id` = instance id), resumable anywhere. A fleet follows all its VMs (launches, deletions) with
  one `GET /instances` per `poll_interval` instead of one `GET /instances/{id}` per launch: Lambda allows one
  request per second for the whole account.
- Capacity is read from GET /instance-types before launching, never probed with launches (Lambda allows one
  launch per 12 s): a region without listed capacity is a CapacityError before any launch. A launch reuses a
  read younger than TYPES_TTL (a fleet's launches, 12 s apart, do not each read it again); a launch Lambda
  refuses for capacity drops it, and `offers` always reads afresh.
- Reservations: `--reservation ID` launches on that reservation only; `auto` and `none` launch on-demand (Lambda
  cannot pick a reservation itself). Instances on a reservation cannot be terminated through the API.
  GET /reservations is a mock extension; where it is 404 (the real API), `--reservation ID` is refused before
  any launch (the API would ignore the id and launch on-demand).
- Terminate takes a list of ids: `begin_destroy_many` sends up to `terminate_batch` (default 1000) per call.
  Lambda refuses the whole call when one id is reserved; the adapter then finds the reserved ids in one listing
  and sends the others again.
- Names are not unique: `find_instance` returns the first match in Lambda's listing, which is launch order.
- Lambda does not report launch times (`created_at` is None).

Importing this module imports neither lambda_sdk nor requests; `connect` does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..catalog import default_catalog
from ..errors import CapacityError, ConfigError, NotFound, Scope, Transient, Unsupported, UsageError, VmError
from ..hints import Command, Hint
from ..kit import AccountKeys, Backoff, Finished, Memo, OperationPending, PolledPending, ShapesFile
from ..kit.batch import Answers, batch_call, destroy_many
from ..kit.ids import id_check
from ..kit.keys import key_fingerprint
from ..kit.ongoing import gave_up
from ..kit.polling import scaled
from ..kit.settings import optional_text, parse_settings, positive_number, seconds, setting, settings_of, whole_number
from ..kit.shapes import GpusFile
from ..machine import ImageInfo, MachineOptions, too_big, unknown_image
from ..model import CreateSpec, Instance, InstanceState, Offer
from ..provider import Pending, ReservationInfo, ReservationListing
from ..sshkeys import NO_KEY, public_key_setting
from . import _lambda_map as lm
from . import billing_rules
from ._lambda_map import API_KEY_ENV, NAME, Where, translated

if TYPE_CHECKING:
    from lambda_sdk import Instance as NativeInstance
    from lambda_sdk import InstanceTypeAvailability, LambdaClient, LaunchOperation, Reservation

    from ..native import NativeCredentials

T = TypeVar("T")

ID_PATTERN = r"[0-9a-f]{32}"
_MAX_NAME = 64
# The limiter paces calls this much wider than the configured (documented) limits: paced exactly, jitter in
# arrival times makes about every other call of a burst arrive early and come back as a 429.
_HEADROOM = 1.1
# Ids per terminate call (the `terminate_batch` setting's default). Lambda documents no limit on `instance_ids`;
# this cap is ours: a request of at most 37 kB of ids, and one call for any fleet of up to 1,000 Lambda VMs (each
# further call waits a request interval).
BATCH_DESTROY_LIMIT = 1000
# Seconds (times time_scale) a GET /instance-types read is reused by launches: five launch intervals.
TYPES_TTL = 60.0
# Seconds (times time_scale) a GET /reservations read is reused: a fleet's offers and its check for reservations
# that cannot be terminated, asked one after the other, share one read.
RESERVATIONS_TTL = 5.0
# A follower reads (GET /instances) once per this many request intervals at most, leaving the rest of Lambda's
# 1 request/s to the calls it is waiting on (terminates, launches).
_POLL_REQUESTS = 2


# ----------------------------------------------------------------------------------------------- plugin
@dataclass(frozen=True, kw_only=True)
class LambdaSettings:
    """The settings of a Lambda profile, validated (kit.settings)."""

    api_key: str = setting(env=API_KEY_ENV, secret=True, help="API key (https://cloud.lambda.ai/api-keys)",
                           missing_hint="create a key at https://cloud.lambda.ai/api-keys")
    api_endpoint: str | None = setting(default=None, parse=optional_text,
                                       help="API base URL (default https://cloud.lambda.ai/api/v1)")
    ssh_key_name: str | None = setting(default=None, parse=optional_text,
                                       help="an SSH key of the account, by name, that launches use when no "
                                            "public key is given (--ssh-key, ssh_public_key)")
    ssh_public_key: str | None = setting(
        default=None, parse=lambda raw: public_key_setting(raw, NAME),
        help="public key launches use, added to the account's SSH keys if missing (wins over ssh_key_name; "
             "default: ~/.ssh/id_ed25519.pub, id_ecdsa.pub or id_rsa.pub)")
    request_interval: float = setting(default=1.0, parse=seconds,
                                      help="Lambda's limit, seconds per API call (documented: 1)")
    launch_interval: float = setting(default=12.0, parse=seconds,
                                     help="Lambda's limit, seconds per launch (documented: 12)")
    request_burst: int = setting(default=5, parse=whole_number,
                                 help="API calls that may go back to back before request_interval applies "
                                      "(not documented: 5 is inferred)")
    time_scale: float = setting(default=1.0, parse=positive_number,
                                help="multiplies poll and retry intervals (fast mock clouds)")
    terminate_batch: int = setting(default=BATCH_DESTROY_LIMIT, parse=whole_number,
                                   help=f"ids per terminate call (default {BATCH_DESTROY_LIMIT}; no documented limit)")


class LambdaPlugin:
    """The `vm_core.providers` entry point `lambda`."""

    name = NAME
    title = "Lambda Cloud"
    settings = settings_of(LambdaSettings)
    settings_type = LambdaSettings  # the session parses the settings into one (DeclaresSettingsType)
    instance_id_pattern = ID_PATTERN
    instance_id_example = "32 hex digits such as 0920582c7ff041399e34823a0be62549"
    create_concurrency = 4  # the SDK spaces launches launch_interval (12 s) apart anyway
    billing = billing_rules.LAMBDA  # how its cloud bills a VM's time (docs/billing.md)
    debug_loggers = ("lambda_sdk",)

    shapes = ShapesFile(NAME, __package__, "lambda_shapes.toml")  # its rows of the GPU catalog
    gpus = GpusFile(__package__, "lambda_shapes.toml")  # the GPU types only it sells

    def native_credentials(self, environ: Mapping[str, str], home: Path) -> NativeCredentials:
        """ReadsNativeCredentials: the cloud's own variables and files (lambda_native.py)."""
        from .lambda_native import native_credentials

        return native_credentials(environ, home)

    def embedded_settings(self, endpoint: Mapping[str, Any], time_scale: float) -> dict[str, Any]:
        """Settings for the mock Lambda of the embedded clouds: its documented rate limits (1 request/s, 1
        launch/12 s) scaled like the mock's clock, so the client paces itself as the mock does."""
        return {"api_key": endpoint["api_key"], "api_endpoint": endpoint["url"], "time_scale": time_scale,
                "request_interval": 1.0 * time_scale, "launch_interval": 12.0 * time_scale}

    def connect(self, settings: Mapping[str, Any] | LambdaSettings) -> LambdaProvider:
        """A provider for one Lambda account; no network call. Raises ConfigError for bad settings (and for a CA
        variable, SSL_CERT_FILE..., naming no file)."""
        config = parse_settings(LambdaSettings, settings, title=self.title, provider=NAME)
        from lambda_sdk import LambdaClient, PollPolicy, RateLimit, RetryPolicy

        scale = config.time_scale
        poll = scaled(PollPolicy(), scale)
        poll = replace(poll, visibility_grace=poll.visibility_grace * scale)
        try:
            client = LambdaClient(
                config.api_key, base_url=config.api_endpoint,
                rate_limit=RateLimit(config.request_interval * _HEADROOM, config.launch_interval * _HEADROOM,
                                     request_burst=config.request_burst),
                retry=scaled(RetryPolicy(), scale), poll=poll,
            )
        except ValueError as exc:  # the SDK's message never contains the key
            raise ConfigError(f"Lambda Cloud settings are not usable: {exc}", provider=NAME) from None
        return LambdaProvider(client, ssh_key_name=config.ssh_key_name, ssh_public_key=config.ssh_public_key,
                              time_scale=scale, account=key_fingerprint(config.api_key),  # the API has no account id
                              request_interval=config.request_interval * _HEADROOM,
                              terminate_batch=config.terminate_batch)


plugin = LambdaPlugin()

NO_RESERVATIONS_LISTED = ("the Lambda Cloud API at {url} lists no reservations (GET /reservations is not served): "
                          "reserved instances are arranged with Lambda and shown in its console")


# --------------------------------------------------------------------------------------------- provider
class LambdaProvider:
    """One Lambda Cloud account: Provider + SupportsReboot + SupportsReservations + SupportsReservationTerms +
    SupportsBatchDestroy + Paced (not SupportsStopStart).

    Thread-safe: the client's rate limiter is shared by every thread using this provider, so concurrent
    creates are spaced a launch interval apart instead of failing with 429s (a 429 is retried by the client).
    """

    name = NAME
    needs_ssh_key = True  # a launch names exactly one account key: no --no-ssh-key (sshkeys.check_keys)

    def __init__(self, client: LambdaClient, *, ssh_key_name: str | None = None, ssh_public_key: str | None = None,
                 time_scale: float = 1.0, account: str = "", request_interval: float = 1.0,
                 terminate_batch: int = BATCH_DESTROY_LIMIT) -> None:
        self._client = client
        self._request_interval = request_interval
        self._terminate_batch = terminate_batch
        self._account = account
        self._ssh_public_key = ssh_public_key
        self._scale = time_scale
        self._ssh_keys = AccountKeys(listed=self._listed_keys, add=self._add_key, preferred=ssh_key_name,
                                     title="Lambda", provider=NAME, add_at="https://cloud.lambda.ai/ssh-keys")
        self._regions = Memo(self._read_regions)  # the account's regions, read once
        self._types = Memo(self._read_types, ttl=TYPES_TTL * time_scale)  # GET /instance-types, reused by launches
        self._held = Memo(self._read_reservations, ttl=RESERVATIONS_TTL * time_scale)  # GET /reservations

    def __repr__(self) -> str:
        return f"LambdaProvider(base_url={self._client.base_url!r})"

    @property
    def endpoint(self) -> str:
        """The API base URL the client uses (the public endpoint when none is configured); DescribesEndpoint."""
        return self._client.base_url

    @property
    def batch_destroy_limit(self) -> int:
        return self._terminate_batch

    @property
    def poll_interval(self) -> float:
        """Seconds between two listings that follow VMs (creates and deletions alike): two of the client's request
        intervals (Lambda allows 1 request/s), and at least one second (scaled)."""
        return max(_POLL_REQUESTS * self._request_interval, 1.0 * self._scale)

    def account(self) -> str:
        """A fingerprint of the API key (see key_fingerprint); "" when the provider was built without one."""
        return self._account

    # -------------------------------------------------------------------------------------- reads
    def list_instances(self) -> Iterator[Instance]:
        """Every instance that is not terminated (booting, active, unhealthy, terminating), page by page."""
        with translated():
            for page in self._client.list_instances().by_page():
                live = [n for n in page if lm.state_of(n.status) is not InstanceState.TERMINATED]
                yield from self._to_instances(live)

    def get_instance(self, instance_id: str) -> Instance:
        """Raises NotFound once Lambda forgot it (a terminated instance is shown for a while first)."""
        _check_id(instance_id)
        with translated(Where(instance_id=instance_id)):
            return self._to_instances([self._client.get_instance(instance_id)])[0]

    def find_instance(self, name: str) -> Instance | None:
        """The first live (not terminating) instance named `name` in Lambda's listing, which is launch order,
        so the oldest wins when names repeat (Lambda allows that). None when there is none."""
        return next((i for i in self.list_instances() if i.name == name and not i.state.gone), None)

    def list_reservations(self) -> list[ReservationInfo]:
        """The account's reservations (none where the API has no reservation listing)."""
        return [lm.reservation_info(r) for r in self._reservations()]

    def reservation_terms(self) -> ReservationListing:
        """SupportsReservationTerms: the account's reservations with their period and instances (GET
        /reservations, a mock extension); none, said in the note, where the API does not serve it."""
        held = self._reservations()
        note = "" if self._serves_reservations() else NO_RESERVATIONS_LISTED.format(url=self._client.base_url)
        return ReservationListing(tuple(lm.reservation_terms(r) for r in held), note)

    def offers(self, gpu: str, gpu_count: int | None = None) -> list[Offer]:
        """On-demand offers for every region (available only where Lambda lists capacity; it never says how
        much), plus one offer per reservation that can host the shape (capacity 0 when it is full). Empty for
        GPUs Lambda does not sell."""
        catalog = default_catalog()
        shapes = catalog.shapes_for(NAME, catalog.gpu(gpu).name, gpu_count)
        if not shapes:
            return []
        types = self._types.fresh(self._account)
        return [*lm.on_demand_offers(shapes, types, self._regions(self._account)),
                *lm.reserved_offers(shapes, types, self._reservations())]

    # ------------------------------------------------------------------------------------- create
    def begin_create(self, spec: CreateSpec) -> Pending[Instance]:
        """Launch one instance and return at once. Raises UsageError/Unsupported for what Lambda cannot do,
        CapacityError before launching when Lambda lists no capacity, CapacityError/QuotaError when the launch
        is refused, Transient when the answer was lost (the instance may exist: look it up by name), Interrupted
        when `spec.abort` was set while the launch waited for its slot (12 s apart): it was not sent.
        Lambda sells no spot instances: `spec.spot` is Unsupported."""
        if spec.spot:
            raise Unsupported("Lambda Cloud offers no spot instances", provider=NAME)
        if spec.machine.disk_gib is not None:
            raise _no_disk_size()
        name = _checked_name(spec.name)
        reservation_id = lm.launch_reservation_id(spec.reservation, spec.gpu)
        if reservation_id and not self._serves_reservations():
            raise self._no_reservations(reservation_id)
        shape = spec.shape or lm.smallest_shape(spec.gpu, spec.gpu_count)
        if spec.ssh_public_key == NO_KEY:
            raise UsageError("--no-ssh-key: a Lambda launch names one of the account's SSH keys, so every VM has "
                             "one", provider=NAME, suggestion="give your public key with --ssh-key PATH")
        ssh_key = self._ssh_keys.name_for(spec.ssh_public_key or self._ssh_public_key)  # never another's key
        if reservation_id:
            region = spec.region or self._reservation_region(reservation_id, spec.gpu)
        else:
            region = self._region_with_capacity(shape, spec.region)
        try:
            with translated(Where(region=region)):
                operation = self._client.launch_instance(
                    region_name=region, instance_type_name=shape, ssh_key_names=[ssh_key], name=name or None,
                    tags=spec.labels or None, reservation_id=reservation_id or None, abort=spec.abort,
                    image=_image_spec(spec.machine.image), user_data=spec.machine.startup_script)
        except CapacityError:
            self._types.forget(self._account)  # the capacity it listed is gone: the next launch reads again
            raise
        return _Launch(self, operation, reservation_id)

    def images(self, gpu: str | None, gpu_count: int | None = None, region: str | None = None) -> list[ImageInfo]:
        """Lambda's image families (`GET /images`, one object per image and region), in `region` when given. The
        default is what a launch without `image` boots, the latest Lambda Stack (drivers, CUDA, PyTorch): vm
        sends none, and marks the newest `lambda-stack-*` family (SupportsMachineOptions)."""
        with translated():
            listed = list(self._client.list_images())
        families: dict[str, list[Any]] = {}
        for image in listed:
            if region is None or image.region.name == region:
                families.setdefault(image.family, []).append(image)
        stacks = sorted(f for f in families if f.startswith("lambda-stack-") and "legacy" not in f)
        default = stacks[-1] if stacks else ""
        return [ImageInfo(NAME, family, images[0].name, tuple(sorted({i.region.name for i in images})),
                          family == default, images[0].id)
                for family, images in sorted(families.items())]

    def check_machine(self, gpu: str, gpu_count: int | None, region: str | None, options: MachineOptions) -> None:
        """UsageError when Lambda would refuse the options: an image family or id it does not list (in `region`),
        `user_data` over its 1 MB (taken as 1,000,000 bytes), or a disk size (a launch has none: the disk comes
        with the instance type)."""
        if options.disk_gib is not None:
            raise _no_disk_size()
        script = options.startup_script
        if script is not None and len(script.encode()) > MAX_USER_DATA:
            raise too_big("--startup-script (user_data)", len(script.encode()), MAX_USER_DATA, NAME)
        if options.image is None:
            return
        with translated():
            listed = [i for i in self._client.list_images() if region is None or i.region.name == region]
        if not any(options.image in (i.family, i.id) for i in listed):
            where = f" in {region}" if region else ""
            raise unknown_image(options.image, NAME, where, sorted({i.family for i in listed}))

    def _region_with_capacity(self, shape: str, requested: str | None) -> str:
        """The requested region if Lambda lists capacity there, else the first region that has some. A reused
        read that would refuse is read again first: only a fresh read says there is no capacity."""
        reused = self._types.remembered(self._account)
        sold = (reused[0] if reused else self._types.fresh(self._account)).get(shape)
        if reused and (sold is None or not _has_room(sold, requested)):
            sold = self._types.fresh(self._account).get(shape)
        if sold is None:
            raise UsageError(f"Lambda Cloud does not list instance type {shape}", provider=NAME,
                             suggestion=f"Lambda sells (--gpu): {lm.sold_listing()}")
        with_room = [r.name for r in sold.regions_with_capacity_available]
        if requested is None and with_room:
            return with_room[0]
        if requested is None:
            raise CapacityError(f"no Lambda Cloud region has capacity for {shape} now", scope=Scope.PROVIDER,
                                provider=NAME, suggestion="try another GPU count, another provider, or later")
        if requested in with_room:
            return requested
        if requested not in self._regions(self._account):
            raise UsageError(f"unknown Lambda Cloud region {requested!r}; regions: "
                             f"{', '.join(self._regions(self._account))}", provider=NAME)
        raise CapacityError(f"Lambda Cloud lists no capacity for {shape} in {requested}", scope=Scope.REGION,
                            region=requested, provider=NAME,
                            suggestion=f"regions with capacity now: {', '.join(with_room) or 'none'}")

    def _reservation_region(self, reservation_id: str, gpu: str) -> str:
        found = next((r for r in self._reservations() if r.id == reservation_id), None)
        if found is None or found.region is None:
            raise NotFound(f"no Lambda reservation {reservation_id} is visible to this account", provider=NAME,
                           suggestion=Hint.say("check the id ({} lists reservations), or give --region",
                                               Command.of("offers", "--gpu", gpu, "--provider", NAME)))
        return found.region.name

    def _listed_keys(self) -> list[tuple[str, str]]:
        with translated():
            return [(k.name, k.public_key) for k in self._client.list_ssh_keys()]

    def _add_key(self, name: str, public_key: str) -> str:
        with translated():
            return self._client.add_ssh_key(name, public_key).name

    # ---------------------------------------------------------------------------- destroy, reboot
    def begin_destroy(self, instance_id: str) -> Pending[None]:
        """Terminate; already gone gives a finished Pending, whose wait returns at once. Raises Unsupported for
        an instance on a reservation (Lambda refuses; it keeps running)."""
        _check_id(instance_id)
        with translated(Where(instance_id=instance_id)):
            terminated = self._client.terminate_instance(instance_id)
        watch = self._termination(instance_id)
        if terminated is None and watch.finished():
            return Finished(instance_id, None)
        return watch

    def begin_destroy_many(self, instance_ids: Sequence[str]) -> dict[str, Pending[None] | VmError]:
        """Terminate many instances, `terminate_batch` ids per POST /instance-operations/terminate. Each id
        maps to a Pending (terminating; finished when it was already gone) or to its error: UsageError for a
        malformed id, Unsupported for a reserved instance (Lambda refuses the whole call then: the reserved ids
        are found in one listing and the others sent again), the call's error when a call failed."""
        return destroy_many(instance_ids, check=_check_id, limit=self._terminate_batch, send=self._terminate_ids)

    def _terminate_ids(self, ids: list[str]) -> Answers:
        """One terminate call; when a reserved id made Lambda refuse it, one listing to find the reserved ids and
        one more call for the others. Should the listing not tell which id is reserved, each id is sent alone."""
        from lambda_sdk import ReservedInstanceError

        try:
            return self._terminate(ids, passing=(ReservedInstanceError,))
        except ReservedInstanceError:
            return self._terminate_around_reserved(ids)

    def _terminate_around_reserved(self, ids: list[str]) -> Answers:
        """Lambda refused the batch `ids` because one is reserved: find which with one listing, refuse those and
        send the others again (each alone when the listing shows none reserved)."""
        from lambda_sdk import ReservedInstanceError

        try:
            wanted = set(ids)
            reserved = [n.id for n in self._client.list_instances() if n.id in wanted and n.is_reserved]
        except Exception as exc:
            return dict(lm.ERRORS.answers(ids, exc))
        if not reserved:
            return {i: answer for one in ids for i, answer in self._terminate([one], Where(instance_id=one)).items()}
        others = [i for i in ids if i not in reserved]
        refused: Answers = {i: lm.reserved_refusal(i) for i in reserved}
        try:
            return {**refused, **self._terminate(others, passing=(ReservedInstanceError,))}
        except ReservedInstanceError:  # refused again: none of these is reserved by the listing, so they failed
            again = VmError("Lambda refused to terminate these instances as reserved, although its listing shows "
                            "them on-demand; nothing was terminated", provider=NAME,
                            suggestion="run the destroy again")
            return {**refused, **dict.fromkeys(others, again)}

    def _terminate(self, ids: list[str], where: Where | None = None, *,
                   passing: tuple[type[Exception], ...] = ()) -> Answers:
        """One terminate call (kit.batch_call): the ids Lambda answered `terminating` are followed, the others
        were already gone; a failed call answers every id with its error, but for a `passing` class."""
        return batch_call(ids, lambda: [n.id for n in self._client.terminate_instances(ids)], self._termination,
                          lm.ERRORS, where, passing=passing)

    def _termination(self, instance_id: str) -> PolledPending[None]:
        return self._watch(instance_id, lambda: (self._is_gone(instance_id), None), "termination")

    def _watch(self, instance_id: str, probe: Callable[[], tuple[bool, T]], what: str) -> PolledPending[T]:
        """An action Lambda has no operation for, followed by reading the instance with backoff; failed reads
        (Transient) are retried until the deadline, then Timeout (the action goes on)."""
        late = gave_up(f"the {what} of Lambda instance {instance_id}", provider=NAME, instance_id=instance_id)
        return PolledPending(instance_id, probe, Backoff(1.0 * self._scale, 15.0 * self._scale), on_timeout=late,
                             tolerate=(Transient,))

    def begin_reboot(self, instance_id: str, *, hard: bool = False) -> Pending[Instance]:
        """Lambda's restart of a running instance; waits end when it is running again. Raises Unsupported for
        `hard` (cold reboot is console-only), VmError when the instance is not running."""
        _check_id(instance_id)
        if hard:
            raise Unsupported("Lambda Cloud's API has no hard reboot (cold reboot is console-only)", provider=NAME,
                              suggestion="reboot without --hard (Lambda's restart), or use the Lambda console")
        with translated(Where(instance_id=instance_id)):
            self._client.restart_instances([instance_id])
        return self._watch(instance_id, lambda: self._restarted(instance_id), "restart")

    def _is_gone(self, instance_id: str) -> bool:
        try:
            return self.get_instance(instance_id).state is InstanceState.TERMINATED
        except NotFound:
            return True

    def _restarted(self, instance_id: str) -> tuple[bool, Instance]:
        instance = self.get_instance(instance_id)
        if instance.state.gone or instance.state is InstanceState.ERROR:
            raise VmError(f"Lambda instance {instance_id} became {instance.state} during its restart", provider=NAME)
        running = instance.state is InstanceState.RUNNING
        return running and not lm.restart_in_progress(instance.native), instance

    # ------------------------------------------------------------------------------------ helpers
    def _to_instances(self, natives: list[NativeInstance]) -> list[Instance]:
        """Map, looking up reservations (one call) only when an instance is reserved."""
        held = lm.reservation_index(self._reservations()) if any(n.is_reserved for n in natives) else {}
        return [lm.to_instance(n, held) for n in natives]

    def _reservations(self) -> list[Reservation]:
        """GET /reservations, or the read of it younger than RESERVATIONS_TTL (scaled); [] where not served."""
        return self._held(self._account) or []

    def _serves_reservations(self) -> bool:
        """Whether the endpoint serves the reservations extension (GET /reservations is not a 404)."""
        return self._held(self._account) is not None

    def _read_reservations(self, _account: str) -> list[Reservation] | None:
        """GET /reservations; None when the endpoint answers 404: the real API has no reservations (the listing
        and the launch's `reservation_id` are a mock extension), so it would ignore a reservation id."""
        try:
            with translated():
                return list(self._client.list_reservations())
        except NotFound:
            return None

    def _no_reservations(self, reservation_id: str) -> Unsupported:
        return Unsupported(
            f"--reservation {reservation_id}: the Lambda Cloud API at {self._client.base_url} has no reservations "
            "(GET /reservations is not served), so it cannot launch on one and would launch on-demand instead; "
            "nothing was launched", provider=NAME,
            suggestion="launch reserved capacity from the Lambda console, or leave out --reservation (on-demand)")

    def _read_types(self, _account: str) -> dict[str, InstanceTypeAvailability]:
        with translated():
            return self._client.instance_types()

    def _read_regions(self, _account: str) -> tuple[str, ...]:
        with translated():
            return tuple(r.name for r in self._client.list_regions())

    def _after_failed_launch(self, native: NativeInstance | None, error: VmError) -> VmError:
        """A launch that ended unhealthy still bills: terminate it and say so. Other failures are returned."""
        if native is None or lm.state_of(native.status) is not InstanceState.ERROR:
            return error
        try:
            self.begin_destroy(native.id)
        except VmError as cleanup:
            return VmError(f"{error.message}; terminating it failed: {cleanup.message}", provider=NAME,
                           suggestion=cleanup.hint or Hint.say("destroy it: {}", Command.of(
                               "destroy", native.id, "--provider", NAME)))
        return VmError(f"{error.message}; it was terminated", provider=NAME,
                       suggestion="try again, or another region or provider")


# ---------------------------------------------------------------------------------------------- pendings
class _Launch(OperationPending[Instance]):
    """A launched instance on its way to running (the SDK's LaunchOperation, translated). `wait` raises Timeout
    (the launch goes on), or VmError when it ended unhealthy (then it is terminated) or vanished."""

    def __init__(self, provider: LambdaProvider, operation: LaunchOperation, reservation_id: str) -> None:
        super().__init__(operation, lambda: translated(Where(instance_id=operation.instance_id)),
                         id=operation.instance_id, resource_id=operation.instance_id, block=operation.result,
                         finish=lambda native: self.launched(provider._to_instances([native])[0]),
                         failed=lambda error, _deadline: provider._after_failed_launch(operation.instance, error))
        self._reservation_id = reservation_id

    def launched(self, instance: Instance) -> Instance:
        """The running instance as this launch reports it (a reserved one names the reservation it was sent to
        where Lambda does not say)."""
        if instance.reserved and not instance.reservation_id:
            return replace(instance, reservation_id=self._reservation_id)
        return instance

    def completed(self, instance: Instance, timeout: float) -> Instance | None:
        """The launch's result from its instance as a listing shows it active (Completes): None until it has its
        IP (as `wait` waits for it); no call."""
        return self.launched(instance) if instance.public_ip else None


def _has_room(sold: InstanceTypeAvailability, requested: str | None) -> bool:
    """Whether the read lists capacity for the type in the requested region (in any region without one)."""
    with_room = [r.name for r in sold.regions_with_capacity_available]
    return requested in with_room if requested is not None else bool(with_room)


# --------------------------------------------------------------------------------------- input checks
_check_id = id_check(ID_PATTERN, "malformed Lambda instance id {id!r}: Lambda ids are 32 lowercase hex digits",
                     provider=NAME)


MAX_USER_DATA = 1_000_000  # user_data: "plain-text cloud-init, <= 1 MB" (spec 1.10, research lambda.md)
_IMAGE_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _image_spec(image: str | None) -> Any:
    """The launch's `image`: `{"id"}` for a dashed UUID (Lambda's image ids), else `{"family"}`; None: Lambda's
    default, the latest Lambda Stack."""
    if image is None:
        return None
    from lambda_sdk import ImageSpec

    return ImageSpec(id=image) if _IMAGE_ID.fullmatch(image) else ImageSpec(family=image)


def _no_disk_size() -> UsageError:
    return UsageError("Lambda's launch takes no boot disk size: the disk comes with the instance type",
                      provider=NAME, suggestion="leave out --disk-size on Lambda")


def _checked_name(name: str) -> str:
    if len(name) > _MAX_NAME:
        raise UsageError(f"Lambda instance names have at most {_MAX_NAME} characters; {name!r} is too long",
                         provider=NAME)
    return name
