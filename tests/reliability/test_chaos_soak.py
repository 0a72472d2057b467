"""Chaos soak: randomized fleet create/status/reconcile/destroy cycles, some SIGKILLed at a random moment, while
every mock cloud injects transient errors (20% of calls), failed operations (10%), dropped responses (5%) and
latency. After every command the store must match the clouds' inventory (reliability_kit/audit.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
from reliability_kit import sizes
from reliability_kit.chaos import Soak

if TYPE_CHECKING:
    from reliability_kit.figures import Figures
    from reliability_kit.home import VmHome


def soak(home_factory: Callable[..., VmHome], figures: Figures, cycles: int, purpose: str) -> None:
    run = Soak(home_factory(), sizes.rng(purpose), figures, sizes.seed())
    run.begin()
    try:
        run.run(cycles)
        run.finish()
    finally:
        run.count_faults()


def test_chaos_cycles_fast(home_factory: Callable[..., VmHome], figures: Figures) -> None:
    soak(home_factory, figures, sizes.FAST.cycles, "chaos-fast")


@pytest.mark.soak
def test_chaos_soak(home_factory: Callable[..., VmHome], figures: Figures) -> None:
    soak(home_factory, figures, sizes.SOAK.cycles, "chaos-soak")
