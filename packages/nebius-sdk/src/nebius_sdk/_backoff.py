"""Retry and poll policies: `cloud_sdk_core`'s exponential backoff with jitter (the shape shared by the three SDKs
of this repository, README "Operations, pagers, retries"). Nebius's defaults are the shared ones: calls retry 4
times from 0.5 s doubling up to 8 s, polls grow from 1 s by 1.5 up to 15 s, with 20 % jitter."""

from __future__ import annotations

from dataclasses import dataclass

import cloud_sdk_core
from cloud_sdk_core import Backoff as Backoff
from cloud_sdk_core import PollPolicy as PollPolicy


@dataclass(frozen=True, kw_only=True)
class RetryPolicy(cloud_sdk_core.RetryPolicy):
    """How one call is retried. What is retried: Unavailable (UNAVAILABLE, DEADLINE_EXCEEDED), RateLimited,
    RequestNotSent and errors whose ServiceError says `retry_type: CALL`, for every call; mutating calls carry
    one idempotency key shared by all their attempts. `max_attempts` counts the first try (1 disables
    retries)."""
