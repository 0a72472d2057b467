"""The members of a maintained fleet that no longer count: found stopped or failed in their cloud although the
fleet is not stopped. A preempted Nebius VM looks like that (its API shows a preempted VM as STOPPED; Lambda's
says `preempted`, which reconcile already destroys), as does a VM stopped outside `vm fleet stop`, or one the cloud
failed. The watchdog deletes each such VM exactly as a fleet destroy deletes a member (fleet/members.py: only a
VM carrying the fleet's id; the result recorded), so that the repair that follows places a replacement for it.
A maintained fleet is kept running: stop it as a whole (`vm fleet stop`), or turn maintain off, to keep a VM
stopped (docs/watchdog.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..fleet.store import MemberState
from ..model import InstanceState

if TYPE_CHECKING:
    from ..fleet.inspect import MemberView
    from ..fleet.report import Action
    from ..fleet.store import FleetRecord
    from .duty import DutyContext

LOST = frozenset({InstanceState.STOPPED, InstanceState.ERROR, InstanceState.PREEMPTED})


def retire_lost(context: DutyContext, fleet: FleetRecord) -> list[tuple[MemberView, Action]]:
    """Delete the VMs of the fleet's running members that are stopped or failed in their cloud; each with what
    was done (Verb.DESTROYED once the cloud confirmed; otherwise a re-run retries, and the repair does not
    count the member as missing)."""
    from ..fleet import members as mem
    from ..fleet.destroy import identity_of
    from ..fleet.inspect import FleetInspector

    view = FleetInspector(context.store, context.providers).view(fleet.name)
    lost = [v for v in view.members if v.checked and v.instance is not None and v.instance.state in LOST
            and v.member.state is MemberState.RUNNING]
    done = []
    for seen in lost:
        assert seen.instance is not None
        context.progress(f"{seen.member.provider}: {seen.member.name} ({seen.instance.id}) is "
                         f"{seen.instance.state.value} in its cloud: replacing it")
        outcome = mem.destroy(context.store, context.providers.get(seen.member.provider), seen.member,
                              identity_of(fleet), context.timeout)
        context.progress(outcome.action.line())
        done.append((seen, outcome.action))
    return done
