"""What the fleet layer does with one member VM: find it, wait for it, destroy it — recording each step.

Shared by create (rollback, failed attempts), destroy and reconcile. Every function records the member's new
state in the store *after* the cloud confirmed it, never before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import NotFound, Unsupported, VmError
from ..kit.polling import Backoff, poll_until
from ..model import Instance, InstanceState
from ..provider import Provider
from .naming import FleetIdentity
from .report import Action, Verb
from .retrying import retried
from .store import FleetStore, MemberRecord, MemberState

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Outcome:
    """How handling one member ended: `ok` False means the VM may still exist (re-run to retry). `message` says
    why, without naming the member (its Action names it)."""

    member: MemberRecord
    ok: bool
    message: str = ""
    released: bool = False  # the cloud refused to delete it: it keeps running, outside the fleet

    @property
    def action(self) -> Action:
        """What happened to the member's VM, as one reportable line."""
        m = self.member
        if not self.ok:
            return Action(Verb.FAILED, m.provider, m.name, m.instance_id, self.message)
        verb = {MemberState.RELEASED: Verb.RELEASED, MemberState.MISSING: Verb.MISSING,
                MemberState.FAILED: Verb.NEVER_CREATED}.get(m.state, Verb.DESTROYED)
        detail = m.error if verb in (Verb.RELEASED, Verb.NEVER_CREATED) else ""
        return Action(verb, m.provider, m.name, m.instance_id, detail)


def record(store: FleetStore, member: MemberRecord, **changes: object) -> MemberRecord:
    return store.update_member(member.fleet, member.slot, member.attempt, **changes)


def locate(provider: Provider, member: MemberRecord, identity: FleetIdentity) -> Instance | None:
    """The member's VM: by its recorded instance id, else by its name when the VM found under that name
    provably carries the fleet's id (never for a fleet without an id). None if there is no such VM."""
    if member.instance_id:
        try:
            instance = provider.get_instance(member.instance_id)
        except NotFound:
            return None
        return None if instance.state is InstanceState.TERMINATED else instance
    return find_claimed(provider, member.name, identity)


def find_claimed(provider: Provider, name: str, identity: FleetIdentity) -> Instance | None:
    """The live VM named `name` if it carries the fleet's id, else None (one lookup by name)."""
    if not identity.fleet_id:
        return None
    found = provider.find_instance(name)
    return found if found is not None and identity.claim(found) is not None else None


def wait_running(provider: Provider, instance_id: str, timeout: float) -> Instance:
    """Poll an instance found by lookup (no operation to wait on) until it runs; raises VmError otherwise."""
    def check() -> tuple[bool, Instance]:
        instance = provider.get_instance(instance_id)
        if instance.state.ended:
            raise VmError(f"instance {instance_id} is {instance.state.value}", provider=provider.name)
        return instance.state is InstanceState.RUNNING, instance

    return poll_until(check, timeout, Backoff(0.01, 2.0), on_timeout=lambda: VmError(
        f"instance {instance_id} did not reach running in {timeout:.0f}s", provider=provider.name))



def destroy(store: FleetStore, provider: Provider | None, member: MemberRecord, identity: FleetIdentity,
            timeout: float) -> Outcome:
    """Delete the member's VM if it exists and record the result. A member without an instance id is looked
    up by name and only a VM that carries the fleet's id is deleted.

    DESTROYED only after the cloud confirmed; RELEASED when the cloud refuses to delete it (it keeps running);
    FAILED ("never created") for an intent that has no VM. The lookup and the delete are safe to repeat, so each
    is sent again while it fails transiently (retrying.py). On any other error, or when the retries ran out, the
    member keeps a state that says the VM may exist, so a re-run retries it.
    """
    if provider is None:
        return Outcome(member, False, f"provider {member.provider} is not configured")
    if not member.instance_id and not identity.fleet_id:
        note = "not looked up: the fleet was recorded before fleet ids, so a name proves nothing"
        return Outcome(record(store, member, state=MemberState.FAILED, error=note), True)
    try:
        instance_id = member.instance_id or retried(lambda: _id_by_name(provider, member, identity))
        if instance_id is None:
            return absent(store, member)
        member = record(store, member, state=MemberState.DESTROYING, instance_id=instance_id)
        # idempotent: a VM already gone (or going) is a finished action
        retried(lambda: provider.begin_destroy(instance_id).wait(timeout))
    except Unsupported as exc:
        member = record(store, member, state=MemberState.RELEASED, error=exc.message)
        return Outcome(member, True, f"{member.name} ({member.provider}): released but still running: "
                                     f"{exc.message}", released=True)
    except VmError as exc:
        record(store, member, error=exc.message)
        return Outcome(member, False, exc.message)
    return Outcome(record(store, member, state=MemberState.DESTROYED), True)


def _id_by_name(provider: Provider, member: MemberRecord, identity: FleetIdentity) -> str | None:
    found = find_claimed(provider, member.name, identity)
    return found.id if found is not None else None


def absent(store: FleetStore, member: MemberRecord) -> Outcome:
    """Record a member whose VM does not exist: DESTROYED when its deletion was under way, MISSING when it was
    there before, FAILED ("never created") for an intent."""
    if member.instance_id and member.state is not MemberState.INTENT:
        final = MemberState.DESTROYED if member.state is MemberState.DESTROYING else MemberState.MISSING
    else:
        final = MemberState.FAILED
    note = "" if final is not MemberState.FAILED else (member.error or "never created")
    return Outcome(record(store, member, state=final, error=note), True)
