"""Spend budgets in the verbs of `Client` (the rules: fleet/spend_budget.py): the warnings of the commands that
touch a fleet, the monthly budget of the create verbs, and enforcement by `vm fleet reap` and the watchdog
(`enforce_budget`).

Each fleet is warned about at most once per Client (one `vm` command). A warning never fails a command: a store
that cannot be read costs only the warning, said as such. Nothing here calls a cloud but enforcement.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import BudgetError, NotFound, VmError
from ..model import Offer

if TYPE_CHECKING:
    from ..fleet.budget_enforce import BudgetTarget, Enforced
    from ..fleet.create import FleetCreator, FleetSpec
    from ..fleet.reap import Outcome, Target
    from ..fleet.spend_budget import Standing
    from ..fleet.store import FleetRecord, FleetStore
    from ..spend.rules import BillingRule
    from .client import Client
    from .requests import FleetCreateRequest


def rules(client: Client) -> dict[str, BillingRule]:
    """The billing rule of each installed provider plugin (as `vm cost` costs by: api/spend.py)."""
    from .spend import billing_rules

    return billing_rules(client.session)


# ------------------------------------------------------------------------------------------- fleet create
def spec_fields(request: FleetCreateRequest) -> dict[str, Any]:
    """The FleetSpec fields of --budget and --on-budget; UsageError (exit 2) for a budget that is not a positive
    amount of USD or an on-budget other than stop and destroy."""
    from ..fleet.spend_budget import check_value, on_budget_of

    check_value(request.budget)
    return {"budget": request.budget, "on_budget": on_budget_of(request.on_budget)}


def plan_problem(client: Client, spec: FleetSpec, placements: list[Offer]) -> BudgetError | None:
    """What refuses a planned create for money: the plan's rate over its ttl above its budget, else this user's
    monthly budget reached (warned at WARN_AT). None: nothing."""
    from ..fleet.spend_budget import check_plan

    return check_plan(placements, spec.budget, spec.ttl) or monthly_problem(client)


def check_create(client: Client, creator: FleetCreator, spec: FleetSpec) -> None:
    """Before a fleet create records anything: raise the BudgetError (exit 6) of the user's monthly budget, or
    of a plan whose rate times its ttl is above its budget (the plan is the one the create would place now: the
    offers are read once, cached for the create)."""
    from ..fleet.cluster import Placement
    from ..fleet.spend_budget import check_plan

    check_monthly(client)
    if spec.budget is None or spec.ttl is None or spec.wait is not None:
        return
    if spec.placement is Placement.CLUSTER:
        from ..fleet.cluster_place import plan

        placements = plan(creator, spec).placements
    else:
        placements = creator.plan(spec)[0]
    refused = check_plan(placements, spec.budget, spec.ttl)
    if refused is not None:
        raise refused


# -------------------------------------------------------------------------------------- fleet warnings
def warn_fleet(client: Client, store: FleetStore, record: FleetRecord) -> None:
    """Warn (once per Client) when the fleet has spent WARN_AT of its budget or more."""
    from ..fleet.spend_budget import fleet_standing, fleet_warning

    if record.budget is None or record.name in client.budget_warned:
        return
    client.budget_warned.add(record.name)
    try:
        standing = fleet_standing(store, record, now=client.session.clock(), rules=rules(client))
    except VmError as exc:
        client.warn(f"the budget of fleet {record.name} could not be checked: {exc.message}")
        return
    if standing is not None and standing.warns:
        client.warn(fleet_warning(record, standing))
        if not standing.reached:
            _tell_warning(client, store, record, standing)


def _tell_warning(client: Client, store: FleetStore, record: FleetRecord, standing: Standing) -> None:
    """The fleet's budget_warning event (details spent, budget, fleet_id), once per fleet id: a command that finds
    one recorded tells none (two processes at once may both tell it: delivery is at least once anyway)."""
    from ..events.kinds import EventKind
    from ..events.model import Event
    from ..events.store import EventLog
    from ..events.verbs import tell

    if not isinstance(store, EventLog) or any(
            e.kind is EventKind.BUDGET_WARNING and e.details.get("fleet_id") == record.fleet_id
            for e in store.list_events(fleet=record.name)):
        return
    details = {"spent": round(standing.spent, 2), "budget": standing.budget, "fleet_id": record.fleet_id}
    tell(client.session, store, lambda actor: [Event(EventKind.BUDGET_WARNING, record.name, actor, details)],
         client.warn)


def warn_fleets(client: Client, store: FleetStore, records: list[FleetRecord]) -> None:
    """`warn_fleet` for each of `records` (`vm fleet list`)."""
    for record in records:
        warn_fleet(client, store, record)


def warn_member(client: Client, fleet: str | None) -> None:
    """`warn_fleet` for the fleet a VM shown by `vm get` belongs to (None: none)."""
    from ..fleet.location import existing_store

    if not fleet or fleet in client.budget_warned:
        return
    try:
        store = existing_store(client.session)
        record = store.get_fleet(fleet) if store is not None else None
    except VmError as exc:
        client.warn(f"the budget of fleet {fleet} could not be checked: {exc.message}")
        return
    if store is not None and record is not None:
        warn_fleet(client, store, record)


# ------------------------------------------------------------------------------------- monthly budget
def monthly(client: Client) -> Standing | None:
    """This user's spend this calendar month against the profile's monthly_budget (None: no such budget)."""
    from ..fleet.lease import user_at_host
    from ..fleet.location import open_store
    from ..fleet.spend_budget import user_standing

    budget = client.session.profile.monthly_budget
    if budget is None:
        return None
    store = open_store(client.session)
    return user_standing(store, user_at_host(), budget, now=client.session.clock(), rules=rules(client))


def monthly_problem(client: Client) -> BudgetError | None:
    """The refusal a create would meet from the monthly budget (None: none); warns at WARN_AT. For plans."""
    from ..fleet.lease import user_at_host
    from ..fleet.spend_budget import monthly_refusal, monthly_warning

    standing = monthly(client)
    if standing is None or not standing.warns:
        return None
    now, profile = client.session.clock(), client.session.profile.name
    if standing.reached:
        return monthly_refusal(user_at_host(), profile, standing, now)
    client.warn(monthly_warning(user_at_host(), profile, standing, now))
    return None


def check_monthly(client: Client) -> None:
    """Before a create (`vm create`, `vm fleet create`, a scale up): warn at WARN_AT of the user's monthly
    budget; raise its BudgetError (exit 6) at 100 %, before any create call."""
    refused = monthly_problem(client)
    if refused is not None:
        raise refused


# ---------------------------------------------------------------------------------------- enforcement
def resolve(client: Client, record: FleetRecord) -> Target | Outcome:
    """The fleet's store and providers in its own accounts (fleet/reap.py Target), else the Outcome of skipping
    it (or of it being gone). The fleet is not warned about: the caller acts on it."""
    from ..fleet import reap as reaping

    client.reset_profile()  # the previous fleet's profile must not carry over to this one
    client.budget_warned.add(record.name)
    try:
        store, current, providers = client.recorded_fleet(record.name)
    except NotFound:
        return reaping.gone(record)
    except VmError as exc:
        return reaping.skipped(record, exc.message)
    return reaping.target(record, store, current, providers, client.session.profile.name)


def due(client: Client, store: FleetStore, skip: set[str]) -> list[BudgetTarget | Outcome]:
    """Each fleet of `store` (but those named in `skip`) that reached its budget and may still bill, resolved:
    a BudgetTarget, or the Outcome of skipping it. Reads the store; connects each fleet's accounts."""
    from dataclasses import replace

    from ..fleet.budget_enforce import budget_target, reached
    from ..fleet.reap import BUDGET, Outcome

    fleets = [f for f in store.list_fleets() if f.name not in skip]
    found: list[BudgetTarget | Outcome] = []
    for record, standing in reached(store, fleets, store.members, now=client.session.clock(),
                                    rules=rules(client)):
        resolved = resolve(client, record)
        found.append(replace(resolved, cause=BUDGET) if isinstance(resolved, Outcome)
                     else budget_target(resolved, standing))
    return found


