"""Keeps the benchmarks working: `bench/run.py --smoke` (tiny sizes, one repetition) must run end to end and
print every figure. Asserts nothing about speed. Takes about a minute; part of `hatch test` (hatch.toml
default-args). Also keeps bench/README.md's table of the bound model equal to the numbers the bench reads."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

RUNNER = Path(__file__).with_name("run.py")
STRATEGIES = ("cheapest", "packed", "reserved_first", "spread")  # vm-core's built-in strategies
LINE = re.compile(r"^(?P<name>[a-z0-9_]+): (?P<value>\S+) (?P<unit>\S+)(?: \((?P<reference>.*)\))?$")
EXPECTED = (
    "startup_vm_help", "startup_vm_version", "startup_vm_fleet_list_empty", "startup_vm_list_idle",
    "startup_vm_list_idle_floor", "startup_vm_list_idle_imports",
    *(f"fleet_{what}_n4_{strategy}_{figure}" for strategy in STRATEGIES for what in ("create", "destroy")
      for figure in ("wall", "ratio")),
    *(f"fleet_create_n4_{strategy}_{figure}" for strategy in STRATEGIES for figure in ("peak_rss", "threads_peak")),
    "fleet_create_n2_spread_crusoe_nebius_ratio", "fleet_destroy_n4_spread_crusoe_nebius_ratio",
    "fleet_create_growth_crusoe_nebius_n4_vs_n2", "fleet_destroy_growth_crusoe_nebius_n4_vs_n2",
    "fleet_sequential_n3_measured",
    "list_json_60_smoke_wall", "list_json_60_smoke_peak_rss", "fleet_status_12_wall",
    "fleet_status_12_list_prototype_wall",
    "mock_crusoe_throughput", "mock_lambda_throughput", "mock_nebius_throughput", "mock_nebius_p99_latency",
    "team_fleet_create_n6_pg_vs_sqlite", "team_fleet_destroy_n6_pg_vs_sqlite", "team_store_ops_2proc_pg",
    "team_store_ops_2proc_sqlite",
)


def test_smoke_run_prints_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "results.md"
    done = subprocess.run([sys.executable, str(RUNNER), "--smoke", "--out", str(out)], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    figures = {m["name"]: m for m in map(LINE.match, done.stdout.splitlines()) if m}
    assert set(EXPECTED) <= set(figures), sorted(set(EXPECTED) - set(figures))
    measured = [name for name in EXPECTED if name != "startup_vm_fleet_list_empty"]
    assert all(figures[name]["value"] != "n/a" for name in measured)
    table = out.read_text()
    assert "| cpus (nproc) |" in table and all(f"`{name}`" in table for name in EXPECTED)


def test_readme_states_the_bound_model_the_bench_reads() -> None:
    """The table of the model's numbers, and the time scales the README derives from them for its placements."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import fleet; "
            "print(fleet.MODEL_HEADER); print(*fleet.model_rows(), sep='\\n'); "
            "third = lambda n: {'crusoe': n // 3, 'lambda': n // 3, 'nebius': n - 2 * (n // 3)}; "
            "cases = [(third(n), n) for n in fleet.SIZES] + [({'nebius': n}, n) for n in fleet.SIZES]; "
            "print(*(fleet.scales(c, fleet.CREATE_SECONDS[n], fleet.DESTROY_SECONDS[n]) for c, n in cases), "
            "sep='\\n')")
    done = subprocess.run([sys.executable, "-c", code, str(RUNNER.parent)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    readme = RUNNER.with_name("README.md").read_text()
    lines = done.stdout.strip().splitlines()
    rows, scales = lines[:5], [line.strip("()").split(", ") for line in lines[5:]]
    assert len(rows) == 5 and all(row in readme for row in rows), rows
    assert len(scales) == 6 and all(f"| {create} | {destroy} |" in readme for create, destroy in scales), scales
