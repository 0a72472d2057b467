"""The fleet verbs of `Client` (see its methods for the contracts): requests in, reports out, over the engine's
entry points (fleet/service.py, FleetCreator, FleetScaler, FleetDestroyer, FleetReconciler, FleetInspector,
fleet/reap.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import (
    BudgetError,
    CapacityError,
    Interrupted,
    NotFound,
    PartialFailure,
    StrategyError,
    UsageError,
    VmError,
)
from ..hints import Command, Hint, Setting, phrase
from . import budgets
from .confirm import Confirm, Confirmation, ask, destroying
from .fleet_reports import (
    ClusterPlanReport,
    FleetCreated,
    FleetDestroyed,
    FleetForgotten,
    FleetList,
    FleetPlanReport,
    FleetReaped,
    FleetScaled,
    FleetStatus,
)
from .outcome import Problem
from .requests import (
    FleetCreateRequest,
    FleetDestroyRequest,
    FleetListRequest,
    FleetNameRequest,
    FleetReapRequest,
    FleetReconcileRequest,
    FleetRepairRequest,
    FleetScaleRequest,
)
from .reservations import ON_DEMAND, warn_on_demand
from .scaling import pinned_short, refusal, scale_problem, unchecked

if TYPE_CHECKING:
    from ..events.model import Event
    from ..fleet.create import CreateReport, FleetCreator, FleetSpec
    from ..fleet.eligibility import Enforced
    from ..fleet.reap import Outcome as ReapOutcome
    from ..fleet.reap import Target
    from ..fleet.scale import FleetScaler
    from ..fleet.store import FleetRecord, FleetStore
    from ..provider import Provider
    from ..session import Session
    from .client import Client, Progress

MAX_FLEET = 1000  # VMs per fleet
T = TypeVar("T")


def _tell(client: Client, store: FleetStore, make: Callable[[str], list[Event]]) -> None:
    """Record the events of a verb that acted and deliver them to the profile's webhooks (never raises)."""
    from ..events.verbs import tell

    tell(client.session, store, make, client.warn)


# ------------------------------------------------------------------------------------------------ create
class _Prepared:
    """A fleet create's spec, strategy and engine, before anything is recorded."""

    def __init__(self, spec: FleetSpec, creator: FleetCreator) -> None:
        self.spec, self.creator = spec, creator


def _prepare(client: Client, request: FleetCreateRequest, progress: Progress, *, dry_run: bool) -> _Prepared:
    from ..fleet.create import FleetCreator
    from ..fleet.location import open_store
    from ..fleet.service import connect
    from ..sshkeys import check_keys

    spec, chosen = fleet_spec(request)
    session = client.session
    connected = connect(session, spec.providers, client.warn)
    connected, spec = fleet_machine(connected, spec, explicit=request.providers is not None, warn=client.warn)
    if not dry_run:
        check_keys(session, connected, request.ssh_public_key, client.warn)
    creator = FleetCreator(open_store(session), connected, chosen, progress=progress, timeout=request.timeout,
                           concurrency=create_concurrency(session, connected), profile=session.profile.name)
    return _Prepared(spec, creator)


def create_concurrency(session: Session, providers: Iterable[str]) -> dict[str, int]:
    """Each provider's concurrent create calls, as its plugin declares them (the session's typed records)."""
    return {name: session.plugin(name).create_concurrency for name in providers}


