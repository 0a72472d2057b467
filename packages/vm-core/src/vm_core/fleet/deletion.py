"""Deleting many members of one provider: few delete calls, one watcher, one outcome per member.

Delete calls go out in batches where the provider takes a list (`SupportsBatchDestroy`, at most its
`batch_destroy_limit` ids per call), else one `begin_destroy` per VM from a bounded pool whose workers return as
soon as the call is answered (no worker is held while a VM is being deleted). Completion is confirmed by the
provider's `follower.Follower` (one of its own per deletion), one read a round for all of them: a VM missing from
the read, or terminated, is gone. A read that fails with anything but Transient ends the wait for every VM still
followed (its member is reported failed, the VM may exist); a Transient one settles nothing.

A delete is idempotent, so one that fails transiently (5xx, rate limit, an answer lost after the cloud acted) is
sent again with backoff (retrying.py) before its member is reported failed; so is a delete whose operation ended
with a transient error while the VM still runs.

Each member's state is recorded in the store as `members.destroy` records one member's: DESTROYING before its
delete is sent, DESTROYED only once a read shows the VM gone, RELEASED when the cloud refuses to delete it
(Unsupported), and on any other error the member keeps a state that says the VM may exist (a re-run retries).
Records are batched: one transaction for all the members whose deletes go one per VM, one per batched call, and
one for those each read shows gone. Every record is written, and `finished` called, from the thread that calls
`run`; the follower's thread only reads and decides. A member whose VM the destroy's first listing no longer shows
is recorded gone without a call (`members.absent`).
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial

from ..errors import Transient, Unsupported, VmError
from ..model import Instance, InstanceState
from ..provider import Pending, Provider, SupportsBatchDestroy
from . import members as mem
from .follower import Follower
from .retrying import ATTEMPTS, retried, retried_answers
from .store import FleetStore, MemberRecord, MemberState

CALLS_IN_FLIGHT = 32  # per provider, delete calls sent at once where each VM needs its own call

_Sent = dict[str, Pending[None] | VmError]


@dataclass(frozen=True)
class _Verdict:
    """How a followed deletion ended: `error` is "" when the VM is gone."""

    error: str = ""


_GONE = _Verdict()
_ROUND = ""  # on the deletion's queue: the follower ended a round (no instance id is empty)


@dataclass
class _DeletionFollow:
    """One VM's deletion as the follower sees it (follower.Follow); `verdict` once it settled by a read."""

    settle: Callable[[InstanceState | None], _Verdict | None]
    verdict: _Verdict | None = None
    wants_instance: bool = False

    def shown(self, state: InstanceState | None, instance: Instance | None) -> bool:
        self.verdict = self.settle(state)
        return self.verdict is not None

    def read_failed(self, error: Exception) -> bool:
        if isinstance(error, Transient) or not isinstance(error, VmError):
            return False
        self.verdict = _Verdict(f"its deletion could not be confirmed: {error.message}")
        return True


