"""Crusoe's retry and poll policies: `cloud_sdk_core`'s backoff (exponential, jittered, Retry-After wins) with
Crusoe's defaults and "equal jitter" (a random point in the upper half of each exponential step)."""

from __future__ import annotations

from dataclasses import dataclass

import cloud_sdk_core


@dataclass(frozen=True, kw_only=True)
class RetryPolicy(cloud_sdk_core.RetryPolicy):
    """How one request is retried (the shape shared by the three SDKs: README "Operations, pagers, retries").

    What is retried: reads and deletes (GET, DELETE) on 429, 5xx but 501, and lost connections; creates and
    actions (POST, PATCH) only when the request was never sent. `max_attempts` counts the first try (1 disables
    retries). A Retry-After longer than `max_retry_after` is not waited for: the RateLimited error is raised.
    """

    jitter: float = 0.5
    max_retry_after: float = 60.0


@dataclass(frozen=True, kw_only=True)
class PollPolicy(cloud_sdk_core.PollPolicy):
    """How an Operation polls, and `timeout`: the deadline of `wait()`/`result()` when the caller passes none
    (30 minutes: Crusoe boots take minutes, an H100 boot can take longer than 10). What is retried: a poll that
    fails with 429, a 5xx or a lost connection is polled again until the deadline."""

    jitter: float = 0.5
