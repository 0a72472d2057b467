"""calls.py: concurrent fan-out, waiting with progress and deadlines, and what several failures add up to."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import pytest
from vm_core.calls import Accepted, Tracker, failure_error, fan_out, wait
from vm_core.cli.spelling import render
from vm_core.errors import CapacityError, NotFound, PartialFailure, Scope, Timeout, Transient, VmError
from vm_core.hints import Command, Hint
from vm_core.model import Instance, InstanceState


def test_fan_out_runs_every_key_at_once() -> None:
    barrier = threading.Barrier(4, timeout=30)  # only passes if all four run at the same time

    def task(key: int) -> int:
        barrier.wait()
        return key * 10

    assert [o.value for o in fan_out(task, [1, 2, 3, 4])] == [10, 20, 30, 40]


def test_fan_out_collects_errors_per_key() -> None:
    def task(key: str) -> str:
        if key == "gone":
            raise NotFound("no such VM")
        if key == "bug":
            raise KeyError("oops")
        return key

    ok, gone, bug = fan_out(task, ["ok", "gone", "bug"])
    assert (ok.value, ok.error) == ("ok", None)
    assert isinstance(gone.error, NotFound)
    assert type(bug.error) is VmError and "unexpected KeyError" in bug.error.message
    assert isinstance(bug.error.__cause__, KeyError)


def test_fan_out_prepares_each_key_in_the_calling_thread_before_its_thread_starts() -> None:
    """prepare(key) runs in the caller's thread, key after key, while the keys already started run; a key whose
    prepare fails has that error as its outcome and its fn is never called."""
    caller = threading.current_thread()
    events: list[tuple[str, str]] = []
    first_running = threading.Event()

    def prepare(key: str) -> None:
        assert threading.current_thread() is caller
        if key == "second":
            assert first_running.wait(timeout=30)  # the first key's thread already runs while this one prepares
        events.append(("prepare", key))
        if key == "refused":
            raise NotFound("not configured")
        if key == "bug":
            raise KeyError("oops")

    def task(key: str) -> str:
        assert ("prepare", key) in events
        if key == "first":
            first_running.set()
        events.append(("run", key))
        return key.upper()

    first, second, refused, bug = fan_out(task, ["first", "second", "refused", "bug"], prepare=prepare)
    assert (first.value, second.value) == ("FIRST", "SECOND")
    assert isinstance(refused.error, NotFound) and refused.value is None
    assert type(bug.error) is VmError and isinstance(bug.error.__cause__, KeyError)
    assert [key for kind, key in events if kind == "prepare"] == ["first", "second", "refused", "bug"]
    assert sorted(key for kind, key in events if kind == "run") == ["first", "second"]


def test_one_failure_of_one_target_is_that_error() -> None:
    error = NotFound("x")
    assert failure_error([("a", error)], 1, "VMs") is error


def test_some_of_several_failing_is_a_partial_failure() -> None:
    error = failure_error([("a", NotFound("x"))], 3, "VMs")
    assert isinstance(error, PartialFailure) and error.message == "1 of 3 VMs failed" and error.exit_code == 7


def test_all_failing_for_one_reason_keeps_its_code_and_scope() -> None:
    errors = [(n, CapacityError("full", scope=Scope.ZONE, region="z", provider="p")) for n in "ab"]
    error = failure_error(errors, 2, "VMs")
    assert isinstance(error, CapacityError) and error.exit_code == 6
    assert (error.message, error.scope, error.region) == ("2 of 2 VMs failed: full", Scope.ZONE, "z")
    assert errors[0][1].message == "full"  # the original is untouched


def test_all_failing_for_different_reasons_is_a_partial_failure() -> None:
    error = failure_error([("a", NotFound("x")), ("b", CapacityError("y"))], 2, "VMs")
    assert isinstance(error, PartialFailure) and error.message == "2 of 2 VMs failed"


@dataclass
class FakePending:
    """Done after `polls` calls to done(); raises Transient on the first poll."""

    polls: int
    resource_id: str = "vm-1"
    id: str = "op-1"
    calls: int = 0

    def done(self) -> bool:
        self.calls += 1
        if self.calls == 1:
            raise Transient("blip")
        return self.calls > self.polls

    def wait(self, timeout: float) -> Instance:
        return instance(InstanceState.RUNNING)


@dataclass
class FakeProvider:
    states: list[InstanceState]
    name: str = "fake"
    seen: list[str] = field(default_factory=list)

    def get_instance(self, instance_id: str) -> Instance:
        return instance(self.states.pop(0) if len(self.states) > 1 else self.states[0])


def instance(state: InstanceState) -> Instance:
    return Instance("fake", "vm-1", "one", state, "H100", 1, "r", "s")


ACCEPTED = Accepted("fake", "create", "vm-1", "op-1", "one")


def render_or_none(hint: Hint | None) -> str | None:
    return None if hint is None else render(hint)


def test_wait_prints_one_line_per_state_change() -> None:
    lines: list[str] = []
    provider = FakeProvider([InstanceState.CREATING, InstanceState.CREATING, InstanceState.STARTING])
    result = wait(FakePending(polls=4), provider, ACCEPTED, timeout=60, progress=lines.append)
    assert result.state is InstanceState.RUNNING
    assert lines == ["fake: one: creating", "fake: one: starting", "fake: one: running"]


def test_wait_gives_up_at_the_deadline_and_says_how_to_follow() -> None:
    with pytest.raises(Timeout) as err:
        wait(FakePending(polls=10**9), FakeProvider([InstanceState.CREATING]), ACCEPTED, timeout=0.3,
             progress=lambda _: None)
    assert "operation op-1 goes on in the cloud" in err.value.message
    assert err.value.hint == Hint.say("follow it with {}", Command(("get", "vm-1", "--provider", "fake")))
    assert render_or_none(err.value.hint) == "follow it with `vm get vm-1 --provider fake`"


def test_interrupt_names_what_goes_on() -> None:
    tracker = Tracker()
    nothing_accepted = tracker.interrupted(["fake", "other"]).hint
    assert nothing_accepted is not None
    assert render(nothing_accepted) == "check with `vm list --provider fake`, `vm list --provider other`"
    assert render_or_none(tracker.interrupted([]).hint) == "check with `vm list`"
    tracker.add(ACCEPTED)
    error = tracker.interrupted(["fake"])
    assert error.exit_code == 130
    assert "fake create of one (operation op-1)" in error.message
    assert render_or_none(error.hint) == "follow it with `vm get vm-1 --provider fake`"
    assert error.hint is not None and error.hint.commands == (ACCEPTED.follow,)
