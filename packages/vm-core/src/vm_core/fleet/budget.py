"""Budgets: a fleet's cap on its total $/h (its `max_price`), checked against a plan before anything is created.

The rule: the plan's total is the sum of each placement's $/h plus what the fleet already pays (`committed`: the
$/h of the VMs it runs, for a plan that grows a fleet). Above the cap the plan is refused. A placement or a
committed VM whose price is unknown makes the total unknown: the plan is refused too, because a cap that cannot
be checked protects nothing; the message says how many prices are unknown and what the known part costs.

A placement on an offer whose capacity the cloud does not publish may fail and go to a dearer offer, so a total
that rests on one is a lower bound (`plan_total`): said so ("at least") in the plan and in a refusal. Under the
cap it is not refused: failover never places a VM above the cap (create.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..errors import BudgetError
from ..hints import Command, Hint, Setting, Words
from ..model import Offer


def price_total(prices: Iterable[float | None]) -> tuple[float, bool]:
    """The sum of the known prices (rounded to 4 places), and whether every price was known (else the sum is a
    lower bound)."""
    known = list(prices)
    return round(sum(p for p in known if p is not None), 4), all(p is not None for p in known)


def plan_total(placements: Sequence[Offer]) -> tuple[float, bool]:
    """What a plan costs per hour (the sum of its known prices), and whether that is exact: False (a lower bound)
    when a price is unknown or a placement rests on capacity the cloud does not publish."""
    total, complete = price_total(o.price_per_hour for o in placements)
    return total, complete and all(o.capacity is not None for o in placements)


def check_budget(placements: Sequence[Offer], cap: float | None, *,
                 committed: Sequence[float | None] = ()) -> BudgetError | None:
    """None when the plan fits under `cap` $/h (or there is no cap); else the BudgetError (exit 6) to raise,
    naming the total and the cap. Pure: reads nothing, changes nothing."""
    if cap is None:
        return None
    prices = [*committed, *(o.price_per_hour for o in placements)]
    total, complete = price_total(prices)
    exact = complete and plan_total(placements)[1]
    capped = Setting("max_price", f"{cap:.2f}", plain=f"of ${cap:.2f}/h")
    if total > cap:
        return BudgetError(Words(f"the plan costs {'at least ' if not exact else ''}${total:.2f}/h, above the cap ",
                                 capped), suggestion=Hint.say("raise {}, or see {} for cheaper places",
                                                              Setting("max_price"), Command.of("offers")))
    if not complete:
        unknown = sum(1 for p in prices if p is None)
        return BudgetError(Words(f"{unknown} VM(s) of the plan have no known price, so its total (at least "
                                 f"${total:.2f}/h) cannot be checked against the cap ", capped),
                           suggestion=Hint.say("leave out the providers that publish no price ({}), or drop {}",
                                               Setting("providers"), Setting("max_price")))
    return None
