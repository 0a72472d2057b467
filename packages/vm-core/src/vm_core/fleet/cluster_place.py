"""The engine rule of `--placement cluster`: the whole fleet in one place, or the whole fleet moves.

Places are tried in the order `cluster.cluster_groups` gives. In a place, every slot is created from its one
offer (with the same intent -> call -> record steps as any fleet create); transient failures are retried there.
When the place fails (a capacity, quota or other refusal rules it out, or a slot runs out of attempts) with
fewer than `min_count` VMs up, every VM the fleet has there is destroyed (fleet identity rules: only VMs that
carry the fleet's id) and all slots go to the next place. When no place is left the fleet fails, and the reason
says the largest fleet that fits where.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import CapacityError, VmError
from ..hints import Hint
from ..model import Instance, Offer
from .cluster import Fit, Group, cluster_groups, groups, largest_fits, no_place_text
from .steps import Step, StepKind
from .strategies import Blocked, FleetRequest

if TYPE_CHECKING:
    from .create import FleetCreator, FleetSpec
    from .offers import OfferSet


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


def plan(creator: FleetCreator, spec: FleetSpec) -> ClusterPlan:
    """Where a cluster fleet would go now (for --dry-run); changes nothing. Raises UsageError where `create`
    would."""
    return plan_for(spec, creator._gather(spec))


def plan_for(spec: FleetSpec, offers: OfferSet) -> ClusterPlan:
    """Where a cluster fleet would go with these offers (providers without offers are left out)."""
    request = spec.request(spec.count, offers.unterminable_reservations)
    blocked = Blocked(providers=frozenset(offers.problems))
    return ClusterPlan(request, cluster_groups(offers.offers, request, blocked, spec.min_count),
                       groups(offers.offers, request, blocked), offers, spec.min_count)


@dataclass
class ClusterPlacer:
    """Places a fleet's slots in one place at a time (see the module docstring); `failure` says why the
    fleet could not be placed, when it could not."""

    creator: FleetCreator
    spec: FleetSpec
    offers: OfferSet
    notes: list[str]
    seen: dict[tuple[str, str, str, str], int] = field(default_factory=dict)  # place -> VMs up before it failed
    failure: str = ""

    def place(self, blocked: Blocked) -> dict[int, Instance]:
        request = self.spec.request(self.spec.count, self.offers.unterminable_reservations)
        while not self.creator.stop.is_set():
            candidates = cluster_groups(self.offers.offers, request, blocked, self.spec.min_count)
            if not candidates:
                self.failure = no_place_text(request, self._fits(request), tried=True)
                self.notes.append(self.failure)
                return {}
            group = candidates[0]
            take = group.take(self.spec.count)
            share = "all" if take == self.spec.count else f"{take} of {self.spec.count}"
            self.creator.progress(f"cluster: {share} VM(s) in {group.where()}")
            refused = self._join_group(group)
            if refused:
                self.notes.append(refused)
                self.creator.progress(f"cluster: {refused}")
                blocked = blocked.with_offer(group.offer)
                continue
            running, blocked = self._fill(group, blocked)
            if self.creator.stop.is_set() or len(running) >= self.spec.min_count:
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
        from ..provider import SupportsPlacementGroups

        c, offer = self.creator, group.offer
        provider = c.providers.get(offer.provider)
        if not isinstance(provider, SupportsPlacementGroups) or not c.identity.fleet_id:
            return ""
        try:
            found = provider.placement_group(c.identity.labels(), offer.region, offer.shape)
        except VmError as exc:
            return f"{group.where()}: no placement group: {exc}"
        if found is not None:
            c.placement_groups[(offer.provider, offer.region, offer.shape)] = found
            c.progress(f"cluster: {offer.provider} {offer.region} placement group {found}")
        return ""

    def _fill(self, group: Group, blocked: Blocked) -> tuple[dict[int, Instance], Blocked]:
        """Create the slots in `group` until they all run, the place is ruled out, or a slot runs out of
        attempts. Returns the running VMs by slot and the scopes ruled out meanwhile."""
        from .create import MAX_ATTEMPTS_PER_SLOT, MAX_RETRY_BACKOFF, RETRY_BACKOFF

        c = self.creator
        pending = list(range(group.take(self.spec.count)))
        running: dict[int, Instance] = {}
        attempts: Counter[int] = Counter()
        idle_rounds = 0
        while pending and not c.stop.is_set() and not blocked.blocks(group.offer):
            results = c._run_batch(self.spec, [(slot, group.offer) for slot in pending])
            pending, progressed = [], False
            for result in results:
                attempts[result.slot] += 1
                if result.instance is not None:
                    running[result.slot], progressed = result.instance, True
                    continue
                self.notes.append(result.note)
                c.progress(Step(f"failed: {result.note}", slot=result.slot, kind=StepKind.FAILED))
                c._errors += [result.error] if result.error is not None else []
                blocked = blocked.merge(result.block) if result.block is not None else blocked
                if attempts[result.slot] >= MAX_ATTEMPTS_PER_SLOT:
                    return running, blocked  # this place keeps failing: the fleet moves on
                pending.append(result.slot)
            idle_rounds = 0 if progressed else idle_rounds + 1
            if pending and idle_rounds and not blocked.blocks(group.offer):
                c.stop.wait(min(RETRY_BACKOFF * 2 ** (idle_rounds - 1), MAX_RETRY_BACKOFF))
        return running, blocked

    def _abandon(self, group: Group, up: int) -> bool:
        """Destroy every VM the fleet has (they are all in `group`: earlier places were cleared the same way).
        False when one may still exist: the fleet then stops moving and is rolled back."""
        from .destroy import FleetDestroyer

        c = self.creator
        c.progress(f"cluster: {group.where()} cannot hold the fleet ({up} VM(s) came up): moving the whole fleet")
        record = c.store.get_fleet(self.spec.name)
        if record is None:
            self.failure = f"fleet {self.spec.name} was removed meanwhile; {group.where()} was not cleared"
            return False
        report = FleetDestroyer(c.store, c.providers, progress=c.progress,
                                timeout=c._cleanup_timeout).destroy_members(record)
        left = report.failures + [a.line() for a in report.released]
        if left:
            self.failure = f"could not clear {group.where()} to move the fleet: {'; '.join(left)}"
            self.notes.append(self.failure)
            return False
        return True

    def _fits(self, request: FleetRequest) -> list[Fit]:
        return largest_fits(self.offers.offers, request, self.seen)
