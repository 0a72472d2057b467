"""Deterministic member names: `<fleet>-<slot>` for a slot's first attempt, `<fleet>-<slot>-r<n>` after.

The name carries the fleet, so a VM that was created in the cloud but never recorded (the process died
between the create call and the store write) is still found by `vm fleet destroy` and `reconcile`. Slots are
digits and retries use an `r` prefix, so the names of two fleets can never collide ("a-1-r2" is fleet "a",
while fleet "a-1" names its members "a-1-0", "a-1-1", ...).
"""

from __future__ import annotations

import re

from ..errors import UsageError

FLEET_NAME = re.compile(r"^[a-z][a-z0-9-]{0,39}$")


def check_fleet_name(name: str) -> str:
    """The name, or UsageError saying what is allowed (names must also be valid VM names on every cloud)."""
    if not FLEET_NAME.match(name) or name.endswith("-") or "--" in name:
        raise UsageError(f"invalid fleet name {name!r}: use 1-40 lower-case letters, digits and single dashes, "
                         "starting with a letter")
    return name


def member_name(fleet: str, slot: int, attempt: int) -> str:
    return f"{fleet}-{slot}" if attempt == 1 else f"{fleet}-{slot}-r{attempt}"


def member_pattern(fleet: str) -> re.Pattern[str]:
    """Matches exactly the names `member_name` gives to this fleet's members."""
    return re.compile(rf"^{re.escape(fleet)}-(?P<slot>\d+)(?:-r(?P<attempt>\d+))?$")
