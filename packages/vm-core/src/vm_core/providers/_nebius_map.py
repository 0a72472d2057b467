"""Nebius -> vm-core tables: instance states, reservation policies, instances, and SDK errors.

Importing this module is cheap: the tables that name nebius_sdk types are built on first use (after
`connect()` loaded the SDK), so `import vm_core.providers.nebius` imports neither nebius_sdk nor grpc.

Errors are translated by one table keyed by the SDK's exception classes (the most specific class of an
exception wins, following its MRO), never by message text:

    nebius_sdk                          vm_core
    CapacityError                       CapacityError(scope=REGION, or RESERVATION for a strict block)
    QuotaError                          QuotaError
    PermissionDenied, AuthError         AuthError
    NotFound                            NotFound
    AlreadyExists                       VmError (the name is taken in that project)
    Conflict                            VmError (state or operation in flight forbids it)
    InvalidArgument                     UsageError (with the field violations)
    RateLimited                         RateLimited
    Unreachable                         Transient: the one line naming host, target and cause (DNS, TLS, proxy...)
    Unavailable, RequestNotSent         Transient
    CredentialsError                    AuthError naming the kind of credentials (never their content)
    OperationTimeout                    Timeout (the operation continues in the cloud)
    OperationFailed, anything else      VmError
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..catalog import Catalog, ShapeEntry
from ..errors import (
    AuthError,
    CapacityError,
    NotFound,
    QuotaError,
    Scope,
    Transient,
    UsageError,
    VmError,
)
from ..hints import Command, Hint
from ..kit.errors import ErrorTable, Factory, rate_limited, rule
from ..kit.ongoing import still_running
from ..model import Instance, InstanceState, ReservationMode, ReservationRequest

SSH_USER = "ubuntu"  # the login of the Ubuntu images vm boots; cloud-init installs the key for it
NAME = "nebius"


@dataclass(frozen=True, slots=True)
class ErrorContext:
    """What the adapter knows about a call, for the messages of the errors it raises."""

    region: str | None = None
    project: str = ""
    tenant: str = ""  # the tenant whose projects were listed
    name: str = ""  # the instance name of a create
    gpu: str = ""  # the GPU type of a create, for the hint of a capacity error
    instance_id: str = ""
    block: str = ""  # the only capacity block a create may use (strict reservation)


# ------------------------------------------------------------------------------------------------ states
@functools.cache
def _state_table() -> dict[Any, InstanceState]:
    from nebius_sdk.models import InstanceState as Native

    return {
        Native.CREATING: InstanceState.CREATING,
        Native.STARTING: InstanceState.STARTING,
        Native.RUNNING: InstanceState.RUNNING,
        Native.UPDATING: InstanceState.RUNNING,
        Native.STOPPING: InstanceState.STOPPING,
        Native.STOPPED: InstanceState.STOPPED,
        Native.DELETING: InstanceState.TERMINATING,
        Native.ERROR: InstanceState.ERROR,
    }


def instance_state(native: Any) -> InstanceState:
    """The normalized state; UNSPECIFIED and values newer than this table are UNKNOWN.

    Nebius shows a new instance STOPPED with `reconciling` (an operation runs) while its create is being
    scheduled, and for the whole create when no capacity is found: STARTING means capacity was obtained. So
    STOPPED + reconciling is CREATING, and STOPPED without it (the create failed) ends a create. (A start that
    finds no capacity stays STOPPED + reconciling too; its operation says how it ended.)
    """
    from nebius_sdk.models import InstanceStatus

    return status_state(native.status or InstanceStatus())


def status_state(status: Any) -> InstanceState:
    """`instance_state` of an instance's `status` alone: an `InstanceStatus`, or the `InstanceStatusSummary` that
    `batch_get_instance_statuses` reads (both carry `state` and `reconciling`)."""
    from nebius_sdk.models import InstanceState as Native

    if status.state == Native.STOPPED and status.reconciling:
        return InstanceState.CREATING
    return _state_table().get(status.state, InstanceState.UNKNOWN)


def shape_of(native: Any) -> str:
    """The vm-core shape name of an instance: "<platform>/<preset>"."""
    resources = native.spec.resources if native.spec is not None else None
    if resources is None:
        return ""
    return f"{resources.platform}/{resources.preset or ''}"


def to_instance(native: Any, region: str, catalog: Catalog, block_prices: Mapping[str, float]) -> Instance:
    """The vm-core Instance of a Nebius instance living in `region`.

    GPU, GPU count and list price come from the catalog (the billing calculator prices offers); a preemptible
    instance is `spot` and has the spot list price. An instance placed in a capacity block costs the block's
    contract price ($/GPU-h in `block_prices`) x its GPUs; None (unknown) for a block not listed there.
    """
    from nebius_sdk.models import is_preemptible

    metadata, status = native.metadata, native.status
    shape = shape_of(native)
    entry = catalog.lookup(NAME, shape)
    reservation_id = status.reservation_id if status is not None else ""
    return Instance(
        provider=NAME,
        id=metadata.id,
        name=metadata.name,
        state=instance_state(native),
        gpu=entry.gpu if entry else "",
        gpu_count=entry.gpu_count if entry else 0,
        region=region,
        shape=shape,
        reserved=bool(reservation_id),
        reservation_id=reservation_id,
        price_per_hour=_price(entry, native, reservation_id, block_prices),
        created_at=metadata.created_at,
        public_ip=public_ip(status),
        ssh_user=SSH_USER,
        native=native,
        labels=dict(metadata.labels or {}),
        spot=is_preemptible(native),
    )


def public_ip(status: Any) -> str:
    """The first interface's public address without its prefix length (`89.169.1.2/32` -> `89.169.1.2`); ""
    when there is none (a dynamic address exists only while the instance runs)."""
    for interface in getattr(status, "network_interfaces", None) or []:
        address = getattr(getattr(interface, "public_ip_address", None), "address", "")
        if address:
            return address.split("/")[0]
    return ""


def _price(entry: ShapeEntry | None, native: Any, reservation_id: str,
           block_prices: Mapping[str, float]) -> float | None:
    """The spot or on-demand list price; a capacity block's contract price; None when unknown."""
    from nebius_sdk.models import is_preemptible

    if entry is None:
        return None
    if not reservation_id:
        return entry.spot_price_per_hour if is_preemptible(native) else entry.price_per_hour
    per_gpu = block_prices.get(reservation_id)
    return None if per_gpu is None else round(per_gpu * entry.gpu_count, 4)