def fleet_spec(request: FleetCreateRequest) -> tuple[FleetSpec, Enforced]:
    """The FleetSpec of a request and the strategy that places it; UsageError for any bad input."""
    from ..catalog import default_catalog
    from ..fleet.cluster import Placement
    from ..fleet.create import FleetSpec
    from ..fleet.naming import new_fleet_name
    from ..fleet.service import strategy_named
    from ..fleet.spot import check_spot
    from .validate import reservation

    try:
        where = Placement(request.placement)
    except ValueError:
        raise UsageError(f"placement {request.placement!r} is unknown; available: any, cluster") from None
    if where is Placement.CLUSTER and request.strategy is not None:
        raise UsageError(f"--strategy {request.strategy} cannot be combined with --placement cluster: every VM goes "
                         "to one place, the cheapest that can hold the whole fleet")
    strategy = "cluster" if where is Placement.CLUSTER else request.strategy or "spread"
    wanted = default_catalog().parse(request.gpu)
    count = request.count
    if not 1 <= count <= MAX_FLEET:
        raise UsageError(f"--count must be between 1 and {MAX_FLEET}, not {count}")
    if request.region is not None and not request.region.strip():
        raise UsageError(phrase(Setting("region"), " needs a region name (see ", Command.of("offers", "--gpu", "..."),
                                " for where it is sold)"))
    minimum = count if request.min_count is None else request.min_count
    if not 1 <= minimum <= count:
        raise UsageError(f"--min-count must be between 1 and --count ({count}), not {minimum}")
    providers = None if request.providers is None else tuple(dict.fromkeys(p.strip() for p in request.providers
                                                                           if p.strip()))
    if providers == ():
        raise UsageError("--providers needs at least one provider name, e.g. --providers crusoe,nebius")
    spec = FleetSpec(name=new_fleet_name(request.name), gpu=wanted.gpu, gpu_count=wanted.gpu_count or 1, count=count,
                     min_count=minimum, region=request.region,
                     reservation=reservation(request.reservation, request.strict), strategy=strategy,
                     providers=providers, allow_unterminable=request.allow_unterminable,
                     ssh_public_key=request.ssh_public_key, placement=where, ttl=request.ttl,
                     max_price=request.max_price, machine=request.machine, **_looking_after(request),
                     **budgets.spec_fields(request))
    check_spot(spec)
    return spec, strategy_named("cheapest" if where is Placement.CLUSTER else strategy)


def _looking_after(request: FleetCreateRequest) -> dict[str, Any]:
    """The FleetSpec fields of --maintain, --spot (--on-demand-base, --spot-fallback) and --wait-for-capacity;
    UsageError for a wait that is not a positive number of seconds."""
    wait = request.wait_for_capacity
    if wait is not None and not wait > 0:
        raise UsageError(f"--wait-for-capacity must be a positive duration such as 30m or 2h, not {wait}")
    return {"maintain": request.maintain, "spot": request.spot, "on_demand_base": request.on_demand_base or 0,
            "spot_fallback": request.spot_fallback, "wait": wait}


def fleet_machine(connected: dict[str, Provider], spec: FleetSpec, *, explicit: bool,
                  warn: Callable[[str], None]) -> tuple[dict[str, Provider], FleetSpec]:
    """The providers a new fleet with machine options may use, and its spec (before anything is recorded or
    created): each provider that sells the size checks the options (`machine.check`, reads only). One that refuses
    them is left out, said once through `warn`, and the spec names the others (so scale and repair keep to them),
    unless the providers were named (`explicit`) or none is left: then UsageError (exit 2) with each refusal."""
    from ..catalog import default_catalog
    from ..machine import SupportsMachineOptions, check

    if spec.machine.is_default:
        return connected, spec
    catalog = default_catalog()
    kept: dict[str, Provider] = {}
    refused: list[tuple[str, UsageError]] = []
    for name, target in connected.items():
        if catalog.shapes_for(name, spec.gpu, spec.gpu_count) or not isinstance(target, SupportsMachineOptions):
            try:
                check(target, name, spec.gpu, spec.gpu_count, spec.region, spec.machine)
            except UsageError as exc:
                refused.append((name, exc))
                continue
        kept[name] = target
    sells = [n for n in kept if catalog.shapes_for(n, spec.gpu, spec.gpu_count)]
    if refused and (explicit or not sells):
        if len(refused) == 1:
            raise refused[0][1]
        raise UsageError("; ".join(f"{name}: {error.message}" for name, error in refused),
                         suggestion="name the providers whose images these are with --providers, or see "
                                    "`vm images --provider P`")
    for name, error in refused:
        warn(f"{name} is not used: {error.message}")
    return kept, (replace(spec, providers=tuple(kept)) if refused else spec)


def plan_fleet(client: Client, request: FleetCreateRequest) -> FleetPlanReport | ClusterPlanReport:
    from ..fleet.budget import check_budget
    from ..fleet.cluster import Placement

    prepared = _prepare(client, request, client.progress, dry_run=True)
    spec, creator = prepared.spec, prepared.creator
    if spec.placement is Placement.CLUSTER:
        from ..fleet.cluster_place import plan

        cluster = plan(creator, spec)
        refused = cluster.failure() or budgets.plan_problem(client, spec, cluster.placements)
        return ClusterPlanReport(spec=spec, cluster=cluster, problem=Problem.of(refused) if refused else None)
    placements, offers = creator.plan(spec)
    problem: VmError | None = None
    if len(placements) < spec.count:
        problem = CapacityError(f"only {len(placements)} of {spec.count} VMs can be placed with the current offers",
                                suggestion=Hint.run("offers", "--gpu", request.gpu))
    else:
        over: BudgetError | None = check_budget(placements, request.max_price)
        problem = over or budgets.plan_problem(client, spec, placements)
    return FleetPlanReport(spec=spec, placements=placements, offers=offers,
                           problem=Problem.of(problem) if problem else None)


