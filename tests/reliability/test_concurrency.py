"""Several `vm` processes at once on one store: creating, listing, asking for status and destroying different
fleets, two racing to create one name and two destroying one fleet. Afterwards the store is intact, nothing is
lost or duplicated, and exactly one racer won."""

from __future__ import annotations

import random
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest
from reliability_kit import sizes
from reliability_kit.audit import audit, fleet_vms

if TYPE_CHECKING:
    from reliability_kit.figures import Figures
    from reliability_kit.home import Run, VmHome

GPUS = ("H100", "L40S", "H200", "A100")


@dataclass(frozen=True)
class Job:
    kind: str  # create, race, destroy, list, status
    fleet: str
    args: tuple[str, ...]


def create_args(name: str, gpu: str, count: int, rng: random.Random) -> tuple[str, ...]:
    return ("fleet", "create", "--name", name, "--gpu", gpu, "--count", str(count),
            "--min-count", str(rng.randint(1, count)), "--strategy", rng.choice(["spread", "cheapest", "packed"]),
            "-q", "-o", "json")


def jobs_for(round_: int, fleets: int, doomed: list[str], rng: random.Random) -> list[Job]:
    new = [f"new{round_}-{i}" for i in range(fleets)]
    jobs = [Job("create", name, create_args(name, GPUS[i % len(GPUS)], rng.randint(1, 3), rng))
            for i, name in enumerate(new)]
    race = f"race{round_}"
    jobs += [Job("race", race, create_args(race, "L40S", 2, random.Random(round_)))] * 2
    jobs += [Job("destroy", name, ("fleet", "destroy", name, "-q", "-o", "json")) for name in doomed]
    jobs.append(Job("destroy", doomed[0], ("fleet", "destroy", doomed[0], "-q", "-o", "json")))  # twice at once
    jobs += [Job("status", name, ("fleet", "status", name, "-q", "-o", "json")) for name in doomed]
    jobs += [Job("list", "", ("fleet", "list", "-q", "-o", "json"))] * 3
    rng.shuffle(jobs)
    return jobs


def check_store_intact(home: VmHome) -> None:
    db = sqlite3.connect(f"file:{home.db}?mode=ro", uri=True, timeout=30.0)
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        db.close()


def run_round(home: VmHome, figures: Figures, round_: int, fleets: int, rng: random.Random) -> None:
    doomed = [f"old{round_}-{i}" for i in range(2)]
    for name in doomed:
        home.ok(*create_args(name, "L40S", 1, rng))
    jobs = jobs_for(round_, fleets, doomed, rng)
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        runs = list(pool.map(lambda job: home(*job.args), jobs))
    figures.add("concurrent vm processes", len(jobs))
    check_store_intact(home)
    results = list(zip(jobs, runs, strict=True))
    for run in runs:
        assert "Traceback" not in run.err and "internal error: " not in run.err, run.describe()
    creates = check_creates(home, results)
    check_race(home, [run for job, run in results if job.kind == "race"], f"race{round_}")
    check_destroys(home, results, doomed)
    check_reads(results)
    settled = creates + [f"race{round_}"]
    findings = audit(home.store(), home.inventory(), fleets=settled + doomed, settled=settled)
    for key, value in findings.counts().items():
        figures.add(key, value)
    assert not findings, str(findings)
    figures.add("concurrency rounds")


def check_creates(home: VmHome, results: list[tuple[Job, Run]]) -> list[str]:
    """Each create succeeded, or failed for capacity (the concurrent creates compete for it) leaving nothing;
    every member a create reported is in the store."""
    created = []
    for job, run in results:
        if job.kind != "create":
            continue
        assert run.code in (0, 6), run.describe()
        created.append(job.fleet)
        if run.code == 0:
            recorded = {m.instance_id for m in home.store().of(job.fleet) if m.state == "running"}
            assert {m["id"] for m in run.json()["members"]} <= recorded, run.describe()
    return created


def check_race(home: VmHome, runs: list[Run], name: str) -> None:
    """Exactly one winner: one process says the name exists (exit 2); the other created (or rolled back)."""
    losers = [r for r in runs if r.code == 2]
    assert len(losers) == 1 and "already exists" in losers[0].error()["message"], [r.describe() for r in runs]
    winner = next(r for r in runs if r.code != 2)
    assert winner.code in (0, 6), winner.describe()
    assert len(fleet_vms(home.inventory(), name)) <= 2


def check_destroys(home: VmHome, results: list[tuple[Job, Run]], doomed: list[str]) -> None:
    """Every doomed fleet is gone; of two destroys of one fleet, the later finds it already forgotten (exit 0 with
    a note) or still being destroyed under the other's lease (exit 2 naming the holder)."""
    for job, run in results:
        if job.kind == "destroy":
            assert run.code in (0, 2), run.describe()
            assert run.code == 0 or "is being changed by" in run.error()["message"], run.describe()
    for name in doomed:
        codes = sorted(run.code for job, run in results if job.kind == "destroy" and job.fleet == name)
        assert codes[0] == 0, codes
        assert name not in home.store().fleets and fleet_vms(home.inventory(), name) == []


def check_reads(results: list[tuple[Job, Run]]) -> None:
    """Lists and statuses taken in the middle of it all are complete documents (or `not found` for a fleet
    destroyed meanwhile)."""
    for job, run in results:
        if job.kind == "list":
            assert run.code == 0 and isinstance(run.json(), list), run.describe()
        elif job.kind == "status":
            assert run.code in (0, 3), run.describe()
            if run.code == 0:
                assert run.json()["name"] == job.fleet


def destroy_everything(home: VmHome) -> None:
    names = list(home.store().fleets)
    with ThreadPoolExecutor(max_workers=max(len(names), 1)) as pool:
        runs = list(pool.map(lambda name: home("fleet", "destroy", name, "-q", "-o", "json"), names))
    for run in runs:
        assert run.code == 0 and run.json()["forgotten"], run.describe()
    assert home.inventory() == [] and home.store().fleets == {}
    check_store_intact(home)


def concurrency(home: VmHome, figures: Figures, size: sizes.Sizes, purpose: str) -> None:
    rng = sizes.rng(purpose)
    for round_ in range(size.rounds):
        run_round(home, figures, round_, size.concurrent_fleets, rng)
        destroy_everything(home)


def test_concurrent_fleets_fast(home: VmHome, figures: Figures) -> None:
    concurrency(home, figures, sizes.FAST, "concurrency-fast")


@pytest.mark.soak
def test_concurrent_fleets_soak(home: VmHome, figures: Figures) -> None:
    concurrency(home, figures, sizes.SOAK, "concurrency-soak")
