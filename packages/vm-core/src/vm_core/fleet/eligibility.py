"""The engine enforces the rules; a strategy only orders.

Whatever a strategy answers, `enforce` keeps only the placements the fleet may use: each names one of the
offers the engine passed (by `offer_key`; the engine's own offer is placed, so an answer cannot change a price,
region or capacity), the offer is eligible (`strategies.why_ineligible`: not blocked, available, the fleet's
GPU and size, its region and providers, its reservation rules, no reservation the cloud cannot delete unless
allowed), no offer is used more often than its known capacity, and no more than `request.count` VMs are placed.
The rest is dropped, and the reasons are reported. An answer that is not a list of offers, or a strategy that
raises, is a `StrategyError` naming the strategy. The engine wraps every strategy it is given (`enforced`), so
third-party strategies from the entry-point group `vm_core.strategies` never place a VM where the fleet may not.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..errors import StrategyError
from ..hints import joined, phrase
from ..model import Offer
from .strategies import Blocked, FleetRequest, Strategy, effective, offer_key, why_ineligible

SHOWN_PLACES = 2  # places named per reason in a note about dropped placements


@dataclass(frozen=True, slots=True)
class Dropped:
    """A placement the engine left out: the offer the strategy answered, and why."""

    placement: Offer
    reason: str

    def where(self) -> str:
        o = self.placement
        reserved = f" reservation {o.reservation_id}" if o.reserved else ""
        return f"{o.provider} {o.region} {o.shape}{reserved}"


@dataclass(frozen=True, slots=True)
class Checked:
    """A strategy's answer after the engine's rules: what is placed, in the strategy's order, and what is not."""

    kept: list[Offer]
    dropped: list[Dropped] = field(default_factory=list)
    corrected: int = 0  # kept placements whose details (e.g. the price) differed from the engine's offer

    def note(self, strategy: str) -> str | None:
        """One line naming the strategy and what was left out (None when the answer was kept as it was); Words
        when a reason names a setting."""
        if not self.dropped and not self.corrected:
            return None
        parts = []
        if self.dropped:
            places: dict[str, Counter[str]] = {}
            for d in self.dropped:
                places.setdefault(d.reason, Counter())[d.where()] += 1
            shown = joined("; ", [phrase(reason, f": {sum(where.values())} ({_some(where)})")
                                  for reason, where in places.items()])
            parts.append(phrase(f"left out {len(self.dropped)} placement(s) the fleet may not use: ", shown))
        if self.corrected:
            parts.append(f"{self.corrected} placement(s) differed from the offer they name: the offer is used as "
                         "listed")
        return phrase(f"strategy {strategy!r}: ", joined("; ", parts))


def _some(places: Counter[str]) -> str:
    """The places most often named, up to SHOWN_PLACES of them."""
    shown = ", ".join(where for where, _ in places.most_common(SHOWN_PLACES))
    return shown + (f" and {len(places) - SHOWN_PLACES} more" if len(places) > SHOWN_PLACES else "")


def enforce(answer: object, offers: Sequence[Offer], request: FleetRequest, blocked: Blocked, *,
            strategy: str) -> Checked:
    """Keep from `answer` (what strategy `strategy` returned for `offers`, `request`, `blocked`) the placements
    the fleet may use (see the module docstring). Pure. Raises StrategyError when `answer` is not a list (or
    tuple) of Offer."""
    items = _offers_of(answer, strategy)
    rules = effective(offers, request)
    listed: dict[tuple[str, str, str, str], list[int]] = {}
    for position, offer in enumerate(offers):
        listed.setdefault(offer_key(offer), []).append(position)
    used: Counter[int] = Counter()  # VMs of this answer per offer passed (by position)
    kept: list[Offer] = []
    dropped: list[Dropped] = []
    corrected = 0
    for item in items:
        index = _match(item, offers, listed.get(offer_key(item), []))
        reason = "not offered" if index is None else _refusal(offers[index], rules, blocked, used[index], len(kept))
        if index is None or reason is not None:
            dropped.append(Dropped(item, reason or "not offered"))
            continue
        offer = offers[index]
        corrected += item != offer
        used[index] += 1
        kept.append(offer)
    return Checked(kept, dropped, corrected)


def _match(item: Offer, offers: Sequence[Offer], candidates: list[int]) -> int | None:
    """The position of the offer passed that `item` names: an equal one, else the first with its key."""
    return next((i for i in candidates if offers[i] == item), candidates[0] if candidates else None)


def _offers_of(answer: object, strategy: str) -> list[Offer]:
    if not isinstance(answer, list | tuple):
        raise StrategyError(f"strategy {strategy!r} is broken: it answered a {type(answer).__name__}, not a list "
                            "of offers")
    wrong = [type(item).__name__ for item in answer if not isinstance(item, Offer)]
    if wrong:
        raise StrategyError(f"strategy {strategy!r} is broken: it answered {len(wrong)} item(s) that are not offers "
                            f"({', '.join(sorted(set(wrong)))})")
    return list(answer)


def _refusal(offer: Offer, request: FleetRequest, blocked: Blocked, uses: int, placed: int) -> str | None:
    """Why one more VM may not go on `offer` (None: it may); `uses`: VMs of this answer on it so far, `placed`:
    VMs of this answer kept so far."""
    if (why := why_ineligible(offer, request, blocked)) is not None:
        return why
    if offer.capacity is not None and uses >= offer.capacity:
        return f"room for {offer.capacity} VM(s) only"
    if placed >= request.count:
        return f"more than the {request.count} VM(s) asked for"
    return None


@dataclass
class Enforced:
    """`inner` as the engine calls it: its answer goes through `enforce`; a note per distinct drop goes to
    `on_drop`. A strategy that raises is a StrategyError naming it (KeyboardInterrupt and the like pass)."""

    inner: Strategy
    name: str
    on_drop: Callable[[str], None] = lambda _: None
    _said: set[str] = field(default_factory=set)

    def __call__(self, offers: Sequence[Offer], request: FleetRequest, blocked: Blocked) -> list[Offer]:
        offers = list(offers)  # the strategy gets its own copy: changing it changes nothing here
        try:
            answer = self.inner(list(offers), request, blocked)
        except Exception as exc:  # noqa: BLE001 - any failure of third-party code is reported as its failure
            raise StrategyError(f"strategy {self.name!r} is broken: it raised {type(exc).__name__}: {exc}") from exc
        checked = enforce(answer, offers, request, blocked, strategy=self.name)
        note = checked.note(self.name)
        if note is not None and note not in self._said:
            self._said.add(note)
            self.on_drop(note)
        return checked.kept


def enforced(strategy: Strategy, *, name: str | None = None,
             on_drop: Callable[[str], None] | None = None) -> Enforced:
    """`strategy` with the engine's rules enforced on every answer. Wrapping an `Enforced` again keeps its
    inner strategy (rules are applied once) and its name unless `name` is given."""
    if isinstance(strategy, Enforced):
        return Enforced(strategy.inner, name or strategy.name, on_drop or strategy.on_drop)
    return Enforced(strategy, name or _name_of(strategy), on_drop or (lambda _: None))


def _name_of(strategy: Strategy) -> str:
    return str(getattr(strategy, "name", None) or getattr(strategy, "__name__", None) or type(strategy).__name__)
