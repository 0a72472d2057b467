"""Team mode: what the PostgreSQL fleet store costs next to the SQLite one.

1. Fleet create and destroy of N VMs (bench/fleet.py `one_run`: fresh world, separate mock-clouds process, the
   fleet manager in this process) with the store in a local PostgreSQL cluster and with the SQLite file,
   interleaved run by run, as a ratio of medians measured in one run (goal: within 1.05 x). The `packed` strategy
   puts every VM on the provider without rate limits, so the tool's own overhead (the store's included) shows
   most; at that size the spread case is bound by Lambda's launch limit instead.
2. Store operations per second with P processes at once, each recording its own fleet the way a create does
   (add the intent, record the instance id, record running, read the fleet back: four operations per VM), on
   PostgreSQL and on SQLite.

The cluster is a throwaway one from tests/pgcluster.py (PostgreSQL 15 binaries of the machine; fsync off, so
these figures are the store's CPU and round-trip cost, not a disk's). Without PostgreSQL the figures are n/a.
"""

from __future__ import annotations

import subprocess
import sys
import time

import fleet
from common import REPO, Context, Figure, child_env, fmt, median, spread_note

sys.path.insert(0, str(REPO / "tests"))

import pgcluster  # noqa: E402

RATIO_GOAL = 1.05
# Five runs per backend: one run's create or destroy varies by about 5 %, the size of the goal itself.
FULL = {"fleet": (300, 0.02, "packed"), "runs": 5, "processes": 8, "seconds": 10.0}
SMOKE = {"fleet": (6, 0.002, "spread"), "runs": 1, "processes": 2, "seconds": 1.0}

WORKER = """
import sys, time
from pathlib import Path
from vm_core.fleet.location import store_at
from vm_core.fleet.store import FleetRecord, MemberRecord, MemberState

url, state_dir, name = sys.argv[1] or None, Path(sys.argv[2]), sys.argv[3]
seconds, start_at = float(sys.argv[4]), float(sys.argv[5])
store = store_at(url, state_dir)
store.create_fleet(FleetRecord(name=name, gpu="H100", gpu_count=None, count=1, min_count=1,
                               strategy="spread"))
while time.time() < start_at:
    time.sleep(0.001)
ops, slot, end = 0, 0, start_at + seconds
while time.time() < end:
    store.add_member(MemberRecord(fleet=name, slot=slot, attempt=1, provider="nebius", name=f"{name}-{slot}"))
    store.update_member(name, slot, 1, state=MemberState.CREATING, instance_id=f"computeinstance-{slot}")
    store.update_member(name, slot, 1, state=MemberState.RUNNING)
    store.get_fleet(name)
    ops, slot = ops + 4, slot + 1
print(ops)
"""


def run(ctx: Context) -> list[Figure]:
    case = SMOKE if ctx.smoke else FULL
    n, scale, strategy = case["fleet"]
    names = (f"team_fleet_create_n{n}_pg_vs_sqlite", f"team_fleet_destroy_n{n}_pg_vs_sqlite",
             f"team_store_ops_{case['processes']}proc_pg", f"team_store_ops_{case['processes']}proc_sqlite")
    try:
        cluster = pgcluster.start()
    except pgcluster.Unavailable as exc:
        ctx.log(f"  team store: PostgreSQL unavailable: {exc}")
        ctx.note("teamstore", f"- not measured: PostgreSQL unavailable ({str(exc).splitlines()[0]})")
        return [Figure(name, float("nan"), "x" if "fleet" in name else "ops/s") for name in names]
    try:
        return _fleet(ctx, cluster, n, scale, strategy, case["runs"], names[:2]) + \
            _ops(ctx, cluster, case["processes"], case["seconds"], names[2:])
    finally:
        cluster.stop()


def _fleet(ctx: Context, cluster: pgcluster.PgCluster, n: int, scale: float, strategy: str, runs: int,
           names: tuple[str, ...]) -> list[Figure]:
    results: dict[str, list[fleet.RunResult]] = {"sqlite": [], "pg": []}
    for attempt in range(runs):
        # interleaved, the order swapped every run: a drift of the machine's load, or whatever the run before
        # left behind, hits both alike
        for backend in ("sqlite", "pg") if attempt % 2 == 0 else ("pg", "sqlite"):
            url = cluster.database() if backend == "pg" else None
            ctx.log(f"  team fleet N={n} {strategy} on {backend}, run {attempt + 1}")
            results[backend].append(fleet.one_run(ctx, n, scale, strategy, f"team-{backend}-{attempt}",
                                                  store_url=url))
            r = results[backend][-1]
            ctx.log(f"    create {fmt(r.create)} s, destroy {fmt(r.destroy)} s")
    figures = []
    for name, phase in zip(names, ("create", "destroy"), strict=True):
        sqlite = median([getattr(r, phase) for r in results["sqlite"]])
        pg = median([getattr(r, phase) for r in results["pg"]])
        figures.append(Figure(name, pg / sqlite, "x", f"goal: <= {RATIO_GOAL} x", pg / sqlite <= RATIO_GOAL,
                              note=f"fleet {phase} of {n} VMs ({strategy}, time scale {scale}): PostgreSQL "
                                   f"{fmt(pg)} s, {spread_note([getattr(r, phase) for r in results['pg']])}; "
                                   f"SQLite {fmt(sqlite)} s, "
                                   f"{spread_note([getattr(r, phase) for r in results['sqlite']])}"))
    return figures


def _ops(ctx: Context, cluster: pgcluster.PgCluster, processes: int, seconds: float,
         names: tuple[str, ...]) -> list[Figure]:
    figures = []
    for name, backend in zip(names, ("pg", "sqlite"), strict=True):
        url = cluster.database() if backend == "pg" else None
        state_dir = ctx.scratch(f"team-ops-{backend}")
        start_at = time.time() + 3.0 + 0.2 * processes  # every worker imports and connects before the start
        workers = [subprocess.Popen([sys.executable, "-c", WORKER, url or "", str(state_dir), f"f{i}",
                                     str(seconds), str(start_at)], env=child_env(ctx), stdout=subprocess.PIPE,
                                    text=True) for i in range(processes)]
        counts = [int(w.communicate(timeout=300)[0].strip()) for w in workers]
        rate = sum(counts) / seconds
        ctx.log(f"  team store ops on {backend}: {processes} processes, {fmt(rate)} ops/s")
        figures.append(Figure(name, rate, "ops/s", note=f"{processes} processes for {fmt(seconds)} s, each its own "
                                                        f"fleet; per process {min(counts)}..{max(counts)} ops"))
    return figures
