"""Progress of one slot of a fleet operation, as data.

The engine reports progress as lines of text (`progress(str)`). A line about one slot (its create sent, its VM
running, its attempt failed) is a `Step`: a str, printed as any line is, that also says which slot and what
happened to it, so that a display can count slots (`212/300 running, 40 creating, 48 retrying`) without reading
the text.
"""

from __future__ import annotations

import enum


class StepKind(enum.StrEnum):
    CREATING = "creating"  # a create of the slot was sent (its first attempt, or a retry)
    RUNNING = "running"  # the slot's VM runs
    FAILED = "failed"  # the slot's attempt failed; the slot may be placed again


class Step(str):
    """A progress line (the str) about slot `slot`: `kind` says what happened to it."""

    slot: int
    kind: StepKind

    def __new__(cls, text: str, *, slot: int, kind: StepKind) -> Step:
        step = super().__new__(cls, text)
        step.slot, step.kind = slot, kind
        return step