def create_fleet(client: Client, request: FleetCreateRequest, progress: Progress) -> FleetCreated:
    from ..events import verbs as events
    from ..fleet.service import strategy_failed

    prepared = _prepare(client, request, progress, dry_run=False)
    spec, creator = prepared.spec, prepared.creator
    budgets.check_create(client, creator, spec)
    if spec.wait is not None:
        return _waited(client, creator, spec)
    try:
        report = interruptibly(creator, lambda: creator.create(spec))
    except StrategyError as exc:
        raise strategy_failed(creator.store, creator.identity, exc) from None
    created = FleetCreated(report=report, records=creator.store.members(spec.name))
    if request.reservation != ON_DEMAND:  # on-demand asked for by name is not warned about
        warn_on_demand(client, report.running)
    created.problem = _create_problem(report)
    _tell(client, creator.store, lambda actor: events.created(report, actor))
    return created


def _waited(client: Client, creator: FleetCreator, spec: FleetSpec) -> FleetCreated:
    """A create that waits for capacity (api/fleet_maintain.py), interruptibly: a Ctrl-C leaves it waiting."""
    from ..events import verbs as events
    from .fleet_maintain import create_report, wait_for_capacity, wait_problem

    waited = interruptibly(creator, lambda: wait_for_capacity(client, creator, spec))
    report = create_report(waited)
    created = FleetCreated(report=report, records=creator.store.members(spec.name))
    created.problem = wait_problem(waited) or _create_problem(report)
    if not waited.waiting and not waited.gave_up:
        _tell(client, creator.store, lambda actor: events.created(report, actor))
    return created


def _create_problem(report: CreateReport) -> Problem | None:
    """0 active, 7 degraded, 130 interrupted; a failed fleet ends with its failures' kind (fleet.service)."""
    from ..fleet.service import failure_kind
    from ..fleet.store import FleetState

    name, fleet = report.fleet.name, report.fleet
    if report.interrupted:
        return Problem.of(Interrupted(f"fleet {name} interrupted with {len(report.running)} VM(s) running",
                                      suggestion=Hint.run("fleet", "destroy", name)))
    if fleet.state is FleetState.DEGRADED:
        return Problem.of(PartialFailure(f"fleet {name} is degraded: {fleet.message}",
                                         suggestion=Hint.run("fleet", "status", name)))
    if fleet.state is not FleetState.FAILED:
        return None
    if report.unresolved:
        return Problem.of(PartialFailure(f"fleet {name}: rollback could not destroy {len(report.unresolved)} VM(s)",
                                         suggestion=Hint.run("fleet", "destroy", name)),
                          [(name, VmError(n)) for n in report.unresolved])
    failed = failure_kind(report.errors)
    return Problem.of(failed(f"fleet {name} failed: {fleet.message}; its name stays taken until it is destroyed",
                             suggestion=Hint.run("fleet", "destroy", name)))


def interruptibly(creator: FleetCreator, run: Callable[[], T]) -> T:
    """`run` so that Ctrl-C or SIGTERM ask `creator` to stop starting VMs (fleet.service.run_interruptibly), when
    called from the main thread (signals reach no other); from another thread, `run` as it is (set
    `creator.stop` to stop it)."""
    from ..fleet.service import run_interruptibly

    if threading.current_thread() is not threading.main_thread():
        return run()
    return run_interruptibly(creator, run)


# ------------------------------------------------------------------------------------------ recorded fleets
def list_fleets(client: Client, request: FleetListRequest) -> FleetList:
    from ..fleet.lease import user_at_host
    from ..fleet.location import open_store
    from ..spend.ledger import last_seen

    store = open_store(client.session)
    fleets = [f for f in store.list_fleets() if not request.mine or f.created_by == user_at_host()]
    budgets.warn_fleets(client, store, fleets)
    return FleetList(fleets=[(f, store.members(f.name)) for f in fleets], seen=last_seen(store))


