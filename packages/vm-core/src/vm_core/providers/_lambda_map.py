"""Translation tables of the Lambda adapter: lambda_sdk objects and errors -> vm-core instances, offers, errors;
vm-core requests (GPU, reservation) -> Lambda launch fields.

The tables are keyed by lambda_sdk types, but lambda_sdk is imported only when a table is first used, so that
importing the adapter (and loading its plugin) stays cheap. Pure functions: no API calls here.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..catalog import ShapeEntry, default_catalog
from ..errors import (
    AuthError,
    CapacityError,
    Interrupted,
    NotFound,
    QuotaError,
    Scope,
    Timeout,
    Transient,
    Unsupported,
    UsageError,
    VmError,
)
from ..hints import Command, Hint
from ..kit.errors import ErrorTable, Factory, rate_limited, rule
from ..kit.ongoing import follow, still_running
from ..model import Instance, InstanceState, Offer, ReservationMode, ReservationRequest
from ..provider import ReservationInfo, ReservationTerms

if TYPE_CHECKING:
    from lambda_sdk import Instance as NativeInstance
    from lambda_sdk import InstanceStatus, InstanceTypeAvailability, Reservation

SSH_USER = "ubuntu"  # the login of Lambda's images (Lambda Stack, Ubuntu)
NAME = "lambda"
API_KEY_ENV = "LAMBDA_API_KEY"
# Lambda's documented reason code for an action blocked by another one (here: a restart still running).
ACTION_IN_PROGRESS = "vm-action-in-progress"


@dataclass(frozen=True, slots=True)
class Where:
    """What a call was about, for the messages and fields of translated errors."""

    region: str | None = None
    instance_id: str | None = None


# ------------------------------------------------------------------------------------------------- errors
def _table() -> dict[type[BaseException], Factory[Where]]:
    """lambda_sdk exception type -> vm-core error factory (the most specific class of an exception wins)."""
    import lambda_sdk as sdk

    given = _given_suggestion
    return {
        sdk.CapacityError: _capacity,
        sdk.QuotaError: rule(QuotaError, "Lambda Cloud quota exceeded: {exc.message}", provider=NAME,
                             suggestion=lambda e, w: e.suggestion or "Contact Lambda Support."),
        sdk.AuthError: _auth,
        sdk.Forbidden: rule(AuthError, "Lambda Cloud refused the request: {exc.message}", provider=NAME,
                            suggestion=given),
        sdk.ReservedInstanceError: _reserved,
        sdk.NotFound: _not_found,
        sdk.InvalidParameters: rule(UsageError, "Lambda Cloud rejected the request: {exc.message}", provider=NAME,
                                    suggestion=given),
        sdk.Conflict: rule(VmError, "Lambda Cloud refused this in the current state: {exc.message}", provider=NAME,
                           suggestion="wait until the instance is running"),
        sdk.RateLimited: rate_limited("Lambda Cloud rate limit hit, retries exhausted: {exc.message}", provider=NAME,
                                      suggestion="try again in a minute"),
        sdk.ServerError: rule(Transient, "Lambda Cloud server error {exc.status}: {exc.message}", provider=NAME,
                              suggestion="try again later"),
        sdk.ConnectError: _unreachable,
        sdk.Aborted: rule(Interrupted, "Lambda Cloud: {exc}", provider=NAME),
        sdk.RequestNotSent: rule(Transient, "cannot reach Lambda Cloud: {exc}", provider=NAME,
                                 suggestion="check the network and api_endpoint"),
        sdk.ResponseNotReceived: _lost_response,
        sdk.OperationTimeout: _timeout,
        sdk.OperationFailed: lambda e, w: VmError(
            f"Lambda instance {e.instance_id} ended {e.status.value if e.status else 'gone'} instead of active",
            provider=NAME),
        sdk.APIError: rule(VmError, "Lambda Cloud error: {exc}", provider=NAME),
        sdk.LambdaError: rule(VmError, "Lambda Cloud client error: {exc}", provider=NAME),
    }


def _given_suggestion(exc: Any, where: Where) -> str:
    return str(exc.suggestion or "")


ERRORS = ErrorTable(_table, Where())
translated = ERRORS.translated  # re-raise any lambda_sdk error inside the block as its vm-core error
to_vm_error = ERRORS.translate  # the vm-core error for a lambda_sdk error; None otherwise


def _capacity(exc: Any, where: Where) -> CapacityError:
    place = f" in {where.region}" if where.region else ""
    return CapacityError(f"Lambda Cloud has no capacity for this launch{place}: {exc.message}", scope=Scope.REGION,
                         region=where.region, provider=NAME, suggestion=exc.suggestion or None)


def _auth(exc: Any, where: Where) -> AuthError:
    return AuthError(f"Lambda Cloud refused the API key: {exc.message}", provider=NAME,
                     suggestion=f"check {API_KEY_ENV} (or api_key in the profile); "
                                "create keys at https://cloud.lambda.ai/api-keys")


def _reserved(exc: Any, where: Where) -> Unsupported:
    return reserved_refusal(where.instance_id or ", ".join(exc.instance_ids))


def reserved_refusal(ids: str) -> Unsupported:
    """Lambda refuses to terminate instances on a reservation: they keep running."""
    return Unsupported(
        f"Lambda instance {ids} runs on a reservation and cannot be terminated through the Lambda Cloud API; "
        "nothing was terminated: it keeps running (and billing)",
        provider=NAME, suggestion="release it through Lambda Support or the Lambda Cloud console")


def _not_found(exc: Any, where: Where) -> NotFound:
    what = f"no Lambda instance {where.instance_id}" if where.instance_id else "not found on Lambda Cloud"
    return NotFound(f"{what}: {exc.message}", provider=NAME, suggestion=exc.suggestion or None)


def _unreachable(exc: Any, where: Where) -> Transient:
    """The SDK's ConnectError: its one line, what to check for its cause (never "try again": it would not help)."""
    return Transient(f"Lambda Cloud: {exc}", provider=NAME, suggestion=unreachable_hint(exc.cause.kind))