# ------------------------------------------------------------------------------------------------ reservations
@functools.cache
def _policy_table() -> dict[tuple[ReservationMode, bool], Any]:
    """(--reservation mode, --strict) -> ReservationPolicy.Policy. `none` with `--strict` is refused."""
    from nebius_sdk.models import ReservationPolicyPolicy as Policy

    return {
        (ReservationMode.AUTO, False): Policy.AUTO,  # a capacity block if one fits, else on-demand
        (ReservationMode.AUTO, True): Policy.STRICT,  # any fitting capacity block, else fail
        (ReservationMode.NONE, False): Policy.FORBID,  # on-demand only
        (ReservationMode.ID, False): Policy.AUTO,  # that block first, else on-demand
        (ReservationMode.ID, True): Policy.STRICT,  # that block, else fail
    }


def reservation_policy(request: ReservationRequest) -> Any:
    """The `ReservationPolicy` of a create. Raises UsageError for `none` with `--strict`."""
    from nebius_sdk import reservation_policy as build

    policy = _policy_table().get((request.mode, request.strict))
    if policy is None:
        raise UsageError("--strict cannot be combined with --reservation none", provider=NAME)
    ids = [request.reservation_id] if request.mode is ReservationMode.ID else []
    return build(policy, ids)


# ------------------------------------------------------------------------------------------------ errors
def _capacity(exc: Any, ctx: ErrorContext) -> VmError:
    requested = ", ".join(v.requested for v in exc.violations if v.requested) or "the requested preset"
    where = ctx.region or "this region"
    if ctx.block:
        return CapacityError(
            f"Nebius capacity block {ctx.block} has no room for {requested} ({exc.message})",
            scope=Scope.RESERVATION, region=ctx.region, provider=NAME,
            suggestion="use on-demand capacity (`--reservation auto` without --strict) or another block",
        )
    offers = Command.of("offers", "--gpu", ctx.gpu, "--provider", NAME)
    return CapacityError(
        f"Nebius has no capacity for {requested} in {where} ({exc.message})",
        scope=Scope.REGION, region=ctx.region, provider=NAME,
        suggestion=Hint.say("try another region or GPU count, or later ({} lists where it is sold)", offers)
        if ctx.gpu else "try another region or GPU count, or later",
    )


def _quota(exc: Any, ctx: ErrorContext) -> VmError:
    parts = [f"{v.quota}: {v.requested} requested, limit {v.limit}" for v in exc.violations]
    detail = "; ".join(parts) or exc.message
    return QuotaError(
        f"Nebius quota exceeded in project {ctx.project or '?'} ({detail})", provider=NAME,
        suggestion="ask Nebius to raise the quota, or use another region",
    )


def _permission_denied(exc: Any, ctx: ErrorContext) -> VmError:
    what = f" to project {ctx.project}" if ctx.project else f" to tenant {ctx.tenant}" if ctx.tenant else ""
    return AuthError(f"Nebius denied access{what} ({exc.message})", provider=NAME,
                     suggestion="check the profile's project_id and projects settings")


