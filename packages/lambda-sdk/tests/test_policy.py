"""Backoff, Retry-After parsing and the thread-safe token bucket (pure unit tests with a fake clock)."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import pytest
import requests
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


def test_token_bucket_of_one_spaces_calls_by_the_interval() -> None:
    """The launch bucket: one launch per 12 s (spec 1.10 info, research lambda.md section 7), no burst."""
    clock = FakeClock()
    bucket = TokenBucket(12.0, clock=clock, sleep=clock.sleep)
    assert [bucket.reserve() for _ in range(3)] == [0.0, 12.0, 24.0]
    clock.now += 40.0  # past the last reserved slot (136): a bucket of one holds one token
    assert bucket.reserve() == 0.0
    assert bucket.reserve() == 12.0


def test_token_bucket_lets_its_burst_go_at_once_then_one_per_interval() -> None:
    """Lambda's "generally one request per second" is an average (research real-clouds.md Part 2, D2: gpuhunt
    and dstack send two or three calls back to back): a full bucket of 5 sends five at once, then one per
    interval; idle time refills it, never beyond 5."""
    clock = FakeClock()
    bucket = TokenBucket(1.0, burst=5, clock=clock, sleep=clock.sleep)
    assert [bucket.reserve() for _ in range(7)] == [0.0] * 5 + [1.0, 2.0]
    clock.now += 2.5  # half a token past the last slot (102)
    assert bucket.reserve() == 0.5
    clock.now += 100.0  # idle long enough for any number of tokens: the bucket holds five
    assert [bucket.reserve() for _ in range(6)] == [0.0] * 5 + [1.0]


def test_penalize_pushes_the_next_slot_back() -> None:
    clock = FakeClock()
    bucket = TokenBucket(1.0, clock=clock, sleep=clock.sleep)
    bucket.reserve()
    bucket.penalize(5.0)
    assert bucket.reserve() == 5.0


def test_a_429_spends_the_burst_too() -> None:
    """The server said 429: its bucket is empty, so after its Retry-After one call goes, then one per interval."""
    clock = FakeClock()
    bucket = TokenBucket(1.0, burst=5, clock=clock, sleep=clock.sleep)
    bucket.reserve()
    bucket.penalize(0.25)
    assert [bucket.reserve() for _ in range(3)] == [0.25, 1.25, 2.25]


def test_the_client_allows_the_scenario_burst_for_requests_and_none_for_launches() -> None:
    """The SDK's default allowance is the mock scenario's inferred burst of 5 (default_scenario.toml
    [lambda.rate_limit]); launches keep one per 12 s."""
    from lambda_sdk import RateLimit

    limiter = RateLimiter(RateLimit())
    assert (limiter.general.interval, limiter.general.burst) == (1.0, 5)
    assert (limiter.launch.interval, limiter.launch.burst) == (12.0, 1)
    with pytest.raises(ValueError, match="request_burst must be at least 1"):
        RateLimit(request_burst=0)


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


def test_restart_counts_the_next_slot_from_now() -> None:
    clock = FakeClock()
    bucket = TokenBucket(12.0, clock=clock, sleep=clock.sleep)
    bucket.reserve()
    clock.now += 3.0
    bucket.restart(12.0)  # the call went out 3 s after its slot: the next one waits 12 s from here
    assert bucket.reserve() == 12.0
    bucket.restart(0.5)  # refused: the slot was not used
    assert bucket.reserve() == 0.5


def test_restart_leaves_no_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket(1.0, burst=5, clock=clock, sleep=clock.sleep)
    bucket.restart(2.0)
    assert [bucket.reserve() for _ in range(2)] == [2.0, 3.0]


class _AdvancingClock(FakeClock):
    def sleep(self, seconds: float) -> None:
        super().sleep(seconds)
        self.now += seconds


class _Wire:
    """A requests session stand-in answering from a list of statuses, recording the (fake) time of each send."""

    def __init__(self, clock: _AdvancingClock, statuses: list[int]) -> None:
        self.clock, self.statuses, self.sent = clock, statuses, []

    def request(self, method: str, url: str, **kwargs: object) -> requests.Response:
        self.sent.append((url.rsplit("/", 1)[-1], self.clock.now))
        response = requests.Response()
        response.status_code = self.statuses.pop(0) if self.statuses else 200
        response._content = b'{"data": {}}' if response.status_code < 400 else b'{"error": {"code": "x"}}'
        response.headers["Retry-After"] = "0.05"
        return response


def _transport(clock: _AdvancingClock, wire: _Wire) -> Any:
    from lambda_sdk._transport import Transport

    limiter = RateLimiter(None)
    limiter.general = TokenBucket(1.0, clock=clock, sleep=clock.sleep)
    limiter.launch = TokenBucket(12.0, clock=clock, sleep=clock.sleep)
    return Transport(base_url="http://lambda.test", api_key="k", session=wire, timeout=5.0, limiter=limiter,
                     retry=RetryPolicy(initial=0.0, maximum=0.0, max_attempts=3))


def test_a_launch_that_waited_for_a_general_token_spaces_the_next_launch_from_its_send() -> None:
    """Three general calls queued before the first launch send it 3 s after its launch slot: the second launch
    still goes a full launch interval after the first one went, never sooner (Lambda would refuse it)."""
    from lambda_sdk._transport import Bucket

    clock = _AdvancingClock()
    wire = _Wire(clock, [])
    transport = _transport(clock, wire)
    for _ in range(3):
        transport.limiter.general.reserve()  # other threads' reads hold the next three general slots
    for _ in range(2):
        transport.call("POST", "/launch", dict, body={}, bucket=Bucket.LAUNCH)
    (_, first), (_, second) = wire.sent
    assert first == 103.0 and second - first >= 12.0  # the clock starts at 100


def test_a_launch_refused_with_429_is_retried_when_lambda_says_not_a_launch_interval_later() -> None:
    from lambda_sdk._transport import Bucket, Retry

    clock = _AdvancingClock()
    wire = _Wire(clock, [429])
    transport = _transport(clock, wire)
    transport.call("POST", "/launch", dict, body={}, bucket=Bucket.LAUNCH, retry=Retry.IF_NOT_APPLIED)
    (_, refused), (_, accepted) = wire.sent
    assert 0.05 <= accepted - refused < 12.0
