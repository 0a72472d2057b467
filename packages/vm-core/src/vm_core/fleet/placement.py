"""Where a fleet's members may go (`--placement`), recorded with the fleet."""

from __future__ import annotations

import enum


class Placement(enum.StrEnum):
    """Where a fleet's members may go: anywhere the strategy puts them, or all in one place."""

    ANY = "any"
    CLUSTER = "cluster"
