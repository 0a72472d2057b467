"""Retry and polling policies (`cloud_sdk_core`'s backoff with Lambda's defaults), and the client-side rate
limiter (pure logic, no I/O but sleeping)."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import cloud_sdk_core
from cloud_sdk_core import parse_retry_after as parse_retry_after


@dataclass(frozen=True, kw_only=True)
class RetryPolicy(cloud_sdk_core.RetryPolicy):
    """How one call is retried (the shape shared by the three SDKs: README "Operations, pagers, retries").

    What is retried: a 429, a 5xx or a lost connection, for reads and idempotent calls; a launch only when the
    request was never sent. `max_attempts` counts every try (1 = never retry). A Retry-After header is honoured,
    capped at `max_retry_after` seconds.
    """

    max_attempts: int = 6
    initial: float = 1.0
    maximum: float = 30.0
    jitter: float = 0.5
    max_retry_after: float = 120.0

    def delay(self, attempt: int, retry_after: float | None = None, rng: random.Random | None = None) -> float:
        """As `Backoff.delay`, with a Retry-After capped at `max_retry_after`."""
        capped = None if retry_after is None else min(retry_after, self.max_retry_after)
        return super().delay(attempt, capped, rng)


@dataclass(frozen=True, kw_only=True)
class PollPolicy(cloud_sdk_core.PollPolicy):
    """Intervals between polls of a launching instance, and `timeout`, a wait's default deadline (30 minutes: 8-GPU
    instances take 15 to 20+ minutes to boot, research lambda.md section 8). What is retried: a poll that fails
    with a 5xx, a 429 or a lost connection is polled again until the deadline.

    `visibility_grace`: seconds after a launch (or a resume) during which a 404 for an instance never seen yet
    means "not visible yet", not "gone": the poll goes on. Lambda documents no such delay; dstack waits through
    an instance its listing does not show yet (backends/lambdalabs/compute.py, _get_instance_info), and calling
    it gone would have a caller launch it again. A minute is an inference."""

    initial: float = 5.0
    maximum: float = 30.0
    multiplier: float = 2.0
    jitter: float = 0.5
    visibility_grace: float = 60.0


@dataclass(frozen=True)
class RateLimit:
    """Client-side spacing of requests, per client and shared by its threads.

    Lambda documents "generally one request per second" and "one request per 12 seconds" for launch (research
    lambda.md section 7). "Generally" is an average, not a bucket of one: dstack and gpuhunt make two or three
    calls back to back against the live API without handling a 429 (research real-clouds.md Part 2, D2). How
    many may go back to back is not published: `request_burst` (5) is an inference, the same as the mock
    clouds' scenario. Launches keep a burst of 1. An interval of 0 disables that bucket. Raises ValueError for
    a burst below 1.
    """

    request_interval: float = 1.0
    launch_interval: float = 12.0
    request_burst: int = 5

    def __post_init__(self) -> None:
        if self.request_burst < 1:
            raise ValueError(f"request_burst must be at least 1, not {self.request_burst}")


class TokenBucket:
    """A thread-safe token bucket of `burst` tokens that refills one token every `interval` seconds, full at
    first: `burst` calls may go at once, then one per `interval`; idle time refills it, never beyond `burst`.

    `acquire()` reserves the next free slot under the lock and sleeps outside it, so concurrent callers are
    served in order without holding the lock while they wait. The bucket is kept as the time at which it would
    be full again (`_full_at`, the generic cell rate algorithm), so a reservation is one comparison.
    """

    def __init__(self, interval: float, *, burst: int = 1, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.interval = interval
        self.burst = burst
        self._full_at = 0.0
        self._lock = threading.Lock()
        self._clock = clock
        self._sleep = sleep

    @property
    def _allowance(self) -> float:
        """How far ahead of now the bucket may be booked: the burst beyond one token, in seconds."""
        return (self.burst - 1) * self.interval

    def reserve(self) -> float:
        """Take the next token; returns how many seconds the caller must wait before using it."""
        with self._lock:
            now = self._clock()
            slot = max(now, self._full_at - self._allowance)
            self._full_at = max(self._full_at, slot) + self.interval
            return slot - now

    def acquire(self) -> float:
        """Block until this caller may send; returns the seconds waited."""
        wait = self.reserve() if self.interval > 0 else 0.0
        if wait > 0:
            self._sleep(wait)
        return wait

    def acquire_unless(self, abort: threading.Event) -> float | None:
        """`acquire`, except that the wait ends as soon as `abort` is set: then None, and the caller must not
        send (the slot it reserved goes unused)."""
        wait = self.reserve() if self.interval > 0 else 0.0
        return None if abort.wait(wait) else wait

    def restart(self, seconds: float) -> None:
        """Make the next free slot `seconds` from now, with no burst left, whatever was reserved: for a caller
        that alone uses the bucket, whose last token went out later than its slot (or was refused, so it used
        none)."""
        with self._lock:
            self._full_at = self._clock() + seconds + self._allowance

    def penalize(self, seconds: float) -> None:
        """Push the next free slot back after the server said 429 with this Retry-After: the server's bucket is
        empty, so the burst is spent too."""
        with self._lock:
            self._full_at = max(self._full_at, self._clock() + seconds + self._allowance)


class RateLimiter:
    """The two buckets of one client: every request takes a general token, a launch also a launch token."""

    def __init__(self, limit: RateLimit | None) -> None:
        limit = limit or RateLimit(0.0, 0.0)
        self.general = TokenBucket(limit.request_interval, burst=limit.request_burst)
        self.launch = TokenBucket(limit.launch_interval)
