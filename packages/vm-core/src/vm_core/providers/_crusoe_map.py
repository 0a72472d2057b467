"""Crusoe vocabulary as data: VM states, product lines, reservation requests and SDK errors in vm-core terms.

Nothing here imports crusoe_sdk at module import time: the SDK's error and request types are loaded on the
first translation or the first create (so `import vm_core.providers.crusoe` stays cheap).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..catalog import Catalog
from ..errors import (
    AuthError,
    CapacityError,
    ConfigError,
    NotFound,
    QuotaError,
    Scope,
    Transient,
    Unsupported,
    VmError,
)
from ..hints import Command, Hint
from ..kit.errors import ErrorTable, Factory, rate_limited, rule
from ..kit.ongoing import still_running
from ..model import InstanceState, ReservationMode, ReservationRequest

NAME = "crusoe"
TITLE = "Crusoe Cloud"

# Crusoe `state` strings -> the normalized state; anything else is UNKNOWN.
STATES: dict[str, InstanceState] = {
    "STATE_INITIALIZING": InstanceState.CREATING,
    "STATE_DEFINING": InstanceState.CREATING,
    "STATE_STARTING": InstanceState.STARTING,
    "STATE_RUNNING": InstanceState.RUNNING,
    "STATE_SHUTDOWN": InstanceState.STOPPING,
    "STATE_STOPPED": InstanceState.STOPPED,
    "STATE_SHUTOFF": InstanceState.STOPPED,
    "STATE_DELETING": InstanceState.TERMINATING,
    "STATE_DELETED": InstanceState.TERMINATED,
    "STATE_ERROR": InstanceState.ERROR,
    "STATE_CRASHED": InstanceState.ERROR,
}


def instance_state(raw: str) -> InstanceState:
    return STATES.get(str(raw), InstanceState.UNKNOWN)


# Crusoe product lines (a reservation's `product_line`) -> canonical GPU. A shape belongs to the longest
# product line that prefixes its name at a `-` or `.` boundary: `a100-80gb-sxm-ib.8x` is `a100-80gb-sxm`,
# `a100-80gb.8x` is `a100-80gb`, so a PCIe reservation never hosts an SXM VM.
PRODUCT_LINES: dict[str, str] = {
    "h100": "H100",
    "h200": "H200",
    "a100": "A100",
    "a100-80gb": "A100-80GB",
    "a100-80gb-sxm": "A100-80GB",
    "l40s": "L40S",
    "mi300x": "MI300X",
    "gb200": "GB200",
}


def product_line(shape: str) -> str:
    """The product line of a Crusoe shape ("" when none of PRODUCT_LINES prefixes it)."""
    lines = [line for line in PRODUCT_LINES if shape == line or shape.startswith((f"{line}-", f"{line}."))]
    return max(lines, key=len, default="")


def reservation_gpu(line: str, catalog: Catalog) -> str:
    """The canonical GPU of a product line: the table above, else the first catalog shape of Crusoe that the
    line prefixes ("" when nothing matches)."""
    if line in PRODUCT_LINES:
        return PRODUCT_LINES[line]
    prefixed = (s for s in catalog.shapes if s.provider == NAME and s.shape.startswith((f"{line}-", f"{line}.")))
    return next((s.gpu for s in prefixed), "")


# ------------------------------------------------------------------------------------------ reservations
def reservation_spec(request: ReservationRequest, gpu: str) -> Any:
    """The SDK's `reservation_specification` for `--reservation` (table in vm_core.providers.crusoe).

    Raises Unsupported for `auto --strict`: Crusoe's lowest_cost always falls back to on-demand (its hint lists
    the reservations of `gpu`).
    """
    from crusoe_sdk import ById, LowestCost, OnDemand

    if request.mode is ReservationMode.AUTO and request.strict:
        raise Unsupported("Crusoe cannot require a reservation without naming one; pass --reservation ID",
                          provider=NAME, suggestion=Hint.say("{} lists reservations", Command.of(
                              "offers", "--gpu", gpu, "--provider", NAME)))
    specs: dict[ReservationMode, Callable[[], Any]] = {
        ReservationMode.AUTO: LowestCost,
        ReservationMode.NONE: OnDemand,
        ReservationMode.ID: lambda: ById(request.reservation_id),
    }
    return specs[request.mode]()


# ------------------------------------------------------------------------------------------ errors
@dataclass(frozen=True, slots=True)
class ErrorContext:
    """What a translated error should name: the location asked for and the action's ids."""

    region: str | None = None
    resource_id: str = ""
    gpu: str = ""  # the GPU type of a create, for the hint of a capacity error