def enforce_one(client: Client, due_now: BudgetTarget, timeout: float, *, actor: str | None = None) -> Outcome:
    """Stop or destroy one fleet that reached its budget (fleet/spend_budget.py `enforce`), saying so first."""
    from ..fleet.budget_enforce import enforce
    from ..fleet.lease import user_at_host
    from ..fleet.store import OnBudget

    record = due_now.target.record
    verb = "stopping" if due_now.plan.action is OnBudget.STOP else "destroying"
    client.progress(f"fleet {record.name} {due_now.reason}: {verb} it")
    return enforce(due_now, actor=actor or f"{user_at_host()} (budget reached)", timeout=timeout,
                   progress=client.progress, warn=client.warn)


def enforce_all(client: Client, due_now: list[BudgetTarget], timeout: float) -> list[Outcome]:
    """Enforce each fleet of `due_now` (`vm fleet reap`), then tell the events of those it acted on to the
    webhooks of the profile the command was run with."""
    from ..events.verbs import tell
    from ..fleet.budget_enforce import Enforced
    from ..fleet.location import open_store

    done = [Enforced(d.standing, enforce_one(client, d, timeout)) for d in due_now]
    if done:
        client.reset_profile()
        tell(client.session, open_store(client.session), lambda actor: [e for d in done for e in d.events(actor)],
             client.warn)
    return [d.outcome for d in done]


def enforce_budget(client: Client, record: FleetRecord, *, timeout: float | None = None, dry_run: bool = False,
                   actor: str | None = None) -> Enforced | None:
    """Enforce one fleet's budget over a Client (as `vm fleet reap` does for every fleet): None when the fleet
    has no budget, has not reached it, is stopped already or has nothing that may bill; else what stopping or
    destroying it did (with `dry_run`, would do): its standing, the reap Outcome (cause BUDGET) and the events
    to tell (`events(actor)`). Acts through the fleet's own profile and accounts, under its lease; `actor` is who
    the fleet's message names (default user@host). Never raises a VmError: a fleet that cannot be acted on is
    an Outcome (skipped, left, gone)."""
    from dataclasses import replace

    from ..calls import DEFAULT_TIMEOUT
    from ..fleet.budget_enforce import Enforced, budget_target, preview, reached
    from ..fleet.location import open_store
    from ..fleet.reap import BUDGET, Outcome

    store = open_store(client.session)
    found = reached(store, [record], store.members, now=client.session.clock(), rules=rules(client))
    if not found:
        return None
    standing = found[0][1]
    resolved = resolve(client, record)
    if isinstance(resolved, Outcome):
        return Enforced(standing, replace(resolved, cause=BUDGET))
    target = budget_target(resolved, standing)
    if dry_run:
        return Enforced(standing, preview(target))
    return Enforced(standing, enforce_one(client, target, DEFAULT_TIMEOUT if timeout is None else timeout,
                                          actor=actor))


def confirmation(due_now: list[BudgetTarget]) -> list[str]:
    """The lines of reap's question for the fleets that reached their budget."""
    from ..fleet.store import OnBudget

    if not due_now:
        return []
    return ["These fleets reached their budget and will be stopped or destroyed:",
            *(f"  {d.target.record.name}  {d.standing.text()}  "
              f"{'stop' if d.plan.action is OnBudget.STOP else 'destroy'}  {d.target.live} VM(s)" for d in due_now)]