def unreachable_hint(kind: Any) -> str:
    """What to check when the endpoint cannot be reached, by the `cloud_sdk_core.net.CauseKind` of the failure."""
    from cloud_sdk_core.net import CauseKind

    hints = {
        CauseKind.DNS: "check api_endpoint and this machine's DNS",
        CauseKind.TLS: "set SSL_CERT_FILE (or REQUESTS_CA_BUNDLE) to the CA file that signed the server's certificate",
        CauseKind.PROXY: "check HTTPS_PROXY and NO_PROXY",
    }
    return hints.get(kind, "check api_endpoint and that this machine can reach it")


def _lost_response(exc: Any, where: Where) -> Transient:
    return Transient(f"no answer from Lambda Cloud ({exc}); the request may have taken effect", provider=NAME,
                     suggestion=Hint.say("look the instance up by name ({}) before launching it again", follow(NAME)))


def _timeout(exc: Any, where: Where) -> Timeout:
    last = exc.last_status.value if exc.last_status else "unknown"
    return still_running(f"Lambda instance {exc.instance_id} is not active after {exc.timeout:g}s (last status: "
                         f"{last}); the launch continues in the cloud", provider=NAME, instance_id=exc.instance_id)


# ------------------------------------------------------------------------------------------------- states
@functools.cache
def _states() -> dict[InstanceStatus, InstanceState]:
    from lambda_sdk import InstanceStatus as S

    return {
        S.BOOTING: InstanceState.CREATING,
        S.ACTIVE: InstanceState.RUNNING,
        S.UNHEALTHY: InstanceState.ERROR,
        S.TERMINATING: InstanceState.TERMINATING,
        S.TERMINATED: InstanceState.TERMINATED,
        S.PREEMPTED: InstanceState.PREEMPTED,
        S.UNKNOWN: InstanceState.UNKNOWN,
    }


def state_of(status: InstanceStatus) -> InstanceState:
    return _states().get(status, InstanceState.UNKNOWN)


def launch_state(native: NativeInstance) -> InstanceState:
    """The state of a launch followed to running: an active instance is running once it has its IP."""
    state = state_of(native.status)
    return InstanceState.CREATING if state is InstanceState.RUNNING and not native.ip else state


def restart_in_progress(native: NativeInstance) -> bool:
    restart = native.actions.restart
    return not restart.available and restart.reason_code == ACTION_IN_PROGRESS


# ---------------------------------------------------------------------------------------------- instances
def to_instance(native: NativeInstance, reservations: Mapping[str, Reservation]) -> Instance:
    """`reservations` maps instance ids to the reservation holding them (may be empty: then unknown)."""
    shape = native.instance_type
    entry = default_catalog().lookup(NAME, shape.name)
    gpu_count = entry.gpu_count if entry else shape.specs.gpus
    held = reservations.get(native.id) if native.is_reserved else None
    price = reserved_price(held, gpu_count) if held else None
    return Instance(
        provider=NAME, id=native.id, name=native.name or "", state=state_of(native.status),
        gpu=entry.gpu if entry else "", gpu_count=gpu_count, region=native.region.name, shape=shape.name,
        reserved=native.is_reserved, reservation_id=held.id if held else "",
        price_per_hour=price if price is not None else shape.price_cents_per_hour / 100,
        created_at=None,  # Lambda does not report when an instance was launched
        public_ip=native.ip or "",  # `ip` is absent while booting
        ssh_user=SSH_USER,
        native=native,
        labels={tag.key: tag.value for tag in native.tags},
    )


