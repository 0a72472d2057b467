"""What can happen to a fleet: the `kind` of an event (the events table, docs/events.md).

This module imports nothing of vm, so the config parser can check a webhook's `events = [...]` against it cheaply.
"""

from __future__ import annotations

import enum


class EventKind(enum.StrEnum):
    """One kind of event. The value is what the store, `vm events -o json` and a webhook body carry."""

    CREATED = "created"  # a fleet was created (whatever state it ended in: details.state)
    SCALED = "scaled"  # a fleet's requested count changed
    MEMBER_PREEMPTED = "member_preempted"  # a cloud took a (spot) member back
    REPLACED = "replaced"  # members that were missing were placed again (repair, the watchdog)
    STOPPED = "stopped"  # `vm fleet stop`, or a budget that stops
    STARTED = "started"  # `vm fleet start`
    REAPED = "reaped"  # a fleet whose TTL passed was destroyed
    BUDGET_WARNING = "budget_warning"  # a fleet's spend passed a warning share of its budget
    BUDGET_REACHED = "budget_reached"  # a fleet's spend reached its budget
    DESTROY_REFUSED = "destroy_refused"  # a cloud refused to delete a member through its API: it still runs
    LEASE_TAKEN_OVER = "lease_taken_over"  # a lapsed (or dead holder's) lease was taken over
    DESTROYED = "destroyed"  # a fleet was destroyed and forgotten
    DEGRADED = "degraded"  # a fleet has fewer VMs than requested


KIND_NAMES = tuple(kind.value for kind in EventKind)
