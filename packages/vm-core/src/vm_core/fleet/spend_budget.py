"""Spend budgets: caps on money spent, where budget.py's `max_price` caps a rate ($/h).

Two budgets, both in USD, both counted by the spend ledger's accrued cost (spend/cost.py: list prices by each
cloud's billing rule, an estimate as docs/billing.md says):

* a fleet's `--budget` (FleetRecord.budget): what its VMs have cost since the fleet was created, VMs it no longer
  has included. A create with a `--ttl` is refused when its plan's rate times the ttl is above the budget
  (`check_plan`, before anything is recorded or created). At WARN_AT (80 %) every command that touches the fleet
  warns once. At 100 % the next process that enforces budgets (`vm fleet reap`, the watchdog) stops the fleet when
  its `on_budget` is `stop` and every member that may exist is on a cloud that can stop VMs, else destroys it
  (`enforcement`). A member its cloud can neither stop nor delete (a Lambda reserved instance) is said, with its
  rate, by the enforcing process.
* a user's `monthly_budget` (a profile setting): what the VMs this user created (the ledger's `created_by`,
  user@host) have cost since midnight UTC of the first day of the calendar month (as `vm cost`), in the profile's
  store. The create verbs (`vm create`, `vm fleet create`, a scale up) warn at WARN_AT and refuse at 100 %.

Reading a standing reads the store only, never a cloud. The other functions are pure; acting on a fleet that
reached its budget is budget_enforce.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ..errors import BudgetError, UsageError
from ..hints import Command, Hint, Setting, Words
from ..model import Offer
from .budget import price_total
from .store import FleetRecord, FleetState, MemberRecord, MemberState, OnBudget

if TYPE_CHECKING:
    from ..spend.ledger import Ledger
    from ..spend.rules import BillingRule

WARN_AT = 0.8  # the share of a budget from which commands warn


@dataclass(frozen=True, slots=True)
class Standing:
    """What was spent against a budget: `spent` and `budget` in USD, `rate_per_hour` what is billing now."""

    spent: float
    budget: float
    rate_per_hour: float = 0.0

    @property
    def share(self) -> float:
        return self.spent / self.budget

    @property
    def warns(self) -> bool:
        """At or above WARN_AT of the budget."""
        return self.spent >= WARN_AT * self.budget

    @property
    def reached(self) -> bool:
        """At or above the budget."""
        return self.spent >= self.budget

    def text(self) -> str:
        return f"${self.spent:.2f} of ${self.budget:.2f} ({self.share:.0%})"


def check_value(budget: float | None) -> None:
    """UsageError (exit 2) unless `budget` (the fleet's budget setting) is None or a positive, finite number of
    USD."""
    if budget is None:
        return
    if isinstance(budget, bool) or not isinstance(budget, int | float) or not math.isfinite(budget) or budget <= 0:
        raise UsageError(Words(Setting("budget"), f" must be a positive amount of USD, e.g. 500, not {budget!r}"))


def on_budget_of(text: str) -> OnBudget:
    """The OnBudget of the on_budget setting `text`; UsageError for anything but stop or destroy."""
    try:
        return OnBudget(text)
    except ValueError:
        raise UsageError(Words(Setting("on_budget"), f" must be stop or destroy, not {text!r}")) from None


# -------------------------------------------------------------------------------------------- plan time
def check_plan(placements: Sequence[Offer], budget: float | None, ttl: float | None) -> BudgetError | None:
    """None when the plan's rate for its whole `ttl` (seconds) fits the `budget` (USD), or either is None (a
    budget without ttl is enforced as it accrues); else the BudgetError (exit 6) to raise before anything is
    recorded or created. A price unknown makes the product unknown: refused too, since the budget could not be
    checked. Pure."""
    if budget is None or ttl is None:
        return None
    rate, complete = price_total(o.price_per_hour for o in placements)
    cost = rate * ttl / 3600
    hours = f"{ttl / 3600:g} h"
    capped = Setting("budget", f"{budget:.2f}", plain=f"the budget of ${budget:.2f}")
    if cost > budget:
        return BudgetError(Words(f"the plan costs {'at least ' if not complete else ''}${rate:.2f}/h, so "
                                 f"${cost:.2f} over its ttl of {hours}, above ", capped),
                           suggestion=Hint.say("raise {}, shorten {}, or see {} for cheaper places",
                                               Setting("budget"), Setting("ttl"), Command.of("offers")))
    if not complete:
        unknown = sum(1 for o in placements if o.price_per_hour is None)
        return BudgetError(Words(f"{unknown} VM(s) of the plan have no known price, so what it costs over its ttl "
                                 f"(at least ${cost:.2f}) cannot be checked against ", capped),
                           suggestion=Hint.say("leave out the providers that publish no price ({}), or drop {}",
                                               Setting("providers"), Setting("ttl")))
    return None


# ------------------------------------------------------------------------------------------- standings
def fleet_standing(store: Ledger, record: FleetRecord, *, now: float,
                   rules: Mapping[str, BillingRule]) -> Standing | None:
    """The fleet's spend against its budget (None: it has none): every ledger VM of this fleet (its name and
    id, so an earlier fleet of the same name counts nothing) since it was created, at `now`. Reads the store."""
    from ..spend.cost import costs_in

    if record.budget is None:
        return None
    costs = [c for c in costs_in(store, since=None, until=None, now=now, rules=rules, fleet=record.name)
             if not record.fleet_id or c.vm.fleet_id == record.fleet_id]
    return Standing(sum(c.accrued_usd for c in costs), record.budget, sum(c.rate_per_hour for c in costs))


def month_name(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).strftime("%B %Y")


def user_standing(store: Ledger, user: str, budget: float, *, now: float,
                  rules: Mapping[str, BillingRule]) -> Standing:
    """What the VMs `user` (user@host) created have cost this calendar month (from midnight UTC of its first day
    to `now`), single VMs and fleet members alike, against `budget`. Reads the store."""
    from ..spend.cost import costs_in
    from ..spend.report import month_start

    costs = [c for c in costs_in(store, since=month_start(now), until=now, now=now, rules=rules)
             if c.vm.created_by == user]
    return Standing(sum(c.accrued_usd for c in costs), budget, sum(c.rate_per_hour for c in costs))


# -------------------------------------------------------------------------------------------- the words
def fleet_warning(record: FleetRecord, standing: Standing) -> str:
    """The warning of a fleet at WARN_AT of its budget or beyond, naming what reaching it does."""
    head = f"fleet {record.name} has spent {standing.text()} of its budget"
    act = "stops" if record.on_budget is OnBudget.STOP else "destroys"
    if not standing.reached:
        return Words(f"{head}; at 100 % the next ", Command.of("fleet", "reap"), f" {act} it")
    return Words(f"{head}: reached; the next ", Command.of("fleet", "reap"), f" {act} it")


def monthly_warning(user: str, profile: str, standing: Standing, now: float) -> str:
    return (f"{user} has spent {standing.text()} of the monthly budget of profile {profile} in {month_name(now)}; "
            "at 100 % new VMs are refused")


def monthly_refusal(user: str, profile: str, standing: Standing, now: float) -> BudgetError:
    """The BudgetError (exit 6) of a create refused by the user's monthly budget: nothing was created."""
    return BudgetError(f"{user} has spent {standing.text()} of the monthly budget of profile {profile} in "
                       f"{month_name(now)}: no new VM is created until next month",
                       suggestion=Hint.say(f"raise monthly_budget in [profiles.{profile}] of config.toml, or "
                                           "destroy what is no longer needed (see {})", Command.of("list")))