def reservation_index(reservations: Sequence[Reservation]) -> dict[str, Reservation]:
    return {instance_id: r for r in reservations for instance_id in r.instance_ids}


def reserved_price(reservation: Reservation, gpus: int) -> float | None:
    cents = reservation.price_cents_per_gpu_hour
    return None if cents is None else cents * gpus / 100


def reservation_info(reservation: Reservation) -> ReservationInfo:
    entry = next(filter(None, (default_catalog().lookup(NAME, t) for t in reservation.instance_type_names)), None)
    cents = reservation.price_cents_per_gpu_hour
    return ReservationInfo(
        provider=NAME, id=reservation.id, gpu=entry.gpu if entry else "",
        regions=(reservation.region.name,) if reservation.region else (),
        total_gpus=reservation.quantity, used_gpus=reservation.used_quantity,
        price_per_gpu_hour=None if cents is None else cents / 100,
        terminable=False,  # instances launched on a Lambda reservation cannot be terminated through the API
    )


def reservation_terms(reservation: Reservation) -> ReservationTerms:
    """A reservation with its name, period and the account's instances on it."""
    start, end = reservation.start_time, reservation.end_time
    return ReservationTerms(reservation_info(reservation), name=reservation.name,
                            starts_at=start.timestamp() if start else None, ends_at=end.timestamp() if end else None,
                            instance_ids=tuple(reservation.instance_ids))


# ------------------------------------------------------------------------------------------------ requests
def launch_reservation_id(request: ReservationRequest, gpu: str) -> str:
    """The reservation to launch on ("" = on-demand). Lambda cannot choose a reservation by itself."""
    if request.mode is ReservationMode.ID:
        return request.reservation_id
    if request.mode is ReservationMode.AUTO and request.strict:
        raise Unsupported("Lambda Cloud cannot pick a reservation automatically", provider=NAME,
                          suggestion=Hint.say("name one with --reservation ID ({} lists them), or drop --strict",
                                              Command.of("offers", "--gpu", gpu, "--provider", NAME)))
    return ""


def smallest_shape(gpu: str, gpu_count: int | None) -> str:
    """Lambda's smallest instance type of `gpu` (with `gpu_count` GPUs if given); UsageError lists what Lambda
    sells when it sells no such thing."""
    catalog = default_catalog()
    canonical = catalog.gpu(gpu).name
    shapes = catalog.shapes_for(NAME, canonical, gpu_count)
    if not shapes:
        wanted = f"{canonical}:{gpu_count}" if gpu_count else canonical
        raise UsageError(f"Lambda Cloud does not sell {wanted}; it sells (--gpu): {sold_listing()}",
                         provider=NAME)
    return shapes[0].shape


# ------------------------------------------------------------------------------------------------- offers
def on_demand_offers(shapes: Sequence[ShapeEntry], types: Mapping[str, InstanceTypeAvailability],
                     regions: Sequence[str]) -> list[Offer]:
    """One offer per shape Lambda lists and region: available where it lists capacity (how much: unknown),
    unavailable (capacity 0) in every other region."""
    offers = []
    for entry in shapes:
        sold = types.get(entry.shape)
        if sold is None:
            continue
        price = sold.instance_type.price_cents_per_hour / 100
        with_room = [r.name for r in sold.regions_with_capacity_available]
        for region in dict.fromkeys([*with_room, *regions]):
            available = region in with_room
            offers.append(Offer(NAME, region, entry.gpu, entry.gpu_count, entry.shape, price,
                                capacity=None if available else 0, available=available))
    return offers


def reserved_offers(shapes: Sequence[ShapeEntry], types: Mapping[str, InstanceTypeAvailability],
                    reservations: Sequence[Reservation]) -> list[Offer]:
    """One offer per reservation and shape it is large enough to host, with the VMs its free GPUs hold as
    capacity: a full reservation is an offer with capacity 0 (not available)."""
    offers = []
    for res in reservations:
        for entry in shapes:
            count = res.available_quantity // entry.gpu_count
            if res.region is None or entry.shape not in res.instance_type_names or res.quantity < entry.gpu_count:
                continue
            price = reserved_price(res, entry.gpu_count)
            if price is None and entry.shape in types:
                price = types[entry.shape].instance_type.price_cents_per_hour / 100
            if price is not None:
                offers.append(Offer(NAME, res.region.name, entry.gpu, entry.gpu_count, entry.shape, price,
                                    capacity=count, available=count > 0, reservation_id=res.id))
    return offers


def sold_listing() -> str:
    """What Lambda sells, as `--gpu` values: "A10:1, A100:1, A100:8, ..."."""
    shapes = [s for s in default_catalog().shapes if s.provider == NAME]
    return ", ".join(f"{gpu}:{count}" for gpu, count in sorted({(s.gpu, s.gpu_count) for s in shapes}))