def _capacity(exc: Any, ctx: ErrorContext) -> VmError:
    where = f" in {ctx.region}" if ctx.region else ""
    offers = Command.of("offers", "--gpu", ctx.gpu, "--provider", NAME)
    return CapacityError(f"Crusoe is out of stock{where}: {exc.message}", scope=Scope.REGION, region=ctx.region,
                         provider=NAME, suggestion=Hint.say("try another region: {} lists capacity", offers)
                         if ctx.gpu else "try another region: or later")


def _timeout(exc: Any, ctx: ErrorContext) -> VmError:
    target = f" on instance {ctx.resource_id}" if ctx.resource_id else ""
    return still_running(f"Crusoe operation {exc.operation_id}{target} did not finish within {exc.timeout:g}s; it "
                         "continues in the cloud", provider=NAME, instance_id=ctx.resource_id,
                         after=f" (operation id {exc.operation_id})")


# Where a Crusoe profile names its project, in the words of Crusoe's own tools and of vm's profile.
PROJECT_SETTINGS = "default_project in ~/.crusoe/config, CRUSOE_DEFAULT_PROJECT or the profile's project_id"
ENDPOINT_SETTING = "api_endpoint (CRUSOE_API_ENDPOINT)"


def _unreachable(exc: Any, ctx: ErrorContext) -> VmError:
    """The SDK's ConnectError: its one line, what to check for its cause (never "try again": it would not help)."""
    return Transient(f"{TITLE}: {exc}", provider=NAME, suggestion=unreachable_hint(exc.cause.kind, ENDPOINT_SETTING))


def unreachable_hint(kind: Any, endpoint_setting: str) -> str:
    """What to check when an endpoint cannot be reached, by the `cloud_sdk_core.net.CauseKind` of the failure."""
    from cloud_sdk_core.net import CauseKind

    hints = {
        CauseKind.DNS: f"check {endpoint_setting} and this machine's DNS",
        CauseKind.TLS: "set SSL_CERT_FILE (or REQUESTS_CA_BUNDLE) to the CA file that signed the server's certificate",
        CauseKind.PROXY: "check HTTPS_PROXY and NO_PROXY",
    }
    return hints.get(kind, f"check {endpoint_setting} and that this machine can reach it")


def _unresolved(exc: Any, ctx: ErrorContext) -> VmError:
    """No project could be chosen: a name that matches none, or none set and zero or several projects."""
    count = {0: "no project", 1: "one project"}.get(len(exc.projects), f"{len(exc.projects)} projects")
    seen = f"this key can see {count}" + (f": {exc.listing()}" if exc.projects else "")
    what = f"no project named {exc.wanted!r}; {seen}" if exc.wanted else f"no project is set and {seen}"
    return ConfigError(f"{TITLE}: {what}", provider=NAME,
                       suggestion=f"set {PROJECT_SETTINGS} to a project's name or UUID")


def _project_unavailable(exc: Any, ctx: ErrorContext) -> VmError:
    """A 403 on the project's path: the project is wrong, not the credentials."""
    return ConfigError(f"{TITLE}: project {exc.project_id} is unknown or not readable with this key", provider=NAME,
                       suggestion=f"set {PROJECT_SETTINGS} to a project of this key's organisation (name or UUID)")


def _plain(cls: type[VmError], what: str) -> Factory[ErrorContext]:
    return rule(cls, what + ": {exc}", provider=NAME)


def _table() -> dict[type[BaseException], Factory[ErrorContext]]:
    """SDK exception type -> vm-core error factory (the most specific class of an exception wins)."""
    from crusoe_sdk import errors as e

    return {
        e.CapacityError: _capacity,
        e.QuotaError: _plain(QuotaError, "Crusoe quota exceeded"),
        e.OperationUnavailable: _plain(NotFound, "Crusoe no longer reports this operation; read the instance"),
        e.ProjectUnresolved: _unresolved,
        e.ProjectUnavailable: _project_unavailable,
        e.PermissionDenied: _plain(AuthError, "Crusoe refused this request for this key"),
        e.AuthError: _plain(AuthError, "Crusoe refused the credentials (check access_key_id/secret_key)"),
        e.NotFound: _plain(NotFound, "not found on Crusoe"),
        e.RateLimited: rate_limited("Crusoe rate limit: {exc}", provider=NAME),
        e.ServerError: _plain(Transient, "Crusoe server error, the action may or may not have happened"),
        e.NoResponse: _plain(Transient, "no response from Crusoe, the action may or may not have happened"),
        e.ConnectError: _unreachable,
        e.RequestNotSent: _plain(Transient, "could not reach Crusoe"),
        e.OperationTimeout: _timeout,
        e.CrusoeError: _plain(VmError, "Crusoe error"),
    }


ERRORS = ErrorTable(_table, ErrorContext())
translate = ERRORS.translate  # the vm-core error for an SDK error, or None when `exc` is not one
translated = ERRORS.translated  # re-raise crusoe_sdk errors raised inside the block as vm-core errors
