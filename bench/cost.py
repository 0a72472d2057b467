"""`vm cost` on a large spend ledger: 10,000 VMs and 100,000 intervals in a SQLite store (issue 26: under 0.5 s).

The store is made by the store itself (SqliteFleetStore creates the schema), then filled in bulk SQL: each VM
has ten intervals over the last 30 days (running, stopped, running again at another price, ...), a tenth of the
VMs still running (the last interval open), spread over the three clouds, five users, twenty fleets and single
VMs. Each command runs as a fresh process (the installed `vm` script), round-robin with the same `vm cost` on an
empty store (the floor: interpreter, imports, session and store opened, nothing to read) after one warm-up
round: `vm cost --since 30d` (every interval inside the period), `vm cost --since 30d --by vm -o json` (10,000
rows printed) and `vm cost` (this month). The figures are medians, of wall time and, beside it, of the process's
CPU time (user + system: less sensitive to other work on a shared machine); no cloud is started or called.
"""

from __future__ import annotations

import random
import resource
import sqlite3
import sys
import time
from pathlib import Path

from common import Context, Figure, child_env, fmt, median, run_timed, spread_note, target, vm_command

COST_TARGET = 0.5  # seconds, issue 26
VMS, INTERVALS_PER_VM = 10_000, 10
SMOKE_VMS = 200
PROVIDERS = (("crusoe", "h100-80gb-sxm-ib.8x", 8, 31.6), ("lambda", "gpu_8x_h100_sxm5", 8, 23.92),
             ("nebius", "gpu-h100-sxm/8gpu-128vcpu-1600gb", 8, 23.6))
USERS = tuple(f"user{i}@host{i}" for i in range(5))
DAY = 86_400.0


def build_store(path: Path, vms: int, *, now: float, seed: int = 26) -> int:
    """A store at `path` holding `vms` ledger VMs of INTERVALS_PER_VM intervals each; the number of intervals."""
    from vm_core.fleet.store import SqliteFleetStore

    SqliteFleetStore(path)  # the schema, at the latest version
    rng = random.Random(seed)
    vm_rows, interval_rows = [], []
    for i in range(vms):
        provider, shape, gpus, price = PROVIDERS[i % len(PROVIDERS)]
        created = now - rng.uniform(1, 29) * DAY
        length = (now - created) / (INTERVALS_PER_VM + 1)
        still_running = i % 10 == 0
        fleet = f"fleet-{i % 20}" if i % 3 else ""
        start = created
        for k in range(INTERVALS_PER_VM):
            last = k == INTERVALS_PER_VM - 1
            end = None if last and still_running else start + length * rng.uniform(0.5, 1.0)
            state = "running" if k % 2 == 0 else "stopped"
            interval_rows.append((provider, "acct", f"vm-{i}", start, end, state, "on_demand",
                                  price * (1 + 0.1 * (k % 3)), "bench"))
            start = end if end is not None else start
        closed = None if still_running else start
        vm_rows.append((provider, "acct", f"vm-{i}", f"vm-{i}", shape, "region-1", "H100", gpus, "on_demand", "",
                        fleet, fleet and f"id-{fleet}", "default", USERS[i % len(USERS)], created, closed))
    with sqlite3.connect(path) as db:
        db.executemany(f"INSERT INTO ledger_vms VALUES ({', '.join('?' * 16)})", vm_rows)
        db.executemany("INSERT INTO ledger_intervals (provider, account, instance_id, started_at, ended_at, state,"
                       " pricing, price_per_hour, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", interval_rows)
    return len(interval_rows)