def _not_found(exc: Any, ctx: ErrorContext) -> VmError:
    what = f"instance {ctx.instance_id}" if ctx.instance_id else "resource"
    return NotFound(f"Nebius {what} not found ({exc.message})", provider=NAME)


def _already_exists(exc: Any, ctx: ErrorContext) -> VmError:
    return VmError(
        f"an instance named {ctx.name!r} already exists in Nebius project {ctx.project} ({ctx.region})",
        provider=NAME, suggestion="choose another name, or destroy the existing instance first",
    )


def _invalid(exc: Any, ctx: ErrorContext) -> VmError:
    parts = [f"{v.field}: {v.message}" for v in exc.violations]
    return UsageError(f"Nebius rejected the request: {'; '.join(parts) or exc.message}", provider=NAME)


def _timeout(exc: Any, ctx: ErrorContext) -> VmError:
    return still_running(f"Nebius operation {exc.operation_id} not finished after {exc.timeout:g} s; it continues in "
                         "the cloud", provider=NAME, instance_id=ctx.instance_id)


# What to do about a target that cannot be reached, by `cloud_sdk_core.net.CauseKind` name (the SDK's message says
# what happened already).
_UNREACHABLE_HINTS = {
    "DNS": "check the profile's endpoint: the API domain (default api.nebius.cloud:443, whose services are "
           "compute.<domain>, cpl.iam.<domain> and vpc.<domain>)",
    "TLS": "behind a TLS-inspecting proxy, set SSL_CERT_FILE (or GRPC_DEFAULT_SSL_ROOTS_FILE_PATH) to its CA file",
    "PROXY": "check HTTPS_PROXY (or https_proxy, grpc_proxy) and NO_PROXY",
}
_UNREACHABLE_HINT = "check the network and the profile's endpoint, then retry"

# What to do about credentials that gave no token, by the SDK's CredentialsError.source.
_CREDENTIALS_HINTS = {
    "token file": "write a fresh token to it (`nebius iam get-access-token > FILE`), or set token_command instead",
    "token command": "run the command yourself to see what it needs (the nebius CLI may need `nebius profile "
                     "create` or a login)",
    "service account": "check the service account, its public key id and that the private key is the one its "
                       "authorized key was made from (`nebius iam auth-public-key generate` makes a new "
                       "credentials file)",
}


def _unreachable(exc: Any, ctx: ErrorContext) -> VmError:
    return Transient(f"Nebius is unreachable: {exc}", provider=NAME,
                     suggestion=_UNREACHABLE_HINTS.get(exc.cause.kind.name, _UNREACHABLE_HINT))


def _credentials(exc: Any, ctx: ErrorContext) -> VmError:
    return AuthError(f"Nebius: no IAM token from the {exc.source}: {exc.message}", provider=NAME,
                     suggestion=_CREDENTIALS_HINTS.get(exc.source))


def _table() -> dict[type[BaseException], Factory[ErrorContext]]:
    """nebius_sdk exception type -> vm-core error factory (the most specific class of an exception wins)."""
    from nebius_sdk import errors as sdk

    transient: Factory[ErrorContext] = rule(
        Transient, "Nebius did not answer ({exc}); the request may or may not have been carried out", provider=NAME,
        suggestion="retry; after a failed create, look the instance up by name first")
    return {
        sdk.CapacityError: _capacity,
        sdk.QuotaError: _quota,
        sdk.PermissionDenied: _permission_denied,
        sdk.AuthError: rule(AuthError, "Nebius refused the IAM token ({exc.message})", provider=NAME,
                            suggestion="a token from `nebius iam get-access-token` (token, NEBIUS_IAM_TOKEN, "
                                       "token_file) lasts 12 h: get a new one, or set token_command or a service "
                                       "account, which vm renews"),
        sdk.CredentialsError: _credentials,
        sdk.NotFound: _not_found,
        sdk.AlreadyExists: _already_exists,
        sdk.Conflict: rule(VmError, "Nebius refused the request now: {exc.message}", provider=NAME),
        sdk.InvalidArgument: _invalid,
        sdk.RateLimited: rate_limited("Nebius rate limit hit, retries exhausted ({exc.message})", provider=NAME),
        sdk.Unavailable: transient,
        sdk.Unreachable: _unreachable,
        sdk.RequestNotSent: rule(Transient, "Nebius could not be reached ({exc}); the request was not sent",
                                 provider=NAME, suggestion="retry"),
        sdk.OperationTimeout: _timeout,
        # OperationFailed, PaginationLoop, and any APIError not listed above
        sdk.NebiusError: rule(VmError, "Nebius request failed: {exc}", provider=NAME),
    }


ERRORS = ErrorTable(_table, ErrorContext())
vm_error = ERRORS.translate  # the vm-core error for a nebius_sdk exception; None for anything else
translated = ERRORS.translated  # re-raise nebius_sdk exceptions as vm-core errors (chained); others pass
