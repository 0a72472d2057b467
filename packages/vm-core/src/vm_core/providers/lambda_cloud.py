"""The Lambda Cloud provider: vm-core's adapter over lambda_sdk.

How Lambda differs, and what this adapter does about it:
- No stop/start in the API: LambdaProvider is not SupportsStopStart (the CLI says "not supported by Lambda Cloud").
  Reboot is Lambda's restart; there is no API for a hard (cold) reboot.
- A launch answers with an instance id at once and the instance then boots: the Pending *is* the instance
  (`id` = `resource_id` = instance id), resumable anywhere. A fleet follows all its launches with one
  `GET /instances` per `watch_interval` (SupportsCreateWatch) instead of one `GET /instances/{id}` per launch:
  Lambda allows one request per second for the whole account.
- Capacity is read from GET /instance-types before launching, never probed with launches (Lambda allows one
  launch per 12 s): a region without listed capacity is a CapacityError before any launch. A launch reuses a
  read younger than TYPES_TTL (a fleet's launches, 12 s apart, do not each read it again); a launch Lambda
  refuses for capacity drops it, and `offers` always reads afresh.
- Reservations: `--reservation ID` launches on that reservation only; `auto` and `none` launch on-demand (Lambda
  cannot pick a reservation itself). Instances on a reservation cannot be terminated through the API.
  GET /reservations is a mock extension; where it does not exist, reserved instances show no reservation id.
- Terminate takes a list of ids: `begin_destroy_many` sends up to `BATCH_DESTROY_LIMIT` per call. Lambda refuses
  the whole call when one id is reserved; the adapter then finds the reserved ids in one listing and sends the
  others again.
- Names are not unique: `find_instance` returns the first match in Lambda's listing, which is launch order.
- Lambda does not report launch times (`created_at` is None).

Importing this module imports neither lambda_sdk nor requests; `connect` does.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from ..catalog import default_catalog
from ..errors import CapacityError, ConfigError, NotFound, Scope, Timeout, Transient, Unsupported, UsageError, VmError
from ..kit import (
    Backoff,
    Finished,
    OperationPending,
    PolledPending,
    ShapesFile,
    optional_text,
    parse_settings,
    positive_number,
    seconds,
    setting,
    settings_of,
)
from ..model import CreateSpec, Instance, InstanceState, Offer
from ..provider import CreateRound, Pending, ReservationInfo
from ..sshkeys import public_key_setting
from . import _lambda_map as lm
from ._lambda_map import API_KEY_ENV, NAME, Where, translated

if TYPE_CHECKING:
    from lambda_sdk import Instance as NativeInstance
    from lambda_sdk import InstanceTypeAvailability, LambdaClient, LaunchOperation, Reservation

T = TypeVar("T")

_INSTANCE_ID = re.compile(r"[0-9a-f]{32}")
_MAX_NAME = 64
_GONE = (InstanceState.TERMINATING, InstanceState.TERMINATED)
# Seconds between two listings that follow launches (times time_scale): a third of the account's 1 request/s,
# so launches and other reads keep the rest.
WATCH_INTERVAL = 3.0
# The limiter paces calls this much wider than the configured (documented) limits: paced exactly, jitter in
# arrival times makes about every other call of a burst arrive early and come back as a 429.
_HEADROOM = 1.1
# Ids per terminate call. Lambda documents no limit on `instance_ids`; this cap is ours: it keeps a request and
# its answer (every instance, rendered) near 100 kB, and limits what one refused call holds back.
BATCH_DESTROY_LIMIT = 100
# Seconds (times time_scale) a GET /instance-types read is reused by launches: five launch intervals.
TYPES_TTL = 60.0
# Seconds (times time_scale) a GET /reservations read is reused: a fleet's offers and its check for reservations
# that cannot be terminated, asked one after the other, share one read.
RESERVATIONS_TTL = 5.0
# A watcher reads (GET /instances) once per this many request intervals, leaving the rest of Lambda's 1 request/s
# to the calls it is waiting on (terminates, launches).
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
                                       help="SSH key launches use (default: the account's first key)")
    ssh_public_key: str | None = setting(
        default=None, parse=lambda raw: public_key_setting(raw, NAME),
        help="public key launches use, added to the account's SSH keys if missing (wins over ssh_key_name)")
    request_interval: float = setting(default=1.0, parse=seconds,
                                      help="Lambda's limit, seconds per API call (documented: 1)")
    launch_interval: float = setting(default=12.0, parse=seconds,
                                     help="Lambda's limit, seconds per launch (documented: 12)")
    time_scale: float = setting(default=1.0, parse=positive_number,
                                help="multiplies poll and retry intervals (fast mock clouds)")


class LambdaPlugin:
    """The `vm_core.providers` entry point `lambda`."""

    name = NAME
    title = "Lambda Cloud"
    settings = settings_of(LambdaSettings)
    instance_id_pattern = r"[0-9a-f]{32}"
    instance_id_example = "32 hex digits such as 0920582c7ff041399e34823a0be62549"
    create_concurrency = 4  # the SDK spaces launches launch_interval (12 s) apart anyway
    debug_loggers = ("lambda_sdk",)

    shapes = ShapesFile(NAME, __package__, "lambda_shapes.toml")  # its rows of the GPU catalog

    def embedded_settings(self, endpoint: Mapping[str, Any], time_scale: float) -> dict[str, Any]:
        """Settings for the mock Lambda of the embedded clouds: its documented rate limits (1 request/s, 1
        launch/12 s) scaled like the mock's clock, so the client paces itself as the mock does."""
        return {"api_key": endpoint["api_key"], "api_endpoint": endpoint["url"], "time_scale": time_scale,
                "request_interval": 1.0 * time_scale, "launch_interval": 12.0 * time_scale}

    def connect(self, settings: Mapping[str, Any]) -> LambdaProvider:
        """A provider for one Lambda account; no network call. Raises ConfigError for bad settings."""
        config = parse_settings(LambdaSettings, settings, title=self.title, provider=NAME)
        from lambda_sdk import LambdaClient, PollPolicy, RateLimit, RetryPolicy

        scale = config.time_scale
        client = LambdaClient(
            config.api_key, base_url=config.api_endpoint,
            rate_limit=RateLimit(config.request_interval * _HEADROOM, config.launch_interval * _HEADROOM),
            retry=RetryPolicy(initial=1.0 * scale, maximum=30.0 * scale),
            poll=PollPolicy(initial=5.0 * scale, maximum=30.0 * scale),
        )
        return LambdaProvider(client, ssh_key_name=config.ssh_key_name, ssh_public_key=config.ssh_public_key,
                              time_scale=scale, account=key_fingerprint(config.api_key),
                              request_interval=config.request_interval * _HEADROOM)