@dataclass
class ProviderDeletion:
    """Deletes members of one provider, each recorded with an instance id; `finished` gets each member's outcome
    (called from this thread, once per member)."""

    store: FleetStore
    provider: Provider
    timeout: float
    finished: Callable[[mem.Outcome], None]
    listed: Mapping[str, Instance] | None = None  # the provider's listing just taken (None: it failed)
    _members: dict[str, MemberRecord] = field(default_factory=dict, init=False)  # followed: instance id -> member
    _pending: dict[str, Pending[None]] = field(default_factory=dict, init=False)
    _gone: list[str] = field(default_factory=list, init=False)  # shown gone by the last read, not yet recorded
    _resent: dict[str, int] = field(default_factory=dict, init=False)  # instance id -> deletes sent again

    def run(self, members: list[MemberRecord]) -> None:
        """Delete every member's VM and report each one's outcome through `finished`."""
        to_send: list[str] = []
        for member in members:
            known = self.listed.get(member.instance_id) if self.listed is not None else None
            if self.listed is not None and (known is None or known.state is InstanceState.TERMINATED):
                self.finished(mem.absent(self.store, member))  # the listing shows it is gone already
                continue
            self._members[member.instance_id] = member
            if known is not None and known.state is InstanceState.TERMINATING:  # its deletion runs already
                self._destroying([member.instance_id])
            else:
                to_send.append(member.instance_id)
        for instance_id, answer in self._send(to_send).items():
            if isinstance(answer, VmError):
                self._refused(instance_id, answer)
            else:
                self._pending[instance_id] = answer
        self._follow()

    def _send(self, ids: list[str]) -> _Sent:
        """Each id's answer to its delete call: a Pending, or the error that refused it."""
        if isinstance(self.provider, SupportsBatchDestroy):
            return self._send_batches(self.provider, ids)
        if not ids:
            return {}
        try:
            self._destroying(ids)
        except VmError as exc:  # not recorded: not sent
            return dict.fromkeys(ids, exc)
        with ThreadPoolExecutor(max_workers=min(len(ids), CALLS_IN_FLIGHT)) as pool:
            return dict(zip(ids, pool.map(self._begin_one, ids), strict=True))

    def _send_batches(self, provider: SupportsBatchDestroy, ids: list[str]) -> _Sent:
        sent: _Sent = {}
        limit = max(1, provider.batch_destroy_limit)
        for start in range(0, len(ids), limit):
            chunk = ids[start:start + limit]
            try:
                self._destroying(chunk)
            except VmError as exc:  # not recorded: not sent
                sent.update(dict.fromkeys(chunk, exc))
                continue
            # the contract says it answers per id; a provider that raises fails them all (retrying.py)
            sent.update(retried_answers(provider.begin_destroy_many, chunk))
        return sent

    def _destroying(self, instance_ids: list[str]) -> None:
        """Recorded (in one transaction) before their deletes are sent: from now on their VMs may be going."""
        self._record(instance_ids, state=MemberState.DESTROYING)

    def _record(self, instance_ids: list[str], **changes: object) -> list[MemberRecord]:
        """Record the same change of the followed members of `instance_ids`, one transaction per fleet."""
        by_fleet: dict[str, list[str]] = {}
        for instance_id in instance_ids:
            by_fleet.setdefault(self._members[instance_id].fleet, []).append(instance_id)
        for fleet, ids in by_fleet.items():
            members = [self._members[i] for i in ids]
            updated = self.store.update_members(fleet, [(m.slot, m.attempt, changes) for m in members])
            self._members.update(zip(ids, updated, strict=True))
        return [self._members[i] for i in instance_ids]

    def _begin_one(self, instance_id: str) -> Pending[None] | VmError:
        """One delete call, sent again while it fails transiently; its Pending or its last error."""
        try:
            return retried(lambda: self.provider.begin_destroy(instance_id))
        except VmError as exc:
            return exc

    def _resend(self, instance_id: str) -> _Verdict | None:
        """The delete's operation ended with a transient error and the VM is still there: send the delete again
        (at most ATTEMPTS times per VM); None while it is followed again, a verdict when it is refused."""
        self._resent[instance_id] = sent = self._resent.get(instance_id, 0) + 1
        if sent >= ATTEMPTS:
            return _Verdict("its deletion kept failing transiently")
        answer = self._begin_one(instance_id)
        if isinstance(answer, VmError):
            return _Verdict(answer.message)
        self._pending[instance_id] = answer
        return None

    def _refused(self, instance_id: str, error: VmError) -> None:
        member = self._members.pop(instance_id)
        if isinstance(error, Unsupported):
            member = mem.record(self.store, member, state=MemberState.RELEASED, error=error.message)
            self.finished(mem.Outcome(member, True, f"{member.name} ({member.provider}): released but still "
                                                    f"running: {error.message}", released=True))
        else:
            self._failed(member, error.message)

    def _failed(self, member: MemberRecord, message: str) -> None:
        member = mem.record(self.store, member, error=message)
        self.finished(mem.Outcome(member, False, message))

    def _follow(self) -> None:
        """Follow every VM whose delete was sent until each settles; record and report each from this thread."""
        settled: queue.SimpleQueue[str] = queue.SimpleQueue()
        follower = Follower(self.provider, after_round=lambda: settled.put(_ROUND), idle_backoff=1.0)
        follows = {i: _DeletionFollow(partial(self._settle, i)) for i in self._members}
        for instance_id, follow in follows.items():
            follower.follow(instance_id, follow, self.timeout, partial(_put, settled, instance_id))
        left = set(follows)
        while left:
            instance_id = settled.get()
            if instance_id == _ROUND:
                self._record_gone()
                continue
            left.discard(instance_id)
            self._settled(instance_id, follows[instance_id].verdict or _Verdict(
                f"its deletion has not finished after {self.timeout:g}s; it continues in the cloud "
                "(run the destroy again to follow it)"))
        self._record_gone()

    def _settle(self, instance_id: str, state: InstanceState | None) -> _Verdict | None:
        """The verdict once the read shows the VM gone or its deletion failed; None while it is being deleted."""
        if state is None or state is InstanceState.TERMINATED:
            return _GONE
        if state is InstanceState.TERMINATING:
            return None
        pending = self._pending.get(instance_id)  # still shown as it was: did the delete itself fail?
        if pending is None:
            return _Verdict(f"its deletion stopped: it is {state.value} again")
        try:
            if not pending.done():
                return None
        except Transient:  # the operation could not be read this time
            return None
        except VmError as exc:
            return _Verdict(exc.message)
        try:
            pending.wait(0)  # raises the error of a failed delete; else the next read shows it gone
        except Transient:
            return self._resend(instance_id)
        except VmError as exc:
            return _Verdict(exc.message)
        return None

    def _settled(self, instance_id: str, verdict: _Verdict) -> None:
        if verdict.error:
            self._failed(self._members.pop(instance_id), verdict.error)
        else:
            self._gone.append(instance_id)  # recorded with the others this read shows gone (_record_gone)

    def _record_gone(self) -> None:
        """Record every member the last read showed gone as DESTROYED, in one transaction, then report them."""
        gone, self._gone = self._gone, []
        if gone:
            for member in self._record(gone, state=MemberState.DESTROYED):
                del self._members[member.instance_id]
                self.finished(mem.Outcome(member, True))


def _put(settled: queue.SimpleQueue[str], instance_id: str, _by_read: bool) -> None:
    settled.put(instance_id)
