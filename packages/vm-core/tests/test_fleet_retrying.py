"""Idempotent calls (deletes, reads) are sent again after transient errors, with backoff, a bounded number of
times; anything else is raised at once (vm_core.fleet.retrying)."""

from __future__ import annotations

import pytest
from vm_core.errors import NotFound, RateLimited, Transient, VmError
from vm_core.fleet.retrying import ATTEMPTS, retried, retried_answers
from vm_core.kit.polling import Backoff


class Flaky:
    """Fails with `errors` in turn, then answers "ok"."""

    def __init__(self, *errors: VmError) -> None:
        self.errors, self.calls = list(errors), 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def test_transient_errors_are_retried_with_growing_pauses() -> None:
    pauses: list[float] = []
    call = Flaky(Transient("503"), Transient("dropped"))
    assert retried(call, backoff=Backoff(1.0, 3.0), sleep=pauses.append) == "ok"
    assert call.calls == 3 and pauses == [1.0, 2.0]


def test_the_last_transient_error_is_raised_when_every_attempt_failed() -> None:
    pauses: list[float] = []
    call = Flaky(*[Transient(f"503 #{n}") for n in range(ATTEMPTS)])
    with pytest.raises(Transient, match=f"503 #{ATTEMPTS - 1}"):
        retried(call, sleep=pauses.append)
    assert call.calls == ATTEMPTS and len(pauses) == ATTEMPTS - 1


def test_other_errors_are_not_retried() -> None:
    call = Flaky(NotFound("gone"))
    with pytest.raises(NotFound):
        retried(call, sleep=lambda _: pytest.fail("no pause before a non-transient error"))
    assert call.calls == 1


def test_a_rate_limit_waits_at_least_as_long_as_it_says() -> None:
    limited = RateLimited("429")
    limited.retry_after = 5.0
    pauses: list[float] = []
    assert retried(Flaky(limited), backoff=Backoff(0.25, 8.0), sleep=pauses.append) == "ok"
    assert pauses == [5.0]


def test_a_batch_sends_again_only_the_ids_answered_transiently() -> None:
    sent: list[list[str]] = []
    answers = iter([{"a": "pa", "b": Transient("503"), "c": NotFound("c")}, {"b": "pb"}])

    def send(ids: list[str]) -> dict[str, object]:
        sent.append(ids)
        return next(answers)

    result = retried_answers(send, ["a", "b", "c"], sleep=lambda _: None)
    assert sent == [["a", "b", "c"], ["b"]]
    assert result["a"] == "pa" and result["b"] == "pb" and isinstance(result["c"], NotFound)


def test_a_batch_call_that_raises_is_sent_again_then_fails_every_id() -> None:
    calls = 0

    def send(ids: list[str]) -> dict[str, object]:
        nonlocal calls
        calls += 1
        raise Transient("dropped")

    result = retried_answers(send, ["a", "b"], attempts=3, sleep=lambda _: None)
    assert calls == 3 and all(isinstance(v, Transient) for v in result.values()) and set(result) == {"a", "b"}