# ---------------------------------------------------------------------------------------- enforcement
@dataclass(frozen=True, slots=True)
class Enforcement:
    """What reaching the budget does to a fleet: `action`, and why it is a destroy when stop was asked."""

    action: OnBudget
    why: str = ""


def enforcement(record: FleetRecord, members: Iterable[MemberRecord],
                can_stop: Callable[[str], bool]) -> Enforcement:
    """STOP when the fleet's `on_budget` is stop and every member that may exist is on a provider that
    `can_stop`; else DESTROY (with why, when stop was asked). A fleet a destroy left (being destroyed, or with
    members their cloud refused to delete) is destroyed again, which says what still runs. Pure."""
    listed = list(members)
    if record.on_budget is OnBudget.DESTROY or record.state is FleetState.DESTROYING or any(
            m.state is MemberState.RELEASED for m in listed):
        return Enforcement(OnBudget.DESTROY)
    cannot = sorted({m.provider for m in listed if m.state.may_exist and not can_stop(m.provider)})
    if cannot:
        return Enforcement(OnBudget.DESTROY, f"{', '.join(cannot)} cannot stop VMs, so it is destroyed")
    return Enforcement(OnBudget.STOP)


def unkillable(names: Sequence[str], billing: float | None) -> str:
    """Why members were left running: their cloud refuses both stop and delete through its API."""
    rate = f"${billing:.2f}/h" if billing is not None else "their price (unknown)"
    return (f"{len(names)} VM(s) ({', '.join(names)}) can be neither stopped nor destroyed through their cloud's "
            f"API (a Lambda reservation): they keep billing {rate}; terminate them in the cloud's console")

