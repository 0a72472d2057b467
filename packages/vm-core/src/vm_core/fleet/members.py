"""What the fleet layer does with one member VM: find it, wait for it, destroy it — recording each step.

Shared by create (rollback, failed attempts), destroy and reconcile. Every function records the member's new
state in the store *after* the cloud confirmed it, never before.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import NotFound, Unsupported, VmError
from ..model import Instance, InstanceState
from ..provider import Provider
from .store import FleetStore, MemberRecord, MemberState

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Outcome:
    """How handling one member ended: `ok` False means the VM may still exist (re-run to retry)."""

    member: MemberRecord
    ok: bool
    message: str = ""
    released: bool = False  # the cloud refused to delete it: it keeps running, outside the fleet


def record(store: FleetStore, member: MemberRecord, **changes: object) -> MemberRecord:
    return store.update_member(member.fleet, member.slot, member.attempt, **changes)


def locate(provider: Provider, member: MemberRecord) -> Instance | None:
    """The member's VM: by instance id when known, else by its deterministic name. None if it does not exist."""
    if member.instance_id:
        try:
            instance = provider.get_instance(member.instance_id)
        except NotFound:
            return None
        return None if instance.state is InstanceState.TERMINATED else instance
    return provider.find_instance(member.name)


def wait_running(provider: Provider, instance_id: str, timeout: float) -> Instance:
    """Poll an instance found by lookup (no operation to wait on) until it runs; raises VmError otherwise."""
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        instance = provider.get_instance(instance_id)
        if instance.state is InstanceState.RUNNING:
            return instance
        if instance.state in (InstanceState.ERROR, InstanceState.TERMINATED, InstanceState.TERMINATING):
            raise VmError(f"instance {instance_id} is {instance.state.value}", provider=provider.name)
        if time.monotonic() + delay > deadline:
            raise VmError(f"instance {instance_id} did not reach running in {timeout:.0f}s", provider=provider.name)
        time.sleep(delay)
        delay = min(delay * 2, 2.0)


def destroy(store: FleetStore, provider: Provider | None, member: MemberRecord, timeout: float) -> Outcome:
    """Delete the member's VM if it exists and record the result.

    DESTROYED only after the cloud confirmed; RELEASED when the cloud refuses to delete it (it keeps running);
    FAILED ("never created") for an intent that has no VM. On any other error the member keeps a state that
    says the VM may exist, so a re-run retries it.
    """
    if provider is None:
        return Outcome(member, False, f"{member.name}: provider {member.provider} is not configured")
    try:
        instance_id = member.instance_id or _id_by_name(provider, member)
        if instance_id is None:
            return _absent(store, member)
        member = record(store, member, state=MemberState.DESTROYING, instance_id=instance_id)
        provider.begin_destroy(instance_id).wait(timeout)  # idempotent: a VM already gone is a finished action
    except Unsupported as exc:
        member = record(store, member, state=MemberState.RELEASED, error=exc.message)
        return Outcome(member, True, f"{member.name} ({member.provider}): released but still running: "
                                     f"{exc.message}", released=True)
    except VmError as exc:
        record(store, member, error=exc.message)
        return Outcome(member, False, f"{member.name} ({member.provider}): {exc.message}")
    return Outcome(record(store, member, state=MemberState.DESTROYED), True)


def _id_by_name(provider: Provider, member: MemberRecord) -> str | None:
    found = provider.find_instance(member.name)
    return found.id if found is not None else None


def _absent(store: FleetStore, member: MemberRecord) -> Outcome:
    if member.instance_id and member.state is not MemberState.INTENT:
        final = MemberState.DESTROYED if member.state is MemberState.DESTROYING else MemberState.MISSING
    else:
        final = MemberState.FAILED
    note = "" if final is not MemberState.FAILED else (member.error or "never created")
    return Outcome(record(store, member, state=final, error=note), True)
