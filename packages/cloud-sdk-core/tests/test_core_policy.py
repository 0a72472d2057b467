"""The shared backoff: exponential steps, jitter bounds, Retry-After, refusal of nonsense, Retry-After parsing."""

from __future__ import annotations

import dataclasses
import random
import time

import pytest
from cloud_sdk_core import Backoff, PollPolicy, RetryPolicy, parse_retry_after


def test_steps_grow_exponentially_up_to_the_maximum() -> None:
    backoff = Backoff(initial=1.0, maximum=10.0, multiplier=2.0, jitter=0.0)
    assert [backoff.delay(n) for n in range(1, 7)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_jitter_takes_off_at_most_its_fraction_and_really_varies() -> None:
    rng = random.Random(3)
    delays = [RetryPolicy(initial=4.0, maximum=4.0, jitter=0.5).delay(5, rng=rng) for _ in range(200)]
    assert all(2.0 <= d <= 4.0 for d in delays) and len(set(delays)) > 100


def test_a_longer_retry_after_wins_and_a_shorter_one_does_not() -> None:
    policy = PollPolicy(initial=1.0, jitter=0.0)
    assert policy.delay(1, retry_after=7.5) == 7.5 and policy.delay(1, retry_after=0.2) == 1.0


def test_the_defaults_and_the_shape() -> None:
    assert (RetryPolicy().max_attempts, RetryPolicy().initial, RetryPolicy().maximum) == (4, 0.5, 8.0)
    assert PollPolicy().timeout == 1800.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        PollPolicy().timeout = 1.0  # type: ignore[misc]


@pytest.mark.parametrize(
    "bad",
    [{"initial": 2.0, "maximum": 1.0}, {"initial": -1.0}, {"multiplier": 0.5}, {"jitter": 1.5}, {"max_attempts": 0}],
)
def test_nonsense_is_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**bad)  # type: ignore[arg-type]


def test_parse_retry_after() -> None:
    assert parse_retry_after("3") == 3.0 and parse_retry_after(" 0.25 ") == 0.25 and parse_retry_after("-5") == 0.0
    assert parse_retry_after(None) is None and parse_retry_after("") is None and parse_retry_after("soon") is None
    now = 1_700_000_000.0
    http_date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(now + 30))
    assert parse_retry_after(http_date, now=now) == pytest.approx(30.0, abs=1.0)