def fleet_statuses(client: Client, request: FleetNameRequest) -> Iterator[FleetStatus]:
    from ..fleet.inspect import FleetInspector
    from ..spend.observe import observe_members

    store, record, providers = client.recorded_fleet(request.name)
    inspector = FleetInspector(store, providers)
    while True:
        view = inspector.view(request.name)
        observe_members(store, [v.instance for v in view.members if v.instance], record.accounts, "status",
                        client.warn)
        yield FleetStatus(view=view, problem=unchecked(view.problems, request.name))


def reconcile_fleet(client: Client, request: FleetReconcileRequest) -> FleetStatus:
    from ..fleet.reconcile import FleetReconciler

    store, _, providers = client.recorded_fleet(request.name)
    report = FleetReconciler(store, providers, progress=client.progress, timeout=request.timeout).reconcile(
        request.name, dry_run=request.dry_run)
    return FleetStatus(view=report.view, actions=report.actions, dry_run=report.dry_run,
                       problem=unchecked(report.view.problems, request.name))


def forget_fleet(client: Client, request: FleetNameRequest) -> FleetForgotten:
    from ..fleet.location import open_store
    from ..fleet.service import forget

    record, left = forget(open_store(client.session), request.name)
    return FleetForgotten(fleet=record, left=left)


def destroy_fleet(client: Client, request: FleetDestroyRequest, confirm: Confirm | None) -> FleetDestroyed:
    from ..events import verbs as events
    from ..fleet.destroy import DestroyReport, FleetDestroyer
    from ..fleet.inspect import SHOWN
    from ..fleet.naming import check_fleet_name
    from .fleet_json import recorded_instance

    name = request.name
    check_fleet_name(name)
    try:
        store, record, providers = client.recorded_fleet(name)
        if confirm is not None:
            live = [recorded_instance(record, m) for m in store.members(name) if m.state in SHOWN]
            ask(confirm, destroying(live, again=Hint.run("fleet", "destroy", name, "--yes"), what=f"fleet {name}"))
        report = FleetDestroyer(store, providers, progress=client.progress, timeout=request.timeout).destroy(name)
        _tell(client, store, lambda actor: events.destroyed(report, actor))
    except NotFound as exc:  # never recorded, or forgotten by another vm process meanwhile
        client.progress(f"{exc.message}: nothing to destroy")
        return FleetDestroyed(report=DestroyReport(name, forgotten=True), found=False)
    problem = None
    if report.failures:
        problem = Problem.of(PartialFailure(f"{len(report.failures)} VM(s) of fleet {name} may still exist",
                                            suggestion=Hint.run("fleet", "destroy", name)),
                             [(name, VmError(f)) for f in report.failures])
    elif report.released:
        problem = Problem.of(PartialFailure(
            f"fleet {name}: {len(report.released)} VM(s) still run and bill: their cloud refuses to delete them "
            "through its API (terminate them in its console, then re-run this; the fleet stays recorded)",
            suggestion=Hint.run("fleet", "forget", name)))
    return FleetDestroyed(report=report, problem=problem)


# ----------------------------------------------------------------------------------------- scale, repair
def _scaler(client: Client, name: str, timeout: float, ssh_public_key: str | None) -> FleetScaler:
    """A scaler acting through the fleet's own accounts, with the fleet's strategy."""
    from ..fleet.create import FleetCreator
    from ..fleet.scale import FleetScaler
    from ..fleet.service import fleet_strategy

    store, record, providers = client.recorded_fleet(name)
    creator = FleetCreator(store, providers, fleet_strategy(store, record), progress=client.progress,
                           timeout=timeout, concurrency=create_concurrency(client.session, providers),
                           profile=record.profile)
    return FleetScaler(creator, ssh_public_key=ssh_public_key)


def scale_fleet(client: Client, request: FleetScaleRequest) -> FleetScaled:
    from ..events import verbs as events
    from ..fleet.scale import ScaleRefused

    name, count = request.name, request.count
    if not 1 <= count <= MAX_FLEET:
        raise UsageError(f"--count must be between 1 and {MAX_FLEET}, not {count}")
    scaler = _scaler(client, name, request.timeout, request.ssh_public_key)
    before = scaler.creator.store.get_fleet(name)
    previous = before.count if before is not None else count
    if count > previous and not request.dry_run:
        budgets.check_monthly(client)
    try:
        report = interruptibly(scaler.creator, lambda: scaler.scale(name, count, request.min_count,
                                                                     dry_run=request.dry_run))
    except ScaleRefused as exc:
        raise UsageError(refusal(exc), suggestion=exc.hint) from None
    _tell(client, scaler.creator.store, lambda actor: events.scaled(previous, report, actor))
    if (pinned := pinned_short(scaler.creator.store, name, count, report)) is not None:
        raise pinned
    return FleetScaled(report=report, problem=scale_problem(name, report))


