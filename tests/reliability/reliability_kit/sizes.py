"""How much the suite does, and the seed that replays it.

The fast subset (part of `hatch test`) and the long runs (marker `soak`) have fixed sizes, so a figure printed by
one run means the same in the next. `VM_RELIABILITY_SEED` replays a run; `VM_RELIABILITY_CYCLES` changes the
number of chaos cycles of the long soak.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

DEFAULT_SEED = 20240611
FULL_ENV = "VM_RELIABILITY"  # "full": run the soak-marked tests too


@dataclass(frozen=True, slots=True)
class Sizes:
    cycles: int  # chaos cycles (create/status/destroy, some killed)
    restarts: int  # mock-cloud restarts during creates
    concurrent_fleets: int  # fleets created at once by separate `vm` processes
    rounds: int  # rounds of the concurrency mix
    cli_examples: int  # hypothesis examples per CLI/config property
    wire_examples: int  # hypothesis examples per mock-cloud property


FAST = Sizes(cycles=4, restarts=1, concurrent_fleets=3, rounds=1, cli_examples=25, wire_examples=30)
SOAK = Sizes(cycles=int(os.environ.get("VM_RELIABILITY_CYCLES", "40")), restarts=3, concurrent_fleets=6, rounds=3,
             cli_examples=500, wire_examples=200)


def seed() -> int:
    """The run's seed: $VM_RELIABILITY_SEED, else a fixed default (printed in the summary either way)."""
    return int(os.environ.get("VM_RELIABILITY_SEED", DEFAULT_SEED))


def rng(purpose: str) -> random.Random:
    """A generator for one test, derived from the run's seed and the test's purpose (stable across runs)."""
    return random.Random(f"{seed()}:{purpose}")


def full_requested() -> bool:
    return os.environ.get(FULL_ENV, "").lower() == "full"
