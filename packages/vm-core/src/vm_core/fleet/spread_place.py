"""The placement policy of a spread fleet: every slot placed by the strategy, each failure re-placed at once.

The strategy is asked for the slots still to place, their attempts start at once (attempts.py), and each result is
handled as soon as it arrives. A failed slot is placed again right away with the scope it ruled out blocked (after
a backoff when it ruled nothing out: only transient failures, so the retries of a flapping cloud are spaced); VMs
running or in flight are taken off their offers' capacity and count towards the budget cap. A strategy that fails
(StrategyError) stops the placing: the creates in flight are followed to their end (recorded running, or cleaned
up), then its error is raised.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field, replace

from ..errors import StrategyError
from ..hints import phrase
from ..model import Instance, Offer
from .attempts import MAX_ATTEMPTS_PER_SLOT, WAKE_INTERVAL, Attempt, Attempts, retry_delay
from .budget import check_budget
from .offers import OfferSet
from .spec import FleetSpec
from .spot import Choices, place_priced, slot_choices
from .steps import Step, StepKind
from .strategies import Blocked, Strategy, offer_key

_Key = tuple[str, str, str, str]


@dataclass
class SpreadPlacer:
    """One placement of slots over `attempts` (see the module docstring). Blocking; `notes` gets a line per
    failure."""

    attempts: Attempts
    spec: FleetSpec
    offers: OfferSet
    strategy: Strategy
    blocked: Blocked
    notes: list[str]
    running: dict[int, Instance] = field(default_factory=dict)
    in_flight: dict[int, Offer] = field(default_factory=dict)
    used: Counter[_Key] = field(default_factory=Counter)  # VMs running or in flight, per offer
    ready: list[int] = field(default_factory=list)  # slots to place now
    later: list[tuple[float, int]] = field(default_factory=list)  # (monotonic time, slot): after a backoff
    idle: int = 0  # failures in a row that ruled nothing out
    halted: bool = False  # no more placements (the budget cap, a failed strategy)
    failure: StrategyError | None = None  # the strategy's failure, raised once nothing is in flight
    changed: bool = True  # a result arrived since the strategy was last asked
    choices: dict[int, Choices] = field(default_factory=dict)  # each slot's kinds of offer, spot or not (spot.py)

    def run(self, slots: list[int]) -> dict[int, Instance]:
        """Place `slots`; the running VMs by slot. Once `stop` is set no create is sent any more, and the run
        ends as soon as no create call is in flight: VMs the clouds accepted and still boot are left booting
        (each recorded with its instance id), so an interrupted create ends within seconds of its last call.
        Raises the strategy's StrategyError once nothing is in flight."""
        stop = self.attempts.ctx.stop
        self.ready = list(slots)
        self.choices = slot_choices(self.spec, slots)
        while self.in_flight or ((self.ready or self.later) and not self.halted and not stop.is_set()):
            if self.attempts.abandon_if_booting(self.in_flight):
                break
            self._start_due()
            if not self.in_flight and not self.later and self.ready:
                break  # the strategy placed none of them and nothing in flight can change that
            self._handle(self.attempts.next_result(self._wait()))
        if self.failure is not None:
            raise self.failure
        if (self.ready or self.later) and not self.halted and not stop.is_set():
            self.notes.append(f"no offer left for {len(self.ready) + len(self.later)} VM(s) after failover")
        return self.running

    def _start_due(self) -> None:
        """Place the slots that are due, if placing is still allowed and anything changed since the strategy
        was last asked."""
        now = time.monotonic()
        due = [slot for when, slot in self.later if when <= now]
        self.later = [(when, slot) for when, slot in self.later if when > now]
        self.ready += due
        self.changed = self.changed or bool(due)
        if not self.ready or not self.changed or self.halted or self.attempts.ctx.stop.is_set():
            return
        self.changed = False
        try:
            chosen = self._choose()
        except StrategyError as exc:
            self.failure, self.halted = exc, True
            return
        placements = [offer for _, offer in chosen]
        committed = [i.price_per_hour for i in self.running.values()] + [o.price_per_hour
                                                                         for o in self.in_flight.values()]
        over = check_budget(placements, self.spec.max_price, committed=committed) if placements else None
        if over is not None:
            self.notes.append(phrase(f"failover of {len(self.ready) + len(self.later)} VM(s) stopped: ", over.message))
            self.attempts.ctx.progress(f"failed: {self.notes[-1]}")
            self.attempts.errors.append(over)
            self.halted = True
            return
        for slot, offer in chosen:
            self.in_flight[slot] = offer
            self.used[offer_key(offer)] += 1
            self.attempts.launch(slot, offer)
        self.ready = [slot for slot in self.ready if slot not in self.in_flight]

    def _choose(self) -> list[tuple[int, Offer]]:
        """The strategy's offer for each slot to place now it places (a spot fleet's slots over the offers of
        their kinds: spot.place_priced); raises its StrategyError."""
        unterminable = self.offers.unterminable_reservations
        offers = remaining(self.offers.offers, self.used)
        if not self.spec.spot:
            placed = self.strategy(offers, self.spec.request(len(self.ready), unterminable), self.blocked)
            return list(zip(self.ready, placed, strict=False))
        return place_priced(self.ready, self.choices, offers,
                            lambda kind, n: self.strategy(kind, self.spec.request(n, unterminable), self.blocked))

    def _wait(self) -> float:
        """How long to wait for the next result: until the next backoff ends, at most WAKE_INTERVAL."""
        if not self.later:
            return WAKE_INTERVAL
        return min(WAKE_INTERVAL, max(min(when for when, _ in self.later) - time.monotonic(), 0.0))

    def _handle(self, result: Attempt | None) -> None:
        if result is None:
            return
        self.changed = True
        offer = self.in_flight.pop(result.slot)
        if result.instance is not None:
            self.running[result.slot] = result.instance
            self.idle = 0
            return
        self.used[offer_key(offer)] -= 1
        self.notes.append(result.note)
        progress = self.attempts.ctx.progress
        if result.interrupted:  # never sent: said as it is, and not placed again
            progress(result.note)
            return
        progress(Step(f"failed: {result.note}", slot=result.slot, kind=StepKind.FAILED))
        self.attempts.errors += [result.error] if result.error is not None else []
        merged = self.blocked.merge(result.block) if result.block is not None else self.blocked
        ruled_out, self.blocked = merged != self.blocked, merged
        if self.attempts.made(result.slot) >= MAX_ATTEMPTS_PER_SLOT:
            return
        if ruled_out:
            self.idle = 0
            self.ready.append(result.slot)
        else:
            self.idle += 1
            self.later.append((time.monotonic() + retry_delay(self.idle), result.slot))


def remaining(offers: list[Offer], used: Counter[_Key]) -> list[Offer]:
    """The offers with the VMs this fleet already placed on them taken off their stated capacity."""
    adjusted = []
    for offer in offers:
        taken = used.get(offer_key(offer), 0)
        if taken and offer.capacity is not None:
            left = max(offer.capacity - taken, 0)
            offer = replace(offer, capacity=left, available=offer.available and left > 0)
        adjusted.append(offer)
    return adjusted
