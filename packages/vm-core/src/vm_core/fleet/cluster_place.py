"""The engine rule of `--placement cluster`: the whole fleet in one place, or the whole fleet moves.

Places are tried in the order `cluster.cluster_groups` gives. In a place, every slot is created from its one
offer (with the same intent -> call -> record steps as any fleet create); transient failures are retried there.
When the place fails (a capacity, quota or other refusal rules it out, or a slot runs out of attempts) with
fewer than `min_count` VMs up, every VM the fleet has there is destroyed (fleet identity rules: only VMs that
carry the fleet's id) and all slots go to the next place. When no place is left the fleet fails, and the reason
says the largest fleet that fits where.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol

from ..errors import CapacityError, VmError
from ..hints import Hint
from ..model import Instance, Offer
from ..provider import SupportsPlacementGroups
from .attempts import MAX_ATTEMPTS_PER_SLOT, WAKE_INTERVAL, Attempt, Attempts, retry_delay
from .cluster import Fit, Group, cluster_groups, groups, largest_fits, no_place_text
from .destroy import FleetDestroyer
from .offers import OfferSet
from .spec import FleetSpec
from .steps import Step, StepKind
from .strategies import Blocked, FleetRequest


@dataclass
class ClusterPlan:
    """A dry run's answer: the places to try in order (the first is chosen), and every place considered."""

    request: FleetRequest
    candidates: list[Group]
    considered: list[Group]
    offers: OfferSet
    min_count: int

    @property
    def chosen(self) -> Group | None:
        return self.candidates[0] if self.candidates else None

    @property
    def placements(self) -> list[Offer]:
        """One offer per slot: every slot in the chosen place."""
        return [] if self.chosen is None else [self.chosen.offer] * self.chosen.take(self.request.count)

    def failure(self) -> CapacityError | None:
        """Exit 6 with the largest fleet that fits where, when no single place can hold the fleet."""
        if self.candidates:
            return None
        text = no_place_text(self.request, largest_fits(self.offers.offers, self.request))
        size = f"{self.request.gpu}:{self.request.gpu_count}"
        return CapacityError(text, suggestion=Hint.run("offers", "--gpu", size))


class _Gathers(Protocol):
    def gather(self, spec: FleetSpec) -> OfferSet: ...


def plan(creator: _Gathers, spec: FleetSpec) -> ClusterPlan:
    """Where a cluster fleet would go now (for --dry-run), given a FleetCreator; changes nothing. Raises
    UsageError where `create` would."""
    return plan_for(spec, creator.gather(spec))


def plan_for(spec: FleetSpec, offers: OfferSet) -> ClusterPlan:
    """Where a cluster fleet would go with these offers (providers without offers are left out)."""
    request = spec.request(spec.count, offers.unterminable_reservations)
    blocked = Blocked(providers=frozenset(offers.problems))
    return ClusterPlan(request, cluster_groups(offers.offers, request, blocked, spec.min_count),
                       groups(offers.offers, request, blocked), offers, spec.min_count)


