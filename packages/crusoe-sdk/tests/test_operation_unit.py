"""Operation polling with a fake clock and scripted poll results (pure, no network, no real sleeping)."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from crusoe_sdk import (
    CapacityError,
    NoResponse,
    Operation,
    OperationState,
    OperationTimeout,
    OperationUnavailable,
    PollPolicy,
    RateLimited,
    ServerError,
)
from crusoe_sdk._errormap import from_operation
from crusoe_sdk.models import OperationRecord


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def record(state: str, result: object = None) -> OperationRecord:
    return OperationRecord(
        operation_id="OP", state=OperationState(state), metadata={"id": "vm"}, result=result
    )


def scripted(steps: list[object]) -> Callable[[float | None], OperationRecord]:
    """A refresh that returns (or raises) the next scripted step, repeating the last one forever."""

    def refresh(_deadline: float | None) -> OperationRecord:
        step = steps.pop(0) if len(steps) > 1 else steps[0]
        if isinstance(step, BaseException):
            raise step
        return step  # type: ignore[return-value]

    return refresh


def operation(steps: list[object], clock: FakeClock, **policy: float) -> Operation[str]:
    return Operation(
        record("IN_PROGRESS"), project_id="p", refresh=scripted(steps),
        resolve=lambda r: f"done:{r.resource_id}",
        fail=lambda r: from_operation(r, method="GET", url="u"),
        policy=PollPolicy(**{"initial": 1.0, "maximum": 8.0, **policy}),
        clock=lambda: clock.now, sleep=clock.sleep, rng=random.Random(0),
    )


def test_wait_polls_with_growing_jittered_intervals_until_done() -> None:
    clock = FakeClock()
    op = operation([record("IN_PROGRESS")] * 6 + [record("SUCCEEDED", {})], clock)
    assert op.wait(timeout=1000) is None and op.state is OperationState.SUCCEEDED
    assert len(clock.sleeps) == 6
    assert all(b >= a / 2 for a, b in zip(clock.sleeps, clock.sleeps[1:], strict=False))
    assert clock.sleeps[-1] > clock.sleeps[0]
    assert op.result() == "done:vm"


def test_transient_poll_errors_are_survived_and_retry_after_is_honoured() -> None:
    clock = FakeClock()
    transient = [
        ServerError("boom", status=503),
        NoResponse("dropped"),
        RateLimited("slow down", status=429, retry_after=7.0),
    ]
    op = operation([*transient, record("SUCCEEDED", {})], clock)
    assert op.wait(timeout=1000) is None and op.state is OperationState.SUCCEEDED
    assert clock.sleeps[2] == 7.0  # after the 429


def test_the_deadline_is_enforced_even_when_every_poll_fails() -> None:
    clock = FakeClock()
    op = operation([ServerError("down", status=500)], clock)
    with pytest.raises(OperationTimeout) as info:
        op.wait(timeout=30)
    assert 30 <= clock.now <= 30.001  # never sleeps past the deadline
    assert info.value.operation_id == "OP" and info.value.last_state == "IN_PROGRESS"


def test_default_deadline_comes_from_the_policy() -> None:
    clock = FakeClock()
    with pytest.raises(OperationTimeout):
        operation([record("IN_PROGRESS")], clock, timeout=120.0).wait()
    assert clock.now == pytest.approx(120.0)


def test_a_non_transient_poll_error_propagates() -> None:
    op = operation([OperationUnavailable("gone", status=403)], FakeClock())
    with pytest.raises(OperationUnavailable):
        op.wait(timeout=10)


def test_wait_and_result_raise_the_typed_failure() -> None:
    op = operation([record("FAILED", {"code": "out_of_stock", "message": "no h100"})], FakeClock())
    with pytest.raises(CapacityError, match="no h100"):
        op.wait(timeout=10)
    assert op.state is OperationState.FAILED and op.status() == "failed"
    with pytest.raises(CapacityError, match="no h100"):
        op.result()


def test_done_polls_once_and_stops_polling_when_terminal() -> None:
    calls: list[int] = []
    steps = [record("IN_PROGRESS"), record("SUCCEEDED", {})]

    def refresh(_deadline: float | None) -> OperationRecord:
        calls.append(1)
        return steps.pop(0)

    op = Operation(record("IN_PROGRESS"), project_id="p", refresh=refresh, resolve=lambda r: r,
                   fail=lambda r: from_operation(r, method="GET", url="u"), policy=PollPolicy())
    assert op.done() is False and op.done() is True and op.done() is True
    assert len(calls) == 2


def test_a_finished_operation_needs_no_requests() -> None:
    op = Operation.finished("vm-9", None, project_id="p")
    assert (op.id, op.resource_id, op.state) == ("", "vm-9", OperationState.SUCCEEDED)
    assert op.done() and op.wait(0) is None and op.result() is None
    assert op.status() == "succeeded" and op.continuation_token() == ""
