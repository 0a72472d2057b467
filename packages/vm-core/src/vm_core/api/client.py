"""`Client`: the Python API of vm, one method per verb of the `vm` command, over one profile's session.

Every method takes a typed request (vm_core.api.requests) and returns a typed report (vm_core.api.reports,
vm_core.api.fleet_reports). Methods block until the verb is done (or, with `no_wait`, accepted by the clouds);
`progress` and `warn` receive what `vm` prints on stderr. Errors are vm_core.errors.VmError subclasses: a call
raises one when it did nothing (bad input, unknown profile or fleet, no provider configured, ...), and returns a
report whose `problem` says what went wrong when it did act (some VMs failed, a fleet is degraded, a plan falls
short). Each method's docstring names what it raises.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from .confirm import Confirm

if TYPE_CHECKING:
    import threading

    from ..fleet.store import FleetRecord, FleetStore
    from ..provider import Provider
    from ..session import Session
    from .events import EventList, EventsRequest
    from .fleet_maintain import FleetMaintained, WaitAdvanced
    from .fleet_reports import (
        ClusterPlanReport,
        FleetCreated,
        FleetDestroyed,
        FleetForgotten,
        FleetList,
        FleetPlanReport,
        FleetPowerReport,
        FleetReaped,
        FleetScaled,
        FleetStatus,
    )
    from .reports import (
        ConfigReport,
        CostReport,
        DestroyedVms,
        ImageList,
        InstanceList,
        InstanceReport,
        OfferList,
        ProviderList,
        VmsActed,
        VmsCreated,
        WatchdogReport,
    )
    from .requests import (
        ActionRequest,
        AuditRequest,
        CostRequest,
        CreateRequest,
        FleetCreateRequest,
        FleetDestroyRequest,
        FleetListRequest,
        FleetMaintainRequest,
        FleetNameRequest,
        FleetPowerRequest,
        FleetReapRequest,
        FleetReconcileRequest,
        FleetRepairRequest,
        FleetScaleRequest,
        GetRequest,
        ImagesRequest,
        ListRequest,
        OffersRequest,
        ProvidersRequest,
        ReservationsRequest,
        WatchdogRequest,
    )
    from .usage_reports import AuditReport, ReservationList

Progress = Callable[[str], None]  # a line of text; a fleet create's lines are Steps (str naming their slot)
_log = logging.getLogger("vm_core.api")


def _log_progress(message: str) -> None:
    _log.info("%s", message)


def _log_warning(message: str) -> None:
    _log.warning("%s", message)


class Client:
    """The verbs of vm over `session` (vm_core.session.open_session; `connect` opens one from the config).

    `progress` gets progress lines and fleet Steps, `warn` warnings (defaults: the `vm_core.api` logger).
    `open_profile(name)` opens another profile's session (None: the default one): acting on a recorded fleet
    switches to the fleet's own profile unless `profile_explicit` (the profile was named by the caller).
    Without `open_profile` a fleet is always acted on through `session`.
    Not thread-safe: one call at a time per Client."""

    def __init__(self, session: Session, *, progress: Progress = _log_progress,
                 warn: Callable[[str], None] = _log_warning,
                 open_profile: Callable[[str | None], Session] | None = None, profile_explicit: bool = True) -> None:
        self.session = session
        self.progress = progress
        self.warn = warn
        self._open_profile = open_profile
        self._explicit = profile_explicit
        self._switched = False
        self.budget_warned: set[str] = set()  # fleets whose spend budget this Client has warned of (api/budgets.py)

    # ------------------------------------------------------------------------------------------- VMs
    def list(self, request: ListRequest | None = None) -> InstanceList:
        """Every configured provider's VMs (or one's), filtered. A provider that fails is in the report's
        problem (PartialFailure, or its own error when it was the only one). Raises ConfigError when no
        provider is configured, UsageError for an unknown provider."""
        from .instances import list_instances
        from .requests import ListRequest

        return list_instances(self, request or ListRequest())

    def get(self, request: GetRequest) -> InstanceReport:
        """One VM (with its accrued cost and running rate when the spend ledger knows it). Raises UsageError for
        a malformed id, NotFound when it does not exist, the provider's error when it cannot be asked."""
        from .budgets import warn_member
        from .instances import get_instance
        from .spend import with_vm_cost

        report = with_vm_cost(self, get_instance(self, request))
        warn_member(self, report.instance.fleet)
        return report

    def create(self, request: CreateRequest, *, confirm: Confirm | None = None) -> VmsCreated:
        """`request.count` VMs at once; blocks until they run (or, with no_wait, are accepted). VMs that fail
        are in the report's problem, the others are left running. `confirm` is asked before VMs the cloud will
        not delete through its API are created (it raises Cancelled to refuse); None: no question. Raises
        UsageError, Unsupported or ConfigError before any create call, BudgetError when this user's monthly
        budget is reached (warned from 80 %)."""
        from .budgets import check_monthly
        from .instances import create_instances

        check_monthly(self)
        return create_instances(self, request, confirm)

    def stop(self, request: ActionRequest) -> VmsActed:
        """Stop VMs (already stopped ones are left as they are). Failures (NotFound for a VM that does not
        exist) are in the report's problem. Raises UsageError for a malformed id, Unsupported where the
        provider cannot stop VMs."""
        from .instances import act

        return act(self, "stop", request)

    def start(self, request: ActionRequest) -> VmsActed:
        """Start stopped VMs (running ones are left as they are); `request.strict`: reserved capacity only.
        As `stop` for failures and errors."""
        from .instances import act

        return act(self, "start", request)

    def reboot(self, request: ActionRequest) -> VmsActed:
        """Reboot VMs (`request.hard`: a reset where the provider has both). As `stop` for failures and
        errors."""
        from .instances import act

        return act(self, "reboot", request)

    def destroy(self, request: ActionRequest, *, confirm: Confirm | None = None) -> DestroyedVms:
        """Destroy VMs; one already gone counts as destroyed. `confirm` is asked first with the live VMs and
        their $/h (it raises Cancelled to refuse); None: no question. Failures are in the report's problem.
        Raises UsageError for a malformed id."""
        from .instances import destroy_instances

        return destroy_instances(self, request, confirm)

    # ---------------------------------------------------------------------------------------- catalog
    def offers(self, request: OffersRequest) -> OfferList:
        """Where a GPU type can be had now, cheapest per GPU-hour first. Providers that fail are in the
        report's problem. Raises UsageError for an unknown GPU type."""
        from .instances import find_offers

        return find_offers(self, request)

    def providers(self, request: ProvidersRequest | None = None) -> ProviderList:
        """Every provider plugin with its status (from an authenticated call), capabilities and endpoint; when
        none is configured the problem is a ConfigError. Never raises for a provider's failure."""
        from .instances import report_providers
        from .requests import ProvidersRequest

        return report_providers(self, request or ProvidersRequest())

    def images(self, request: ImagesRequest) -> ImageList:
        """The images a provider offers for a machine, its default marked. Raises Unsupported when the provider
        lists none, UsageError for an unknown GPU type."""
        from .instances import list_images

        return list_images(self, request)

    def config(self) -> ConfigReport:
        """The selected profile and each provider's settings, secrets only as "<set>" or "<not set>"."""
        from .instances import show_config

        return show_config(self)

    def reservations(self, request: ReservationsRequest | None = None) -> ReservationList:
        """Every reservation or capacity block of the configured providers (or one's): its size, the VMs on it
        now with their fleet and creator (from the store's spend ledger), its idle GPU-hours and their cost over
        the request's period (an estimate: the report's `estimate`), and when it ends. A provider that cannot list
        its reservations is said in its note; one that fails is in the problem (as `list`). Changes nothing.
        Raises ConfigError when no provider is configured, UsageError for an unknown provider."""
        from .requests import ReservationsRequest
        from .reservations import list_reservations

        return list_reservations(self, request or ReservationsRequest())

    def audit(self, request: AuditRequest | None = None) -> AuditReport:
        """Every VM of every configured provider's account (or one's), classified: a fleet member vm recorded, a
        VM vm created (and by whom, from the spend ledger), a VM carrying a recorded fleet's id without a member
        record (adoptable with `fleet_reconcile`), or not vm's; each with its running rate, and totals per
        class. Read-only: writes nothing to the store, changes nothing in a cloud. A provider that fails is in
        the problem (as `list`). Raises ConfigError when no provider is configured or the store cannot be read,
        UsageError for an unknown provider."""
        from .audit import audit_accounts
        from .requests import AuditRequest

        return audit_accounts(self, request or AuditRequest())

    # ----------------------------------------------------------------------------------------- fleets
    def fleet_plan(self, request: FleetCreateRequest) -> FleetPlanReport | ClusterPlanReport:
        """What `fleet_create` would place (a cluster fleet: the place it would take), changing nothing. A plan
        that falls short has a CapacityError problem, one above max_price a BudgetError. Raises UsageError for
        bad input or an unknown strategy, ConfigError when no provider is configured."""
        from .fleets import plan_fleet

        return plan_fleet(self, request)

    def fleet_create(self, request: FleetCreateRequest, *, progress: Progress | None = None) -> FleetCreated:
        """Create a fleet; blocks until every VM runs or has failed (a Ctrl-C in the main thread stops new
        creates). The problem is a PartialFailure for a degraded fleet, Interrupted for an interrupted one, and
        for a failed one its failures' kind (Timeout, AuthError, Transient, else CapacityError). `progress`
        (default the Client's) gets each Step. Raises UsageError, ConfigError or StrategyError when nothing
        could be created."""
        from .fleets import create_fleet

        return create_fleet(self, request, progress or self.progress)

    def fleet_list(self, request: FleetListRequest | None = None) -> FleetList:
        """Every recorded fleet (from the store; no cloud is asked)."""
        from .fleets import list_fleets
        from .requests import FleetListRequest

        return list_fleets(self, request or FleetListRequest())

    def fleet_status(self, request: FleetNameRequest) -> FleetStatus:
        """A fleet as its clouds show it now (with its accrued cost and running rate when the spend ledger knows its
        VMs); members that could not be checked make a PartialFailure problem.
        Raises NotFound for an unknown fleet, ConfigError when a provider acts in another account."""
        return next(self.fleet_statuses(request))

    def fleet_statuses(self, request: FleetNameRequest) -> Iterator[FleetStatus]:
        """`fleet_status` again at every `next()`, over one set of connections (for watching; the caller waits
        between). Raises as fleet_status; NotFound at a `next()` once the record is gone."""
        from .fleets import fleet_statuses
        from .spend import with_fleet_spend

        return (with_fleet_spend(self, status) for status in fleet_statuses(self, request))

    def fleet_scale(self, request: FleetScaleRequest) -> FleetScaled:
        """Grow or shrink a fleet (blocks; a Ctrl-C in the main thread stops new creates). The problem: a dry
        run that cannot place every new VM (CapacityError), VMs left behind (PartialFailure), a rolled-back
        grow (its failures' kind), a fleet not active afterwards (PartialFailure). Raises UsageError for a
        count out of range or below the minimum, CapacityError for a cluster fleet whose place has no room
        (dry run), NotFound for an unknown fleet."""
        from .fleets import scale_fleet

        return scale_fleet(self, request)

    def fleet_repair(self, request: FleetRepairRequest) -> FleetScaled:
        """Settle a fleet's records against its clouds, then place a VM for each one missing. Problems and
        errors as fleet_scale."""
        from .fleets import repair_fleet

        return repair_fleet(self, request)

    def fleet_destroy(self, request: FleetDestroyRequest, *, confirm: Confirm | None = None) -> FleetDestroyed:
        """Destroy every VM of a fleet and its record (safe to re-run; an unknown fleet is `found` False).
        `confirm` is asked first with the fleet's live VMs. The problem is a PartialFailure when VMs may still
        exist or still run. Raises UsageError for a name no fleet can have."""
        from .fleets import destroy_fleet

        return destroy_fleet(self, request, confirm)

    def fleet_reconcile(self, request: FleetReconcileRequest) -> FleetStatus:
        """Make the store match the clouds (adopt, destroy, mark missing). Unchecked members are a
        PartialFailure problem. Raises NotFound for an unknown fleet."""
        from .fleets import reconcile_fleet

        return reconcile_fleet(self, request)

    def fleet_forget(self, request: FleetNameRequest) -> FleetForgotten:
        """Remove a fleet's record, touching no VM. Raises NotFound for an unknown fleet."""
        from .fleets import forget_fleet

        return forget_fleet(self, request)

    def fleet_reap(self, request: FleetReapRequest | None = None, *, confirm: Confirm | None = None) -> FleetReaped:
        """Destroy every fleet whose time to live has passed, each through its own profile and accounts; one
        that cannot be acted on is skipped. `confirm` is asked once with the fleets (not for a dry run). The
        problem is a PartialFailure when some fleet was left."""
        from .fleets import reap_fleets
        from .requests import FleetReapRequest

        return reap_fleets(self, request or FleetReapRequest(), confirm)

    def fleet_stop(self, request: FleetPowerRequest) -> FleetPowerReport:
        """Stop every member of a fleet whose cloud can stop it (blocks until each stopped; Ctrl-C raises
        Interrupted, the stops sent go on); members whose cloud cannot stop them (Lambda) are warned about with
        the $/h they keep billing and listed in the report. The fleet's state is `stopped` once every member
        that can stop is. The problem is a PartialFailure when some member could not be stopped. Raises NotFound
        for an unknown fleet, UsageError (LeaseRefused) while another process holds its lease or for a fleet
        being destroyed or waiting for capacity."""
        from .fleet_power import power_fleet

        return power_fleet(self, "stop", request)

    def fleet_start(self, request: FleetPowerRequest) -> FleetPowerReport:
        """Start the stopped members of a fleet again, as `start` does (a VM that cannot go back to its
        reservation starts on-demand, warned about with both prices); the fleet is active again, or degraded by
        the usual rules. The problem is a PartialFailure when some member could not be started or the fleet is
        degraded afterwards. Raises as fleet_stop."""
        from .fleet_power import power_fleet

        return power_fleet(self, "start", request)

    def watchdog(self, request: WatchdogRequest | None = None, *,
                 stopping: threading.Event | None = None) -> WatchdogReport:
        """Look after every fleet of the store, as `vm watchdog` does (docs/watchdog.md): each pass, for each
        fleet with a duty due (a passed TTL, a maintained fleet's count), through the fleet's own profile and under
        its lease (holder `watchdog user@host:pid`), the same code path as `vm fleet reap` or `vm fleet repair`;
        then the pending webhook deliveries. One pass with `request.once`, else a pass every `request.interval`
        seconds until `stopping` is set, or (from the main thread) SIGTERM or SIGINT. The problem: PartialFailure
        when a duty of a `once` pass failed, Interrupted when SIGINT ended it. Raises UsageError for an interval
        below 0.1 s, ConfigError when a `once` pass cannot read the store."""
        from .requests import WatchdogRequest
        from .watchdog import watch

        return watch(self, request or WatchdogRequest(), stopping)

    def fleet_maintain(self, request: FleetMaintainRequest) -> FleetMaintained:
        """Turn on or off the watchdog's keeping of the fleet's requested count (`maintain`), holding the fleet's
        lease while its record changes. Raises NotFound for an unknown fleet, UsageError while another process
        holds its lease or for a fleet being destroyed."""
        from .fleet_maintain import maintain_fleet

        return maintain_fleet(self, request)

    def fleet_advance_waiting(self, record: FleetRecord) -> WaitAdvanced:
        """One check of a fleet waiting for capacity (the watchdog's step; fleet/waiting.py): under its lease,
        give up at its `wait_until` (failed, nothing left: the problem is a CapacityError), else place all of it
        when the clouds have room within its price cap, else record how many VMs are placeable now. Raises
        NotFound, UsageError (its lease is held elsewhere, or it is not waiting)."""
        from .fleet_maintain import advance_waiting

        return advance_waiting(self, record)

    # ----------------------------------------------------------------------------------------- events
    def events(self, request: EventsRequest | None = None) -> EventList:
        """The recorded events (the store's event log; no cloud is asked), in `seq` order, filtered by fleet,
        time and sequence number. Raises UsageError for a `since` that is neither a time nor a duration."""
        return next(self.events_followed(request))

    def events_followed(self, request: EventsRequest | None = None) -> Iterator[EventList]:
        """`events`, then at each `next()` the events recorded since the previous one (none: an empty list),
        over one store handle (for following; the caller waits between). Raises as events, at the first next()."""
        from .events import EventsRequest, event_lists

        return event_lists(self, request or EventsRequest())

    # ------------------------------------------------------------------------------------------ money
    def cost(self, request: CostRequest | None = None) -> CostReport:
        """What the VMs vm created cost over a period, grouped, from the store's spend ledger alone (no provider
        is connected, no cloud is called): estimates by list price and each cloud's billing rule. Raises
        UsageError for an unknown grouping or an empty period, ConfigError for an unusable store."""
        from .requests import CostRequest
        from .spend import cost_report

        return cost_report(self, request or CostRequest())

    # -------------------------------------------------------------------------------- for the verbs
    def recorded_fleet(self, name: str) -> tuple[FleetStore, FleetRecord, dict[str, Provider]]:
        """(store, record, connected providers) of a recorded fleet, acting through the fleet's own profile
        (see the class) and only in the accounts it recorded: ConfigError (before any call that changes
        anything) otherwise. A provider that cannot connect is warned about and left out. Raises NotFound."""
        from ..fleet.destroy import recorded_fleet
        from ..fleet.location import open_store
        from ..fleet.service import check_accounts
        from .budgets import warn_fleet

        store = open_store(self.session)
        record = recorded_fleet(store, name)
        if self._may_switch and record.profile and record.profile != self.session.profile.name:
            assert self._open_profile is not None
            self.session, self._switched = self._open_profile(record.profile), True
            store = open_store(self.session)
        used = sorted({m.provider for m in store.members(name)} | set(record.accounts))
        connected, failures = self.session.connect_each(used)
        for provider, error in failures:
            self.warn(f"{provider}: {error.message}")
        check_accounts(record, connected, self.session.profile.name)
        warn_fleet(self, store, record)  # at 80 % of its spend budget: once per Client
        return store, record, connected

    @property
    def _may_switch(self) -> bool:
        return not self._explicit and self._open_profile is not None

    def reset_profile(self) -> None:
        """Back to the default profile after acting on a fleet through its own."""
        if self._switched and self._open_profile is not None:
            self.session, self._switched = self._open_profile(None), False


