"""The aggregate progress line of a fleet create (cli/fleet_progress.py): counts from the engine's Steps only,
an ETA once a VM runs, per-VM lines only with --verbose, and every line unchanged off a terminal."""

from __future__ import annotations

from vm_core.cli.fleet_progress import FleetProgress, SlotCounts
from vm_core.fleet.steps import Step, StepKind


class Screen:
    """An Output that records what would be drawn."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.statuses: list[str] = []
        self.ended = False

    def progress(self, message: str) -> None:
        self.lines.append(message)

    def status(self, text: str) -> None:
        self.statuses.append(text)

    def end_status(self) -> None:
        self.ended = True


def step(slot: int, kind: StepKind) -> Step:
    return Step(f"slot {slot}: {kind}", slot=slot, kind=kind)


def test_counts_say_running_creating_retrying_and_waiting() -> None:
    counts = SlotCounts(5)
    for s in (step(0, StepKind.CREATING), step(1, StepKind.CREATING), step(2, StepKind.CREATING),
              step(0, StepKind.RUNNING), step(1, StepKind.FAILED), step(2, StepKind.FAILED),
              step(2, StepKind.CREATING), step(2, StepKind.RUNNING)):
        counts.add(s)
    assert (counts.running, counts.creating, counts.retrying, counts.waiting) == (2, 0, 1, 2)
    assert counts.line(60.0) == "2/5 running, 0 creating, 1 retrying, 2 waiting, ETA 1m30s"
    assert SlotCounts(3).line(10.0) == "0/3 running, 0 creating, 0 retrying, 3 waiting"  # no ETA before a VM runs


def test_on_a_terminal_steps_only_update_the_line_and_other_lines_are_printed() -> None:
    screen, now = Screen(), [0.0]
    shown = FleetProgress(screen, 2, terminal=True, clock=lambda: now[0])  # type: ignore[arg-type]
    shown("crusoe sells H100 only as H100:8")
    shown(step(0, StepKind.CREATING))
    now[0] = 0.01
    shown(step(1, StepKind.CREATING))  # within the redraw interval: counted, not drawn yet
    now[0] = 1.0
    shown(step(0, StepKind.RUNNING))
    shown(step(1, StepKind.RUNNING))
    shown.close()
    assert screen.lines == ["crusoe sells H100 only as H100:8"]
    assert screen.statuses[0] == "0/2 running, 1 creating, 0 retrying, 1 waiting"
    assert screen.statuses[-1] == "2/2 running, 0 creating, 0 retrying" and screen.ended


def test_verbose_prints_the_steps_too_and_off_a_terminal_nothing_changes() -> None:
    loud = Screen()
    verbose = FleetProgress(loud, 1, terminal=True, verbose=True)  # type: ignore[arg-type]
    verbose(step(0, StepKind.CREATING))
    verbose.close()
    assert loud.lines == ["slot 0: creating"] and loud.statuses
    piped = Screen()
    plain = FleetProgress(piped, 1, terminal=False)  # type: ignore[arg-type]
    plain(step(0, StepKind.CREATING))
    plain.close()
    assert piped.lines == ["slot 0: creating"] and piped.statuses == [] and not piped.ended