def repair_fleet(client: Client, request: FleetRepairRequest) -> FleetScaled:
    from ..events import verbs as events

    scaler = _scaler(client, request.name, request.timeout, request.ssh_public_key)
    report = interruptibly(scaler.creator, lambda: scaler.repair(request.name, dry_run=request.dry_run))
    _tell(client, scaler.creator.store, lambda actor: events.repaired(report, actor))
    return FleetScaled(report=report, problem=scale_problem(request.name, report))


# ------------------------------------------------------------------------------------------------- reap
def reap_fleets(client: Client, request: FleetReapRequest, confirm: Confirm | None) -> FleetReaped:
    from ..fleet import budget_enforce
    from ..fleet import reap as reaping
    from ..fleet.location import open_store

    store = open_store(client.session)
    expired = reaping.due(store)
    resolved = [_resolve(client, record) for record in expired]
    spent = budgets.due(client, store, skip={f.name for f in expired})
    outcomes = [r for r in [*resolved, *spent] if isinstance(r, reaping.Outcome)]
    targets = [r for r in resolved if isinstance(r, reaping.Target)]
    over = [s for s in spent if not isinstance(s, reaping.Outcome)]
    if request.dry_run:
        outcomes += [reaping.preview(t) for t in targets] + [budget_enforce.preview(d) for d in over]
    else:
        ask(confirm, _reaping(targets, budgets.confirmation(over)))
        outcomes += [_reap_one(client, t, request.timeout) for t in targets]
        _tell_reaped(client, outcomes)
        outcomes += budgets.enforce_all(client, over, request.timeout)
    if not outcomes:
        client.progress("no fleet has expired or reached its budget")
    left = [o for o in outcomes if not o.ok]
    problem = None
    if left:
        problem = Problem.of(PartialFailure(f"{len(left)} of {len(outcomes)} fleet(s) to reap were left",
                                            suggestion=Hint.run("fleet", "reap")),
                             [(o.fleet.name, VmError(f"{o.result}: {o.reason}")) for o in left])
    return FleetReaped(outcomes=reaping.in_order(outcomes), dry_run=request.dry_run, problem=problem)


def _resolve(client: Client, record: FleetRecord) -> Target | ReapOutcome:
    """The fleet's store and providers in its own accounts, else the Outcome of skipping (or of it being gone)."""
    return budgets.resolve(client, record)


def _tell_reaped(client: Client, outcomes: list[ReapOutcome]) -> None:
    """The reaped fleets' events, told to the webhooks of the profile the command was run with."""
    from ..events import verbs as events
    from ..fleet.location import open_store

    client.reset_profile()
    _tell(client, open_store(client.session), lambda actor: events.reaped(outcomes, actor))


def _reap_one(client: Client, target: Target, timeout: float) -> ReapOutcome:
    from ..fleet.reap import reap
    from .fleet_json import expiry_text

    client.progress(f"fleet {target.record.name} expired at {expiry_text(target.record.expires_at)}: destroying it")
    return reap(target, timeout=timeout, progress=client.progress)


def _reaping(targets: list[Target], spent: list[str]) -> Confirmation | None:
    """The one question before reaping: each fleet, when it expired and its live VMs (then `spent`: the lines of
    the fleets that reached their budget)."""
    from .fleet_json import expiry_text

    if not targets and not spent:
        return None
    lines = ["These expired fleets will be destroyed:",
             *(f"  {t.record.name}  expired {expiry_text(t.record.expires_at)}  {t.live} VM(s)" for t in targets)]
    if not targets:
        return Confirmation("Act on the fleets that reached their budget?", Hint.run("fleet", "reap", "--yes"),
                            tuple(spent))
    return Confirmation(f"Destroy {len(targets)} expired fleet(s)?", Hint.run("fleet", "reap", "--yes"),
                        tuple(lines + spent))
