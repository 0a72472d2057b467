"""The shared wait loop, with a fake clock and scripted polls (pure: no network, no real sleeping)."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable

import pytest
from cloud_sdk_core import Operation, PollPolicy


class Failed(Exception):
    """The typed failure of the test operation."""


class Late(Exception):
    def __init__(self, timeout: float) -> None:
        super().__init__(f"not finished after {timeout:g}s")
        self.timeout = timeout


class Blip(Exception):
    """A transient poll error; `retry_after` is the server's hint."""

    def __init__(self, retry_after: float | None = None) -> None:
        super().__init__("blip")
        self.retry_after = retry_after


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []
        self.deadlines: list[float | None] = []  # the deadline each read was given

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class Scripted(Operation[str]):
    """An operation whose reads return (or raise) the next scripted state: "running", "ok" or "failed"."""

    _transient = (Blip,)

    def __init__(self, steps: list[str | Exception], clock: FakeClock, state: str = "running",
                 **policy: float) -> None:
        super().__init__("op-1", "vm-1", PollPolicy(**{"initial": 1.0, "maximum": 8.0, "jitter": 0.0, **policy}),
                         clock=lambda: clock.now, sleep=clock.sleep, rng=random.Random(0))
        self.steps = steps
        self.state = state
        self.fake = clock
        self.resolved = 0

    def _is_done(self) -> bool:
        return self.state != "running"

    def _failure(self) -> Exception | None:
        return Failed("it failed") if self.state == "failed" else None

    def _refresh(self, deadline: float | None) -> None:
        self.fake.deadlines.append(deadline)
        step = self.steps.pop(0) if len(self.steps) > 1 else self.steps[0]
        if isinstance(step, Exception):
            raise step
        self.state = step

    def _timeout_error(self, timeout: float) -> Exception:
        return Late(timeout)

    def _resolve(self) -> str:
        self.resolved += 1
        return f"resource {self.resource_id}"


def test_wait_polls_with_growing_delays_until_done_and_result_is_read_once() -> None:
    clock = FakeClock()
    op = Scripted(["running"] * 4 + ["ok"], clock)
    assert op.status() == "running"
    assert op.wait(1000) is None and op.status() == "succeeded"
    assert clock.sleeps == [1.0, 1.5, 2.25, 3.375]  # PollPolicy(initial=1, multiplier=1.5), no jitter
    assert op.result() == op.result() == "resource vm-1" and op.resolved == 1
    assert op.continuation_token() == "op-1"


def test_the_deadline_holds_even_when_every_poll_fails() -> None:
    clock = FakeClock()
    op = Scripted([Blip()], clock)
    with pytest.raises(Late) as info:
        op.wait(30)
    assert info.value.timeout == 30 and clock.now == pytest.approx(30)  # never sleeps past the deadline
    assert set(clock.deadlines) == {30.0}  # every poll is given the deadline


def test_the_default_deadline_is_the_poll_policy_timeout() -> None:
    clock = FakeClock()
    with pytest.raises(Late):
        Scripted(["running"], clock, timeout=120.0).wait()
    assert clock.now == pytest.approx(120.0)


def test_a_transient_error_s_retry_after_is_honoured() -> None:
    clock = FakeClock()
    op = Scripted([Blip(retry_after=7.0), Blip(), "ok"], clock)
    op.wait(1000)
    assert clock.sleeps == [7.0, 1.5]  # a longer Retry-After wins over the 1 s step; none given: the backoff


def test_a_non_transient_poll_error_propagates_at_once() -> None:
    clock = FakeClock()
    with pytest.raises(PermissionError):
        Scripted([PermissionError("expired")], clock).wait(1000)
    assert clock.sleeps == []


def test_a_failed_operation_raises_its_typed_failure_from_wait_and_result() -> None:
    op = Scripted(["failed"], FakeClock())
    with pytest.raises(Failed):
        op.wait(10)
    assert op.status() == "failed"
    with pytest.raises(Failed):
        op.result(0)
    assert op.resolved == 0


def test_done_reads_once_and_no_more_once_finished() -> None:
    clock = FakeClock()
    op = Scripted(["running", "ok"], clock)
    assert op.done() is False and op.done() is True and op.done() is True
    assert clock.deadlines == [None, None]  # two reads, outside any wait


def test_the_already_finished_object_never_reads() -> None:
    clock = FakeClock()
    op = Scripted([AssertionError("no read expected")], clock, state="ok")
    op.id = ""
    finished = op._already_finished("given")
    assert finished is op and op.done() and op.status() == "succeeded" and op.continuation_token() == ""
    assert op.wait(0) is None and op.result(0) == "given" and op.resolved == 0
    assert clock.deadlines == [] and clock.sleeps == []


def test_an_operation_must_say_what_is_native_to_its_cloud() -> None:
    incomplete: Callable[..., object] = Operation  # type: ignore[type-abstract]
    with pytest.raises(TypeError, match="abstract"):
        incomplete("op", "vm", PollPolicy())


def test_a_transient_poll_error_is_logged_on_the_subclass_package_logger(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    Scripted([Blip(), "ok"], FakeClock()).wait(100)
    expected = Scripted.__module__.partition(".")[0]
    assert [(r.name, r.getMessage()) for r in caplog.records] == [
        (expected, "polling operation op-1: transient Blip, polling again")
    ]
