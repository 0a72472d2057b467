"""What each call of `vm_core.api` is asked to do: one frozen dataclass per verb, with the defaults of `vm`.

GPU requests are written as on the command line (`"H100:8"`; `"H100"` means one GPU per VM); timeouts are
seconds (default vm_core.calls.DEFAULT_TIMEOUT, the one default of every wait). `ssh_public_key` is the text of
a public key, `vm_core.sshkeys.NO_KEY` for none on purpose, or None for the key rule of vm_core/sshkeys.py.
Requests are checked when the call runs (UsageError, before any API call), not when they are made.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..calls import DEFAULT_TIMEOUT
from ..machine import MachineOptions
from ..session import CHECK_TIMEOUT


@dataclass(frozen=True)
class ListRequest:
    """`vm list`: every configured provider's VMs (or `provider`'s), the filters combined."""

    provider: str | None = None
    fleet: str | None = None
    state: str | None = None  # an InstanceState value
    region: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class GetRequest:
    """`vm get ID --provider P`."""

    instance_id: str
    provider: str


@dataclass(frozen=True)
class CreateRequest:
    """`vm create`: `count` VMs at once on one provider."""

    provider: str
    gpu: str
    count: int = 1
    name: str | None = None
    region: str | None = None
    reservation: str = "auto"  # auto, none or a reservation id
    strict: bool = False
    spot: bool = False
    max_price: float | None = None  # with spot: USD per hour
    ssh_public_key: str | None = None
    machine: MachineOptions = field(default_factory=MachineOptions)
    no_wait: bool = False
    timeout: float = DEFAULT_TIMEOUT


@dataclass(frozen=True)
class ActionRequest:
    """`vm stop | start | reboot | destroy IDS --provider P`. `strict` is start's (reserved capacity only),
    `hard` reboot's (a reset where the provider has both)."""

    provider: str
    instance_ids: tuple[str, ...]
    no_wait: bool = False
    timeout: float = DEFAULT_TIMEOUT
    strict: bool = False
    hard: bool = False


@dataclass(frozen=True)
class OffersRequest:
    """`vm offers --gpu TYPE[:N]`: without :N every size."""

    gpu: str
    provider: str | None = None
    region: str | None = None
    show_all: bool = False  # also offers without capacity now


@dataclass(frozen=True)
class ProvidersRequest:
    """`vm providers`: `timeout` bounds the credential checks (made at once for every provider)."""

    timeout: float = CHECK_TIMEOUT


@dataclass(frozen=True)
class ImagesRequest:
    """`vm images --provider P [--gpu TYPE[:N]] [--region R]`."""

    provider: str
    gpu: str | None = None
    region: str | None = None


@dataclass(frozen=True)
class FleetCreateRequest:
    """`vm fleet create` (and, with `Client.fleet_plan`, its --dry-run). `placement` is "any" or "cluster";
    a cluster fleet's one place is chosen cheapest first, so `strategy` must stay None there (None elsewhere
    means "spread")."""

    gpu: str
    count: int
    name: str | None = None
    strategy: str | None = None
    placement: str = "any"
    min_count: int | None = None
    providers: tuple[str, ...] | None = None
    region: str | None = None
    reservation: str = "auto"
    strict: bool = False
    allow_unterminable: bool = False
    max_price: float | None = None
    ttl: float | None = None  # seconds
    ssh_public_key: str | None = None
    machine: MachineOptions = field(default_factory=MachineOptions)
    timeout: float = DEFAULT_TIMEOUT
    maintain: bool = False  # the watchdog keeps `count` running (--maintain)
    spot: bool = False  # members beyond on_demand_base are spot where a cloud sells spot (--spot)
    on_demand_base: int | None = None  # with spot: how many are on-demand (--on-demand-base; None: 0)
    spot_fallback: bool = False  # with spot: on-demand when no spot can be placed (--spot-fallback)
    wait_for_capacity: float | None = None  # seconds to wait, recorded `waiting`, when it cannot be placed now
    budget: float | None = None  # USD the fleet may spend in all (--budget; recorded): see fleet/spend_budget.py
    on_budget: str = "stop"  # what reaching the budget does: stop (destroy where a member cannot stop) or destroy


@dataclass(frozen=True)
class FleetMaintainRequest:
    """`vm fleet maintain NAME on|off`: whether the watchdog keeps the fleet's count."""

    name: str
    maintain: bool


@dataclass(frozen=True)
class FleetListRequest:
    """`vm fleet list`: `mine` keeps the fleets created by this user on this host."""

    mine: bool = False


@dataclass(frozen=True)
class FleetNameRequest:
    """A verb on one recorded fleet that takes nothing else: `vm fleet status NAME`, `vm fleet forget NAME`."""

    name: str


@dataclass(frozen=True)
class FleetScaleRequest:
    """`vm fleet scale NAME --count N`."""

    name: str
    count: int
    min_count: int | None = None
    dry_run: bool = False
    timeout: float = DEFAULT_TIMEOUT
    ssh_public_key: str | None = None


@dataclass(frozen=True)
class FleetRepairRequest:
    """`vm fleet repair NAME`."""

    name: str
    dry_run: bool = False
    timeout: float = DEFAULT_TIMEOUT
    ssh_public_key: str | None = None


@dataclass(frozen=True)
class FleetDestroyRequest:
    """`vm fleet destroy NAME`."""

    name: str
    timeout: float = DEFAULT_TIMEOUT


@dataclass(frozen=True)
class FleetReconcileRequest:
    """`vm fleet reconcile NAME`."""

    name: str
    dry_run: bool = False
    timeout: float = DEFAULT_TIMEOUT


@dataclass(frozen=True)
class FleetReapRequest:
    """`vm fleet reap`: every fleet whose time to live has passed."""

    dry_run: bool = False
    timeout: float = DEFAULT_TIMEOUT


@dataclass(frozen=True)
class FleetPowerRequest:
    """`vm fleet stop NAME` or `vm fleet start NAME`: `timeout` bounds the wait for each VM's stop or start."""

    name: str
    timeout: float = DEFAULT_TIMEOUT


@dataclass(frozen=True)
class ReservationsRequest:
    """`vm reservations`: every configured provider's reservations (or `provider`'s), their idle GPU-hours since
    `since` (epoch seconds; None: the last 24 hours), or since each one's start when later."""

    provider: str | None = None
    since: float | None = None


@dataclass(frozen=True)
class CostRequest:
    """`vm cost`: what the VMs vm created cost over [since, until] (epoch seconds; since None: midnight UTC of the
    first day of this month; until None: now), grouped `by` fleet, user, provider, profile or vm
    (vm_core.spend.report.GROUPINGS)."""

    since: float | None = None
    until: float | None = None
    by: str = "fleet"


@dataclass(frozen=True)
class AuditRequest:
    """`vm audit`: every VM of every configured provider's account (or `provider`'s), classified."""

    provider: str | None = None


@dataclass(frozen=True)
class WatchdogRequest:
    """`vm watchdog [--once] [--interval SECONDS]`: one pass over the store's fleets (`once`), else a pass every
    `interval` seconds until stopped; `timeout` bounds each VM's create, boot or delete in a duty."""

    once: bool = False
    interval: float = 60.0
    timeout: float = DEFAULT_TIMEOUT
