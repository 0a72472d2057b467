"""Chaos soak: randomized fleet create/status/reconcile/destroy cycles, some SIGKILLed at a random moment, while
every mock cloud injects transient errors (20% of calls), failed operations (10%), dropped responses (5%) and
latency. After every command the store must match the clouds' inventory (reliability_kit/audit.py)."""

from __future__ import annotations

import re
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from reliability_kit import sizes
from reliability_kit.chaos import FleetPlan, Soak
from reliability_kit.home import PROVIDERS, free_ports

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


@pytest.mark.soak
def test_a_300_vm_fleet_under_faults_leaks_and_doubles_nothing(home_factory: Callable[..., VmHome], figures: Figures,
                                                               tmp_path: Path) -> None:
    """One fleet of 300 one-GPU VMs over Lambda and Nebius while both inject the soak's faults (transient errors,
    failed operations, dropped responses): after the create and after each destroy run the store matches the
    clouds, and in the end nothing of it is left. The world is the default scenario with room for 300."""
    text = resources.files("mock_clouds").joinpath("default_scenario.toml").read_text()
    roomy = tmp_path / "roomy.toml"
    roomy.write_text(re.sub(r"(?m)^quantity = [1-9][0-9]*", "quantity = 200", text))
    home = home_factory()
    home.serve(dict(zip(PROVIDERS, free_ports(len(PROVIDERS)), strict=True)), scenario=roomy)
    run = Soak(home, sizes.rng("big-fleet"), figures, sizes.seed())
    run.begin()
    try:
        plan = FleetPlan("big", "H100", 300, 1, "spread", ("lambda", "nebius"))
        run.create(plan)  # audited against the clouds' inventory; a rollback (below the minimum) is exit 6
        members = run.home.store().of(plan.name) if plan.name in run.home.store().fleets else []
        figures.add("big fleet: VMs recorded running", sum(1 for m in members if m.state == "running"))
        if plan.name in run.home.store().fleets:
            run.destroy(plan.name)
        run.finish()
    finally:
        run.count_faults()