def key_fingerprint(api_key: str) -> str:
    """Lambda accounts have no id in the API: the account is the key's owner. A SHA-256 prefix of the key
    tells two keys apart without revealing either."""
    import hashlib

    return "key sha256:" + hashlib.sha256(api_key.encode()).hexdigest()[:16]


plugin = LambdaPlugin()


# --------------------------------------------------------------------------------------------- provider
class LambdaProvider:
    """One Lambda Cloud account: Provider + SupportsReboot + SupportsReservations + SupportsBatchDestroy + Paced
    + SupportsCreateWatch (not SupportsStopStart).

    Thread-safe: the client's rate limiter is shared by every thread using this provider, so concurrent
    creates are spaced a launch interval apart instead of failing with 429s (a 429 is retried by the client).
    """

    name = NAME

    def __init__(self, client: LambdaClient, *, ssh_key_name: str | None = None, ssh_public_key: str | None = None,
                 time_scale: float = 1.0, account: str = "", request_interval: float = 1.0) -> None:
        self._client = client
        self._request_interval = request_interval
        self._account = account
        self._ssh_key_name = ssh_key_name
        self._ssh_public_key = ssh_public_key
        self._scale = time_scale
        self._lock = threading.Lock()  # guards the lookups below, each made once
        self._ssh_keys: dict[str, str] = {}  # public key ("" = the default key) -> key name
        self._regions: tuple[str, ...] | None = None
        self._types: tuple[float, dict[str, InstanceTypeAvailability]] | None = None  # (read at, GET /instance-types)
        self._held: tuple[float, list[Reservation]] | None = None  # (read at, GET /reservations)

    def __repr__(self) -> str:
        return f"LambdaProvider(base_url={self._client.base_url!r})"

    @property
    def batch_destroy_limit(self) -> int:
        return BATCH_DESTROY_LIMIT

    @property
    def poll_interval(self) -> float:
        """Two of the client's request intervals (Lambda allows 1 request/s), and at least one second (scaled)."""
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
        return next((i for i in self.list_instances() if i.name == name and i.state not in _GONE), None)

    def list_reservations(self) -> list[ReservationInfo]:
        """The account's reservations (none where the API has no reservation listing)."""
        return [lm.reservation_info(r) for r in self._reservations()]

    def offers(self, gpu: str, gpu_count: int | None = None) -> list[Offer]:
        """On-demand offers for every region (available only where Lambda lists capacity; it never says how
        much), plus offers on reservations with free GPUs. Empty for GPUs Lambda does not sell."""
        catalog = default_catalog()
        shapes = catalog.shapes_for(NAME, catalog.gpu(gpu).name, gpu_count)
        if not shapes:
            return []
        types, _ = self._instance_types(fresh=True)
        return [*lm.on_demand_offers(shapes, types, self._region_names()),
                *lm.reserved_offers(shapes, types, self._reservations())]

    # ------------------------------------------------------------------------------------- create
    def begin_create(self, spec: CreateSpec) -> Pending[Instance]:
        """Launch one instance and return at once. Raises UsageError/Unsupported for what Lambda cannot do,
        CapacityError before launching when Lambda lists no capacity, CapacityError/QuotaError when the launch
        is refused, Transient when the answer was lost (the instance may exist: look it up by name).
        Lambda sells no spot instances: `spec.spot` is Unsupported."""
        if spec.spot:
            raise Unsupported("Lambda Cloud offers no spot instances", provider=NAME)
        name = _checked_name(spec.name)
        reservation_id = lm.launch_reservation_id(spec.reservation, spec.gpu)
        shape = spec.shape or lm.smallest_shape(spec.gpu, spec.gpu_count)
        ssh_key = self._ssh_key_for(spec.ssh_public_key or self._ssh_public_key)
        if reservation_id:
            region = spec.region or self._reservation_region(reservation_id, spec.gpu)
        else:
            region = self._region_with_capacity(shape, spec.region)
        try:
            with translated(Where(region=region)):
                operation = self._client.launch_instance(
                    region_name=region, instance_type_name=shape, ssh_key_names=[ssh_key], name=name or None,
                    tags=spec.labels or None, reservation_id=reservation_id or None)
        except CapacityError:
            with self._lock:
                self._types = None  # the capacity it listed is gone: the next launch reads again
            raise
        return _Launch(self, operation, reservation_id)

    @property
    def watch_interval(self) -> float:
        return WATCH_INTERVAL * self._scale

    def poll_creates(self, pendings: Sequence[Pending[Instance]]) -> CreateRound:
        """One listing of the account (SupportsCreateWatch): launches active with an IP (as `wait` returns them),
        launches that can no longer become active (ended: `wait` terminates an unhealthy one and says so), and
        launches the listing does not show (absent). Pendings this provider did not make are absent: only they
        can say how they end."""
        from lambda_sdk.models import FAILED_STATUSES, InstanceStatus

        launches = {p.resource_id: p for p in pendings if isinstance(p, _Launch)}
        foreign = {p.resource_id for p in pendings} - launches.keys()
        with translated():
            natives = [n for page in self._client.list_instances().by_page() for n in page if n.id in launches]
        active = [n for n in natives if n.status is InstanceStatus.ACTIVE and n.ip]
        running = {n.id: launches[n.id].launched(i) for n, i in zip(active, self._to_instances(active), strict=True)}
        ended = frozenset(n.id for n in natives if n.status in FAILED_STATUSES)
        return CreateRound(running, ended, frozenset((launches.keys() - {n.id for n in natives}) | foreign))

    def _region_with_capacity(self, shape: str, requested: str | None) -> str:
        """The requested region if Lambda lists capacity there, else the first region that has some. A reused
        read that would refuse is read again first: only a fresh read says there is no capacity."""
        types, reused = self._instance_types(fresh=False)
        sold = types.get(shape)
        if reused and (sold is None or not _has_room(sold, requested)):
            sold = self._instance_types(fresh=True)[0].get(shape)
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
        if requested not in self._region_names():
            raise UsageError(f"unknown Lambda Cloud region {requested!r}; regions: "
                             f"{', '.join(self._region_names())}", provider=NAME)
        raise CapacityError(f"Lambda Cloud lists no capacity for {shape} in {requested}", scope=Scope.REGION,
                            region=requested, provider=NAME,
                            suggestion=f"regions with capacity now: {', '.join(with_room) or 'none'}")

    def _instance_types(self, *, fresh: bool) -> tuple[dict[str, InstanceTypeAvailability], bool]:
        """GET /instance-types, and whether it is a reused read: unless `fresh`, one younger than TYPES_TTL
        (scaled) is."""
        with self._lock:
            cached = self._types
        if not fresh and cached is not None and time.monotonic() - cached[0] < TYPES_TTL * self._scale:
            return cached[1], True
        with translated():
            types = self._client.instance_types()
        with self._lock:
            self._types = (time.monotonic(), types)
        return types, False

    def _reservation_region(self, reservation_id: str, gpu: str) -> str:
        found = next((r for r in self._reservations() if r.id == reservation_id), None)
        if found is None or found.region is None:
            raise NotFound(f"no Lambda reservation {reservation_id} is visible to this account", provider=NAME,
                           suggestion=f"check the id (`vm offers --gpu {gpu} --provider lambda` lists reservations), or"
                                      " give --region")
        return found.region.name

    def _ssh_key_for(self, public_key: str | None) -> str:
        """The name of the SSH key to launch with: the one holding `public_key` (added if new), else the
        configured key, else the account's first key. Looked up once per key, one thread at a time (concurrent
        creates must not add the same key twice). Raises ConfigError when there is no key to use."""
        wanted = (public_key or "").strip()
        with self._lock:
            if wanted not in self._ssh_keys:
                self._ssh_keys[wanted] = self._key_holding(wanted) if wanted else self._pick_default_key()
            return self._ssh_keys[wanted]

    def _pick_default_key(self) -> str:
        with translated():
            names = [k.name for k in self._client.list_ssh_keys()]
        if self._ssh_key_name and self._ssh_key_name not in names:
            raise ConfigError(f"the Lambda account has no SSH key named {self._ssh_key_name!r}; it has: "
                              f"{', '.join(names) or 'none'}", provider=NAME)
        if not names:
            raise ConfigError("the Lambda account has no SSH key, and Lambda launches need one", provider=NAME,
                              suggestion="add one at https://cloud.lambda.ai/ssh-keys")
        return self._ssh_key_name or names[0]

    def _key_holding(self, public_key: str) -> str:
        """The account's key with this public key, added under a name derived from the key if missing."""
        found = self._find_key(public_key)
        if found is not None:
            return found
        try:
            with translated():
                return self._client.add_ssh_key("vm-" + hashlib.sha256(public_key.encode()).hexdigest()[:12],
                                                public_key).name
        except UsageError:  # another process added it first (the name is taken), or the key is invalid
            found = self._find_key(public_key)
            if found is None:
                raise
            return found

    def _find_key(self, public_key: str) -> str | None:
        with translated():
            return next((k.name for k in self._client.list_ssh_keys() if k.public_key.strip() == public_key), None)

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
        """Terminate many instances, `BATCH_DESTROY_LIMIT` ids per POST /instance-operations/terminate. Each id
        maps to a Pending (terminating; finished when it was already gone) or to its error: UsageError for a
        malformed id, Unsupported for a reserved instance (Lambda refuses the whole call then: the reserved ids
        are found in one listing and the others sent again), the call's error when a call failed."""
        answers: dict[str, Pending[None] | VmError] = {}
        valid: list[str] = []
        for instance_id in dict.fromkeys(instance_ids):
            try:
                _check_id(instance_id)
                valid.append(instance_id)
            except UsageError as exc:
                answers[instance_id] = exc
        for start in range(0, len(valid), BATCH_DESTROY_LIMIT):
            answers.update(self._terminate_batch(valid[start:start + BATCH_DESTROY_LIMIT]))
        return answers

    def _terminate_batch(self, ids: list[str]) -> dict[str, Pending[None] | VmError]:
        """One terminate call; when a reserved id made Lambda refuse it, one listing to find the reserved ids and
        one more call for the others. Should the listing not tell which id is reserved, each id is sent alone."""
        from lambda_sdk import ReservedInstanceError

        try:
            return self._terminated(ids, self._client.terminate_instances(ids))
        except ReservedInstanceError:
            return self._terminate_around_reserved(ids)
        except Exception as exc:
            return self._call_failed(ids, exc)

    def _terminate_around_reserved(self, ids: list[str]) -> dict[str, Pending[None] | VmError]:
        """Lambda refused the batch `ids` because one is reserved: find which with one listing, refuse those and
        send the others again (each alone when the listing shows none reserved)."""
        from lambda_sdk import ReservedInstanceError

        try:
            wanted = set(ids)
            reserved = [n.id for n in self._client.list_instances() if n.id in wanted and n.is_reserved]
        except Exception as exc:
            return self._call_failed(ids, exc)
        if not reserved:
            answers: dict[str, Pending[None] | VmError] = {}
            for one in ids:
                answers.update(self._terminate_alone(one))
            return answers
        others = [i for i in ids if i not in reserved]
        refused: dict[str, Pending[None] | VmError] = {i: lm.reserved_refusal(i) for i in reserved}
        try:
            return {**refused, **self._terminated(others, self._client.terminate_instances(others))}
        except ReservedInstanceError:  # refused again: none of these is reserved by the listing, so they failed
            again = VmError("Lambda refused to terminate these instances as reserved, although its listing shows "
                            "them on-demand; nothing was terminated", provider=NAME,
                            suggestion="run the destroy again")
            return {**refused, **dict.fromkeys(others, again)}
        except Exception as exc:
            return {**refused, **self._call_failed(others, exc)}

    def _terminate_alone(self, instance_id: str) -> dict[str, Pending[None] | VmError]:
        try:
            return self._terminated([instance_id], self._client.terminate_instances([instance_id]))
        except Exception as exc:
            return self._call_failed([instance_id], exc, Where(instance_id=instance_id))

    def _terminated(self, ids: list[str], terminated: list[NativeInstance]) -> dict[str, Pending[None] | VmError]:
        """Ids Lambda answered `terminating` are followed; the others were already gone."""
        going = {n.id for n in terminated}
        return {i: self._termination(i) if i in going else Finished(i, None) for i in ids}

    @staticmethod
    def _call_failed(ids: list[str], exc: Exception, where: Where = Where()) -> dict[str, Pending[None] | VmError]:  # noqa: B008
        """Every id answered with the call's error (re-raised when it is not a lambda_sdk error: a bug)."""
        error = lm.to_vm_error(exc, where)
        if error is None:
            raise exc
        return dict.fromkeys(ids, error)

    def _termination(self, instance_id: str) -> PolledPending[None]:
        return self._watch(instance_id, lambda: (self._is_gone(instance_id), None), "termination")

    def _watch(self, instance_id: str, probe: Callable[[], tuple[bool, T]], what: str) -> PolledPending[T]:
        """An action Lambda has no operation for, followed by reading the instance with backoff; failed reads
        (Transient) are retried until the deadline, then Timeout (the action goes on)."""
        def late(timeout: float) -> Timeout:
            return Timeout(f"the {what} of Lambda instance {instance_id} has not finished after {timeout:g}s; it "
                           "continues in the cloud", provider=NAME,
                           suggestion=f"follow it with `vm get {instance_id} --provider lambda`")
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
        if instance.state in (InstanceState.ERROR, *_GONE):
            raise VmError(f"Lambda instance {instance_id} became {instance.state} during its restart", provider=NAME)
        running = instance.state is InstanceState.RUNNING
        return running and not lm.restart_in_progress(instance.native), instance

    # ------------------------------------------------------------------------------------ helpers
    def _to_instances(self, natives: list[NativeInstance]) -> list[Instance]:
        """Map, looking up reservations (one call) only when an instance is reserved."""
        held = lm.reservation_index(self._reservations()) if any(n.is_reserved for n in natives) else {}
        return [lm.to_instance(n, held) for n in natives]

    def _reservations(self) -> list[Reservation]:
        """GET /reservations, or the read of it younger than RESERVATIONS_TTL (scaled)."""
        with self._lock:
            cached = self._held
        if cached is not None and time.monotonic() - cached[0] < RESERVATIONS_TTL * self._scale:
            return cached[1]
        try:
            with translated():
                held = list(self._client.list_reservations())
        except NotFound:  # the real API has no GET /reservations (a mock extension): nothing to list
            held = []
        with self._lock:
            self._held = (time.monotonic(), held)
        return held

    def _region_names(self) -> tuple[str, ...]:
        with self._lock:
            if self._regions is None:
                with translated():
                    self._regions = tuple(r.name for r in self._client.list_regions())
            return self._regions

    def _after_failed_launch(self, native: NativeInstance | None, error: VmError) -> VmError:
        """A launch that ended unhealthy still bills: terminate it and say so. Other failures are returned."""
        if native is None or lm.state_of(native.status) is not InstanceState.ERROR:
            return error
        try:
            self.begin_destroy(native.id)
        except VmError as cleanup:
            return VmError(f"{error.message}; terminating it failed: {cleanup.message}", provider=NAME,
                           suggestion=cleanup.suggestion or f"destroy it: `vm destroy {native.id} --provider lambda`")
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


def _has_room(sold: InstanceTypeAvailability, requested: str | None) -> bool:
    """Whether the read lists capacity for the type in the requested region (in any region without one)."""
    with_room = [r.name for r in sold.regions_with_capacity_available]
    return requested in with_room if requested is not None else bool(with_room)


# --------------------------------------------------------------------------------------- input checks
def _check_id(instance_id: str) -> None:
    if not _INSTANCE_ID.fullmatch(instance_id or ""):
        raise UsageError(f"malformed Lambda instance id {instance_id!r}: Lambda ids are 32 lowercase hex digits",
                         provider=NAME)


def _checked_name(name: str) -> str:
    if len(name) > _MAX_NAME:
        raise UsageError(f"Lambda instance names have at most {_MAX_NAME} characters; {name!r} is too long",
                         provider=NAME)
    return name
