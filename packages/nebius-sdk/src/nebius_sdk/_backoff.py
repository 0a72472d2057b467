"""Retry and poll policies: `cloud_sdk_core`'s exponential backoff with jitter (the shape shared by the three SDKs
of this repository, README "Operations, pagers, retries"), with Nebius's defaults."""

from __future__ import annotations

from dataclasses import dataclass

import cloud_sdk_core
from cloud_sdk_core import Backoff as Backoff


@dataclass(frozen=True, kw_only=True)
class RetryPolicy(cloud_sdk_core.RetryPolicy):
    """How one call is retried. What is retried: Unavailable (UNAVAILABLE, DEADLINE_EXCEEDED), RateLimited,
    RequestNotSent and errors whose ServiceError says `retry_type: CALL`, for every call; mutating calls carry
    one idempotency key shared by all their attempts. `max_attempts` counts the first try (1 disables
    retries). Defaults: 4 attempts, 0.5 s doubling up to 8 s, 20 % jitter."""


@dataclass(frozen=True, kw_only=True)
class PollPolicy(cloud_sdk_core.PollPolicy):
    """How an Operation polls (1 s growing by 1.5 up to 15 s, 20 % jitter), and `timeout`: the deadline of
    `wait()`/`result()` when the caller passes none (30 minutes: Nebius GPU VMs may take minutes to be
    scheduled). What is retried: a poll that fails transiently (as RetryPolicy) is polled again until the
    deadline."""
