"""`vm fleet reconcile`: make the store match the clouds, touching only VMs that carry the fleet's id.

It looks at every recorded member that may exist and every stray (strays.py), then decides per slot: the first
VM of a wanted slot is kept (a stray kept is adopted), every other VM of the fleet is destroyed, recorded VMs
that are gone are marked missing, intents that left no VM are marked never created. Look-alikes are reported
and left alone. A dry run decides the same and changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from ..calls import DEFAULT_TIMEOUT
from ..model import Instance, InstanceState
from ..provider import Provider
from . import members as mem
from .destroy import identity_of, recorded_fleet, removed_meanwhile
from .inspect import FleetInspector, FleetView, recorded_running, running_message, settled_state
from .lease import lease
from .naming import Claim, FleetIdentity
from .report import Action, Verb
from .store import FleetRecord, FleetState, FleetStore, MemberRecord, MemberState
from .strays import Scan, record_stray, scan


@dataclass
class Candidate:
    """A VM the fleet may have: a recorded member (with its VM, if found) or a stray (member None)."""

    provider: str
    member: MemberRecord | None
    instance: Instance | None
    claim: Claim | None = None
    checked: bool = True

    @property
    def slot(self) -> int:
        if self.member is not None:
            return self.member.slot
        return self.claim.slot if self.claim is not None and self.claim.slot is not None else -1

    @property
    def name(self) -> str:
        return self.member.name if self.member is not None else self.instance.name if self.instance else ""


@dataclass
class ReconcileReport:
    view: FleetView
    actions: list[Action] = field(default_factory=list)
    dry_run: bool = False
    kept: int = 0  # VMs of the fleet kept or adopted (that would be, in a dry run)


class FleetReconciler:
    def __init__(self, store: FleetStore, providers: Mapping[str, Provider], *,
                 progress: mem.Progress = lambda _: None, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.store, self.providers, self.progress, self.timeout = store, providers, progress, timeout

    def reconcile(self, name: str, *, dry_run: bool = False) -> ReconcileReport:
        """Decide and (unless `dry_run`) carry out what makes the store match the clouds; then the fresh view.
        Raises NotFound for an unknown fleet, UsageError while another process holds its lease."""
        with removed_meanwhile(name), lease(self.store, name, "fleet reconcile"):
            return self.settle(name, dry_run=dry_run)

    def settle(self, name: str, *, dry_run: bool = False) -> ReconcileReport:
        """`reconcile` for a caller that already holds the fleet's lease (e.g. repair)."""
        with removed_meanwhile(name):
            record = recorded_fleet(self.store, name)
            identity = identity_of(record)
            found = scan(identity, self.store.members(name), self.providers)
            decisions = decide(record, self._candidates(identity, found))
            actions = [action for action, _ in decisions]
            if not dry_run:
                actions = [self._carry_out(identity, a, c) for a, c in decisions]
                self._settle_record(record)
            kept = sum(1 for a in actions if a.verb in (Verb.KEPT, Verb.ADOPTED))
            actions = [a for a in actions if a.verb is not Verb.KEPT] + found.lookalikes
            for action in actions:
                self.progress(action.line(dry_run))
            view = FleetInspector(self.store, self.providers).view(name)
            view.problems = list(dict.fromkeys(found.problems + view.problems))
            return ReconcileReport(view, actions, dry_run, kept)

    def _candidates(self, identity: FleetIdentity, found: Scan) -> list[Candidate]:
        """Recorded members that may exist, each with its VM; a stray named like an intent without an id is
        that intent's VM; the other strays are candidates of their own."""
        strays = {(p, i.name): (i, c) for p, i, c in found.strays}
        candidates = []
        for member in (m for m in self.store.members(identity.fleet) if m.state.may_exist):
            listed = found.listed.get(member.provider)
            if listed is None or member.provider not in self.providers:
                candidates.append(Candidate(member.provider, member, None, checked=False))
            elif member.instance_id:
                candidates.append(Candidate(member.provider, member, listed.get(member.instance_id)))
            else:
                instance, claim = strays.pop((member.provider, member.name), (None, None))
                candidates.append(Candidate(member.provider, member, instance, claim))
        return candidates + [Candidate(p, None, i, c) for (p, _), (i, c) in strays.items()]

    def _carry_out(self, identity: FleetIdentity, action: Action, candidate: Candidate) -> Action:
        member = candidate.member
        if member is None and candidate.instance is not None and candidate.claim is not None:
            member, _ = record_stray(self.store, identity, candidate.provider, candidate.instance, candidate.claim)
        if member is None:
            return action
        if action.verb in (Verb.KEPT, Verb.ADOPTED):
            mem.record(self.store, member, state=MemberState.RUNNING, instance_id=action.instance_id)
        elif action.verb is Verb.DESTROYED:
            done = mem.destroy(self.store, self.providers.get(member.provider), member, identity, self.timeout).action
            return replace(done, detail=action.detail) if done.verb is Verb.DESTROYED else done
        elif action.verb is Verb.MISSING:
            gone = MemberState.DESTROYED if member.state is MemberState.DESTROYING else MemberState.MISSING
            mem.record(self.store, member, state=gone, error="gone from the cloud")
        elif action.verb is Verb.NEVER_CREATED:
            mem.record(self.store, member, state=MemberState.FAILED, error=member.error or "never created")
        return action

    def _settle_record(self, record: FleetRecord) -> None:
        """Reconcile settles any fleet but one being destroyed, a stopped one (its VMs stay stopped until `vm
        fleet start`) and one waiting for capacity (it never rolls back, so a fleet below its minimum is
        degraded, and failed only when nothing runs)."""
        running = recorded_running(self.store.members(record.name))
        state = record.state if record.state in _KEPT_STATES else settled_state(record.count, running)
        self.store.update_fleet(record.name, state=state, message=running_message(record, running))