def run(ctx: Context) -> list[Figure]:
    home = ctx.scratch("cost-home")
    vms = SMOKE_VMS if ctx.smoke else VMS
    started = time.perf_counter()
    intervals = build_store(home / "vm.db", vms, now=time.time())
    ctx.log(f"  cost: a store of {vms} VMs and {intervals} intervals built in {time.perf_counter() - started:.1f} s")
    from vm_core.fleet.store import SqliteFleetStore

    empty = ctx.scratch("cost-empty")
    SqliteFleetStore(empty / "vm.db")  # a store without a VM: the same command's floor
    env = child_env(ctx, VM_HOME=str(home))
    vm = vm_command()
    commands = {
        "vm cost --since 30d": [*vm, "cost", "--since", "30d"],
        "vm cost --since 30d --by vm -o json": [*vm, "cost", "--since", "30d", "--by", "vm", "-o", "json"],
        "vm cost": [*vm, "cost"],
        "vm cost (empty store)": [*vm, "cost", "--since", "30d"],
    }
    envs = {name: child_env(ctx, VM_HOME=str(empty)) if "empty" in name else env for name in commands}
    for name, cmd in commands.items():  # warm-up: bytecode cached, the store in the OS cache
        run_timed(cmd, envs[name])
    times: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(ctx.runs(9)):
        for name, cmd in commands.items():
            before = _children_cpu()
            times[name].append(run_timed(cmd, envs[name]).wall)
            cpu[name].append(_children_cpu() - before)
    m = {name: median(values) for name, values in times.items()}
    c = {name: median(values) for name, values in cpu.items()}
    work = _in_process(home / "vm.db", ctx.runs(5))
    ctx.log("  cost: " + ", ".join(f"{k} {fmt(v)} s" for k, v in m.items()))
    ctx.note("cost", f"- store: {vms} VMs, {intervals} intervals (SQLite), ten per VM over the last 30 days")
    size = f"n{vms}"
    floor = m["vm cost (empty store)"]
    return [
        target(f"cost_{size}_since_30d", m["vm cost --since 30d"], "s", COST_TARGET,
               f"{spread_note(times['vm cost --since 30d'])}; every interval in the period; on an empty store "
               f"{fmt(floor)} s"),
        target(f"cost_{size}_by_vm_json", m["vm cost --since 30d --by vm -o json"], "s", COST_TARGET,
               spread_note(times["vm cost --since 30d --by vm -o json"]) + f"; {vms} rows printed"),
        Figure(f"cost_{size}_this_month", m["vm cost"], "s", "target: none; the default period",
               note=spread_note(times["vm cost"])),
        Figure(f"cost_{size}_empty_store_floor", floor, "s", "reference: the same command on a store without a VM",
               note=spread_note(times["vm cost (empty store)"])),
        Figure(f"cost_{size}_read_and_sum", median(work), "s",
               "reference: the store read and the arithmetic alone, in this process (spend.cost.costs_in + grouping)",
               note=spread_note(work)),
        Figure(f"cost_{size}_since_30d_cpu", c["vm cost --since 30d"], "s",
               f"reference: CPU (user + system) of the process, less sensitive to a loaded machine than wall time;"
               f" on an empty store {fmt(c['vm cost (empty store)'])} s", note=spread_note(cpu["vm cost --since 30d"])),
    ]


def _in_process(path: Path, runs: int) -> list[float]:
    """Seconds of `vm cost --since 30d`'s reading and arithmetic alone (no interpreter start, no session)."""
    from vm_core.fleet.store import SqliteFleetStore
    from vm_core.plugins import provider_plugins
    from vm_core.spend.cost import costs_in, rules_of
    from vm_core.spend.report import group_costs

    store, rules = SqliteFleetStore(path), rules_of(provider_plugins({}).load_all())
    found = []
    for _ in range(runs):
        started = time.perf_counter()
        now = time.time()
        group_costs(costs_in(store, since=now - 30 * DAY, until=None, now=now, rules=rules), "fleet")
        found.append(time.perf_counter() - started)
    return found


def _children_cpu() -> float:
    """User + system seconds of this process's waited-for children so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


if __name__ == "__main__":
    from run import main

    sys.exit(main(["--only", Path(__file__).stem, *sys.argv[1:]]))