def connect(profile: str | None = None, *, environ: Mapping[str, str] | None = None, progress: Progress = _log_progress,
            warn: Callable[[str], None] = _log_warning, clock: Callable[[], float] | None = None) -> Client:
    """A Client over `profile` of the config file of `environ` (default os.environ: VM_HOME, VM_PROFILE, the
    clouds' own credentials), chosen as `vm --profile` chooses (None: VM_PROFILE, else the config's
    default_profile, else auto, else `local`: the embedded mock clouds, started on first use). `clock` (default
    time.time) is the time source of what vm records: the spend ledger's times, its cost reports' "now". Raises
    ConfigError for an unknown profile or an unsafe or malformed config file."""
    import os

    from ..config import Paths, load_config
    from ..plugins import provider_plugins
    from ..session import open_session

    env = os.environ if environ is None else environ
    paths = Paths.from_env(env)
    config = load_config(paths.config_file)
    plugins = provider_plugins()
    asked = profile or env.get("VM_PROFILE") or None
    asked_by = "" if asked is None else ("VM_PROFILE" if profile is None else "the caller")

    def clocked(session: Session) -> Session:
        if clock is not None:
            session.clock = clock
        return session

    def open_profile(name: str | None) -> Session:
        return clocked(open_session(config, name, paths, plugins, env, progress,
                                    asked_by="the fleet's profile" if name else ""))

    session = clocked(open_session(config, asked, paths, plugins, env, progress, asked_by=asked_by))
    return Client(session, progress=progress, warn=warn, open_profile=open_profile, profile_explicit=asked is not None)


