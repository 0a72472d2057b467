"""Team soak: 8 "machines" (processes with their own VM_HOMEs) share one PostgreSQL fleet store and one set of
mock clouds that inject transient errors, failed operations, dropped responses and latency. Every cycle all of
them create a fleet at once, then all destroy theirs at once; after each half the store must match the clouds'
inventory (reliability_kit/audit.py), and a user's own VM is never touched."""

from __future__ import annotations

import random
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import pytest
from reliability_kit import sizes
from reliability_kit.audit import audit, fleet_vms
from reliability_kit.chaos import CREATE_CODES, DESTROY_ATTEMPTS, FAULTS, GPUS, STRATEGIES
from reliability_kit.home import PROVIDERS

if TYPE_CHECKING:
    from reliability_kit.figures import Figures
    from reliability_kit.home import Run, VmHome

MACHINES = 8


def machines(home_factory: Callable[..., VmHome], url: str) -> list[VmHome]:
    """MACHINES homes on one store; the first one's mock clouds are everybody's (the others link to them)."""
    homes = [home_factory() for _ in range(MACHINES)]
    for home in homes:
        home.env["VM_STORE_URL"] = url
    homes[0].start()
    for home in homes[1:]:
        home.path.mkdir(parents=True, exist_ok=True, mode=0o700)
        home.mock_dir.symlink_to(homes[0].mock_dir, target_is_directory=True)
    return homes


def create_args(name: str, rng: random.Random) -> tuple[str, ...]:
    count = rng.randint(1, 4)
    return ("fleet", "create", "--name", name, "--gpu", rng.choice(GPUS), "--count", str(count), "--min-count",
            str(rng.randint(1, count)), "--strategy", rng.choice(STRATEGIES), "-q", "-o", "json")


def destroy(home: VmHome, name: str) -> Run:
    """`vm fleet destroy` until it has destroyed everything (a re-run retries what faults left)."""
    for _ in range(DESTROY_ATTEMPTS):
        result = home("fleet", "destroy", name, "-q", "-o", "json")
        assert result.code in (0, 7), result.describe()
        if result.code == 0:
            return result
    raise AssertionError(f"{name}: not destroyed after {DESTROY_ATTEMPTS} attempts: {result.describe()}")


def team_soak(home_factory: Callable[..., VmHome], url: str, figures: Figures, cycles: int, purpose: str) -> None:
    rng = sizes.rng(purpose)
    homes = machines(home_factory, url)
    lead = homes[0]
    users = {lead.ok("create", "--provider", "crusoe", "--gpu", "L40S", "--name", "user-own-vm", "-q",
                     "-o", "json").json()["id"]}
    for index, provider in enumerate(PROVIDERS):
        lead.set_faults(provider, seed=sizes.seed() + index, **FAULTS)
    used: list[str] = []
    with ThreadPoolExecutor(max_workers=MACHINES) as pool:
        for cycle in range(cycles):
            names = [f"m{i}-c{cycle}" for i in range(MACHINES)]
            used += names
            plans = [create_args(name, rng) for name in names]
            created = list(pool.map(lambda hp: hp[0](*hp[1]), zip(homes, plans, strict=True)))
            for result in created:
                assert result.code in CREATE_CODES, result.describe()
                figures.add(f"team creates exit {result.code}")
            settled = [n for n, r in zip(names, created, strict=True) if r.code in (0, 6)]
            _check(lead, users, used, settled)
            list(pool.map(lambda hn: destroy(*hn), zip(reversed(homes), names, strict=True)))  # another machine's
            _check(lead, users, used, [])
            assert not set(names) & set(lead.store().fleets)
            assert all(fleet_vms(lead.inventory(), name) == [] for name in names)
            figures.add("team cycles")
    injected = sum(v for k, v in lead.faults_injected().items() if k != "latency")
    figures.add("team faults injected", injected)
    assert injected > 0, "the clouds injected no fault: the soak proved nothing about faults"
    lead.clear_faults()
    assert {vm["id"] for vm in lead.inventory()} == users


def _check(home: VmHome, users: set[str], fleets: list[str], settled: list[str]) -> None:
    findings = audit(home.store(), home.inventory(), users=users, fleets=fleets, settled=settled)
    assert not findings, str(findings)


def test_team_cycles_fast(home_factory: Callable[..., VmHome], postgres_url: str, figures: Figures) -> None:
    team_soak(home_factory, postgres_url, figures, 2, "team-fast")


@pytest.mark.soak
def test_team_soak(home_factory: Callable[..., VmHome], postgres_url: str, figures: Figures) -> None:
    team_soak(home_factory, postgres_url, figures, max(sizes.SOAK.rounds * 3, 6), "team-soak")