@dataclass
class ClusterPlacer:
    """Places a fleet's slots in one place at a time over `attempts` (see the module docstring); `failure` says
    why the fleet could not be placed, when it could not."""

    attempts: Attempts
    spec: FleetSpec
    offers: OfferSet
    notes: list[str]
    seen: dict[tuple[str, str, str, str], int] = field(default_factory=dict)  # place -> VMs up before it failed
    failure: str = ""

    def place(self, blocked: Blocked) -> dict[int, Instance]:
        """The running VMs by slot: at least `min_count` in one place, or none (`failure` says why)."""
        ctx = self.attempts.ctx
        request = self.spec.request(self.spec.count, self.offers.unterminable_reservations)
        while not ctx.stop.is_set():
            candidates = cluster_groups(self.offers.offers, request, blocked, self.spec.min_count)
            if not candidates:
                self.failure = no_place_text(request, self._fits(request), tried=True)
                self.notes.append(self.failure)
                return {}
            group = candidates[0]
            take = group.take(self.spec.count)
            share = "all" if take == self.spec.count else f"{take} of {self.spec.count}"
            ctx.progress(f"cluster: {share} VM(s) in {group.where()}")
            refused = self._join_group(group)
            if refused:
                self.notes.append(refused)
                ctx.progress(f"cluster: {refused}")
                blocked = blocked.with_offer(group.offer)
                continue
            running, blocked = _Fill(self.attempts, group, blocked, self.notes).run(take)
            if ctx.stop.is_set() or len(running) >= self.spec.min_count:
                return running
            self.seen[group.key] = len(running)
            blocked = blocked.with_offer(group.offer)
            if not self._abandon(group, len(running)):
                return {}
        return {}

    def _join_group(self, group: Group) -> str:
        """Where the provider holds cluster VMs together (`SupportsPlacementGroups`: a Nebius GPU cluster), make or
        reuse the fleet's group in this place, so every slot created here joins it. A fleet without an id gets
        none: its group could not be told from another fleet's. Why the place cannot be used when the provider
        refuses the group ('' otherwise): the fleet then moves on, as after any refusal."""
        ctx, offer = self.attempts.ctx, group.offer
        provider = ctx.providers.get(offer.provider)
        if not isinstance(provider, SupportsPlacementGroups) or not ctx.identity.fleet_id:
            return ""
        try:
            found = provider.placement_group(ctx.identity.labels(), offer.region, offer.shape)
        except VmError as exc:
            return f"{group.where()}: no placement group: {exc}"
        if found is not None:
            self.attempts.placement_groups[(offer.provider, offer.region, offer.shape)] = found
            ctx.progress(f"cluster: {offer.provider} {offer.region} placement group {found}")
        return ""

    def _abandon(self, group: Group, up: int) -> bool:
        """Destroy every VM the fleet has (they are all in `group`: earlier places were cleared the same way).
        False when one may still exist: the fleet then stops moving and is rolled back."""
        ctx = self.attempts.ctx
        ctx.progress(f"cluster: {group.where()} cannot hold the fleet ({up} VM(s) came up): moving the whole fleet")
        record = ctx.store.get_fleet(self.spec.name)
        if record is None:
            self.failure = f"fleet {self.spec.name} was removed meanwhile; {group.where()} was not cleared"
            return False
        report = FleetDestroyer(ctx.store, ctx.providers, progress=ctx.progress,
                                timeout=ctx.cleanup_timeout).destroy_members(record)
        left = report.failures + [a.line() for a in report.released]
        if left:
            self.failure = f"could not clear {group.where()} to move the fleet: {'; '.join(left)}"
            self.notes.append(self.failure)
            return False
        return True

    def _fits(self, request: FleetRequest) -> list[Fit]:
        return largest_fits(self.offers.offers, request, self.seen)


@dataclass
class _Fill:
    """Creating the slots of one place from its one offer: each failure is handled as soon as its result
    arrives and the slot is tried again there (after a backoff when it ruled nothing out), until every slot runs,
    the place is ruled out, or a slot runs out of attempts there. Then no slot is tried again and the attempts in
    flight are followed to their end, so the place is settled when `run` returns."""

    attempts: Attempts
    group: Group
    blocked: Blocked
    notes: list[str]
    running: dict[int, Instance] = field(default_factory=dict)
    in_flight: set[int] = field(default_factory=set)
    later: list[tuple[float, int]] = field(default_factory=list)  # (monotonic time, slot): after a backoff
    tries: Counter[int] = field(default_factory=Counter)  # attempts per slot in this place
    idle: int = 0  # failures in a row that ruled nothing out
    done: bool = False  # the place failed: nothing more is tried here

    def run(self, take: int) -> tuple[dict[int, Instance], Blocked]:
        """The running VMs by slot (slots 0 .. take-1) and the scopes ruled out meanwhile. Blocking."""
        stop = self.attempts.ctx.stop
        self.later = [(0.0, slot) for slot in range(take)]
        while self.in_flight or (self.later and not self.done and not stop.is_set()):
            if self.attempts.abandon_if_booting(self.in_flight):
                break
            self._start_due()
            self._handle(self.attempts.next_result(self._wait()))
        return self.running, self.blocked

    def _start_due(self) -> None:
        if self.done or self.attempts.ctx.stop.is_set():
            return
        now = time.monotonic()
        for when, slot in [item for item in self.later if item[0] <= now]:
            self.later.remove((when, slot))
            self.in_flight.add(slot)
            self.tries[slot] += 1
            self.attempts.launch(slot, self.group.offer)

    def _wait(self) -> float:
        if not self.later or self.done:
            return WAKE_INTERVAL
        return min(WAKE_INTERVAL, max(min(when for when, _ in self.later) - time.monotonic(), 0.0))

    def _handle(self, result: Attempt | None) -> None:
        if result is None:
            return
        self.in_flight.discard(result.slot)
        if result.instance is not None:
            self.running[result.slot], self.idle = result.instance, 0
            return
        ctx = self.attempts.ctx
        self.notes.append(result.note)
        if result.interrupted:
            ctx.progress(result.note)
            return
        ctx.progress(Step(f"failed: {result.note}", slot=result.slot, kind=StepKind.FAILED))
        self.attempts.errors += [result.error] if result.error is not None else []
        self.blocked = self.blocked.merge(result.block) if result.block is not None else self.blocked
        if self.blocked.blocks(self.group.offer) or self.tries[result.slot] >= MAX_ATTEMPTS_PER_SLOT:
            self.done, self.later = True, []  # this place is ruled out or keeps failing: the fleet moves on
            return
        self.idle += 1
        self.later.append((time.monotonic() + retry_delay(self.idle), result.slot))