_KEPT_STATES = frozenset({FleetState.DESTROYING, FleetState.STOPPED, FleetState.WAITING})


def decide(record: FleetRecord, candidates: list[Candidate]) -> list[tuple[Action, Candidate]]:
    """Pure: what to do with each candidate. One VM per slot is kept (recorded ones before strays), for at most
    `count` slots, lowest first (slots need not be contiguous: scale and repair number new slots after
    the highest); every other VM that exists is destroyed; an unchecked candidate keeps its record, and nothing
    else of its slot is destroyed then (a re-run decides)."""
    wanted = record.state not in (FleetState.FAILED, FleetState.DESTROYING, FleetState.ROLLING_BACK)
    unchecked = {c.slot for c in candidates if not c.checked}
    kept: set[int] = {c.slot for c in candidates if not c.checked and c.member is not None
                      and c.member.state is MemberState.RUNNING}
    decisions = []
    for c in sorted(candidates, key=lambda c: (c.slot, c.member is None, c.member is not None
                                               and c.member.state is not MemberState.RUNNING)):
        if not c.checked:
            decisions.append((Action(Verb.UNCHECKED, c.provider, c.name, _id(c), "provider not reachable"), c))
        elif c.instance is None:
            verb = Verb.MISSING if c.member is not None and c.member.instance_id else Verb.NEVER_CREATED
            decisions.append((Action(verb, c.provider, c.name, _id(c)), c))
        elif c.instance.state is InstanceState.PREEMPTED and c.slot not in unchecked:
            decisions.append((Action(Verb.DESTROYED, c.provider, c.name, c.instance.id, "preempted"), c))
        elif wanted and c.slot not in kept and c.slot >= 0 and len(kept) < record.count:
            kept.add(c.slot)
            verb = Verb.KEPT if c.member is not None and c.member.instance_id else Verb.ADOPTED
            decisions.append((Action(verb, c.provider, c.name, c.instance.id), c))
        elif c.slot not in unchecked:
            decisions.append((Action(Verb.DESTROYED, c.provider, c.name, c.instance.id, "not needed"), c))
    return decisions


def _id(candidate: Candidate) -> str:
    if candidate.instance is not None:
        return candidate.instance.id
    return candidate.member.instance_id if candidate.member is not None else ""
