"""Start-up: `vm --help`, `vm --version`, `vm fleet list` (empty store) and `vm list` against idle local mocks.

Each command runs as a fresh process (the installed `vm` script), round-robin with references measured in the
same loop: `python -c pass`, a minimal click CLI's `--help`, and the floor of `vm list` (bench/_list_floor.py:
the modules a `vm list` process loads, imported, then one round trip per provider) with its imports alone.
One warm-up round first (bytecode cached).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from common import (
    Context,
    Figure,
    child_env,
    fmt,
    median,
    mock_server,
    prepare_world,
    run_timed,
    spread_note,
    target,
    vm_command,
)

HELP_TARGET = 0.10
LIST_TARGET = 0.25  # issue 13

MINIMAL_CLICK = '''
import click

@click.group()
def cli():
    """A minimal click CLI."""

@cli.command()
def hello():
    """Say hello."""

cli()
'''


def run(ctx: Context) -> list[Figure]:
    home = ctx.scratch("startup-home")
    minimal = ctx.workdir / "minimal_click.py"
    minimal.write_text(MINIMAL_CLICK)
    env = child_env(ctx, VM_HOME=str(home))
    vm = vm_command()
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "minimal click --help": [sys.executable, str(minimal), "--help"],
        "vm --help": [*vm, "--help"],
        "vm --version": [*vm, "--version"],
        "vm list": [*vm, "list"],
    }
    if _has_fleet_command(vm, env):
        commands["vm fleet list"] = [*vm, "fleet", "list"]
    prepare_world(home / "mock-clouds", None)  # the default scenario, no instances: "idle local mocks"
    with mock_server(ctx, home / "mock-clouds"):
        modules = ctx.workdir / "vm-list-modules.txt"
        floor = [sys.executable, str(Path(__file__).with_name("_list_floor.py")), "--modules", str(modules)]
        run_timed([*floor[:2], "--record-modules", str(modules)], env)
        commands["vm list imports"] = floor
        commands["vm list floor"] = [*floor, "--endpoints", str(home / "mock-clouds" / "endpoints.json")]
        times = _round_robin(ctx, commands, env, rounds=ctx.runs(15))
        ctx.note("startup", f"- `vm list` floor: {len(modules.read_text().split())} modules imported (those a "
                            "`vm list` process had loaded), then one listing call per provider, concurrently")
    return _figures(times, "vm fleet list" in commands)


def _has_fleet_command(vm: list[str], env: dict[str, str]) -> bool:
    done = subprocess.run([*vm, "fleet", "--help"], env=env, capture_output=True, timeout=60)
    return done.returncode == 0


def _round_robin(ctx: Context, commands: dict[str, list[str]], env: dict[str, str],
                 rounds: int) -> dict[str, list[float]]:
    for cmd in commands.values():  # warm-up: bytecode compiled into the cache, OS caches warm
        run_timed(cmd, env)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, cmd in commands.items():
            times[name].append(run_timed(cmd, env).wall)
    ctx.log("  start-up: " + ", ".join(f"{k} {fmt(median(v))} s" for k, v in times.items()))
    return times


def _figures(times: dict[str, list[float]], has_fleet: bool) -> list[Figure]:
    m = {name: median(values) for name, values in times.items()}
    figures = [
        target("startup_vm_help", m["vm --help"], "s", HELP_TARGET, spread_note(times["vm --help"])),
        Figure("startup_vm_version", m["vm --version"], "s", "target: none; --help's is 0.10 s",
               note=spread_note(times["vm --version"])),
    ]
    if has_fleet:
        figures.append(Figure("startup_vm_fleet_list_empty", m["vm fleet list"], "s", "target: none",
                              note=spread_note(times["vm fleet list"])))
    else:
        figures.append(Figure("startup_vm_fleet_list_empty", float("nan"), "s",
                              "not measured: `vm fleet` is not in the CLI yet"))
    figures += [
        target("startup_vm_list_idle", m["vm list"], "s", LIST_TARGET,
               spread_note(times["vm list"]) + "; default scenario, no instances, mocks already running"),
        Figure("startup_vm_list_idle_floor", m["vm list floor"], "s",
               f"reference: interpreter start + vm list's imports + one round trip per provider; vm list is "
               f"{fmt(m['vm list'] / m['vm list floor'])} x this",
               note=f"{spread_note(times['vm list floor'])}; bench/_list_floor.py; the floor's parts: interpreter "
                    f"{fmt(m['python -c pass'])} s, imports {fmt(m['vm list imports'] - m['python -c pass'])} s, "
                    f"round trips {fmt(m['vm list floor'] - m['vm list imports'])} s"),
        Figure("startup_vm_list_idle_imports", m["vm list imports"], "s",
               "reference: interpreter start + the modules a `vm list` process loads",
               note=spread_note(times["vm list imports"])),
        Figure("startup_python_baseline", m["python -c pass"], "s", "reference: interpreter start",
               note=spread_note(times["python -c pass"])),
        Figure("startup_click_minimal_help", m["minimal click --help"], "s", "reference: a minimal click CLI",
               note=spread_note(times["minimal click --help"])),
        Figure("startup_vm_help_vs_minimal_click", m["vm --help"] / m["minimal click --help"], "x",
               "ratio, same rounds", note="median/median"),
    ]
    return figures


if __name__ == "__main__":
    from run import main

    sys.exit(main(["--only", Path(__file__).stem, *sys.argv[1:]]))
