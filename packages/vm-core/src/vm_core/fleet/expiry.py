"""Expiry: a fleet's time to live (`--ttl`), after which `vm fleet reap` destroys it.

Durations are one or more `<whole number><unit>` parts, unit s, m, h or d (`90s`, `30m`, `8h`, `2d`, `1h30m`),
from 1 second to 365 days. A fleet expires at its creation time plus its ttl, on the creating machine's clock.
"""

from __future__ import annotations

import re
import time

from ..errors import UsageError
from .store import FleetRecord

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_TTL = 365 * 86400
_PART = re.compile(r"(\d+)([smhd])")
_WHOLE = re.compile(r"(?:\d+[smhd])+")


def parse_duration(text: str) -> float:
    """Seconds of a duration such as `8h` or `1h30m`; UsageError (exit 2) for anything else, or for a duration
    outside 1 s .. 365 d. The message names the value, not the option (the CLI says which option it was)."""
    value = text.strip().lower()
    if not _WHOLE.fullmatch(value):
        raise UsageError(f"{text!r} is not a duration: use a whole number and a unit s, m, h or d, e.g. "
                         "30m, 8h, 2d or 1h30m")
    seconds = sum(int(n) * UNITS[unit] for n, unit in _PART.findall(value))
    if not 1 <= seconds <= MAX_TTL:
        raise UsageError(f"{text!r} must be from 1s to 365d")
    return float(seconds)


def expired(record: FleetRecord, now: float | None = None) -> bool:
    """Whether the fleet has a ttl and it has passed."""
    return record.expires_at is not None and record.expires_at <= (time.time() if now is None else now)
