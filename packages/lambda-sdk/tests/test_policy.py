"""Backoff, Retry-After parsing and the thread-safe token bucket (pure unit tests with a fake clock)."""

from __future__ import annotations

import random
import threading
import time

from lambda_sdk._policy import PollPolicy, RateLimiter, RetryPolicy, TokenBucket, parse_retry_after


def test_backoff_grows_exponentially_with_jitter_and_is_capped() -> None:
    rng = random.Random(7)
    for attempt, step in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (10, 30.0)]:
        delays = [RetryPolicy(initial=1.0, maximum=30.0).delay(attempt, rng=rng) for _ in range(200)]
        assert all(step / 2 <= d <= step for d in delays)
        assert len(set(delays)) > 1  # jittered


def test_retry_after_wins_over_backoff_but_is_capped() -> None:
    policy = RetryPolicy(initial=0.1, max_retry_after=5.0)
    assert policy.delay(1, retry_after=0.25) == 0.25
    assert policy.delay(1, retry_after=600.0) == 5.0
    assert 0.05 <= policy.delay(1) <= 0.1
    assert 5.0 <= RetryPolicy(initial=10.0).delay(1, retry_after=0.25) <= 10.0  # the longer of the two


def test_poll_policy_uses_its_own_interval() -> None:
    policy = PollPolicy(initial=2.0, maximum=3.0)
    assert all(1.0 <= policy.delay(n) <= 3.0 for n in range(1, 20))


def test_parse_retry_after() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("0.024") == 0.024
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("-5") == 0.0
    now = 1_700_000_000.0
    http_date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(now + 30))
    assert abs(parse_retry_after(http_date, now=now) - 30.0) < 1.0


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


def test_token_bucket_spaces_calls_by_the_interval() -> None:
    clock = FakeClock()
    bucket = TokenBucket(12.0, clock=clock, sleep=clock.sleep)
    assert [bucket.reserve() for _ in range(3)] == [0.0, 12.0, 24.0]
    clock.now += 40.0  # past the last reserved slot (136): idle time does not accumulate a burst
    assert bucket.reserve() == 0.0
    assert bucket.reserve() == 12.0


def test_penalize_pushes_the_next_slot_back() -> None:
    clock = FakeClock()
    bucket = TokenBucket(1.0, clock=clock, sleep=clock.sleep)
    bucket.reserve()
    bucket.penalize(5.0)
    assert bucket.reserve() == 5.0


def test_disabled_bucket_never_waits() -> None:
    limiter = RateLimiter(None)
    assert [limiter.general.acquire() for _ in range(5)] == [0.0] * 5
    assert limiter.launch.acquire() == 0.0


def test_bucket_is_shared_by_threads() -> None:
    """Ten threads acquiring at once leave the bucket ten intervals ahead, each thread on its own slot."""
    interval = 0.01
    bucket = TokenBucket(interval)
    stamps: list[float] = []
    lock = threading.Lock()

    def worker() -> None:
        bucket.acquire()
        with lock:
            stamps.append(time.monotonic())

    threads = [threading.Thread(target=worker) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stamps.sort()
    gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
    assert sum(gaps) >= interval * 9 * 0.9  # at least ~9 intervals between first and last (never faster)
