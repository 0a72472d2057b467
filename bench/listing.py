"""List and status at scale: `vm list -o json` over 3,000 instances (1,000 per provider), wall time and peak
RSS; the status of a 1,000-member fleet spread over the three providers.

The world is seeded directly (worlds.seed: one template VM per provider through its API, then clones inside the
world), saved, and served by `mock-clouds serve` at the default scenario's time scale (0.05: Lambda allows one
request per 50 ms). The fleet `big` is written straight into vm's fleet store ($VM_HOME/vm.db, which `vm list`
also reads to show fleet membership): member `big-<slot>` is slot `slot` on provider `slot % 3`, running.
Both commands run as fresh processes; peak RSS is that process's ru_maxrss (os.wait4). Next to `vm fleet
status` runs bench/_fleet_status.py --refresh list, a prototype of refreshing members with one list per
provider instead of one get per member.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import worlds
from common import (
    Context,
    Figure,
    child_env,
    fmt,
    median,
    mock_server,
    prepare_world,
    profile_command,
    run_timed,
    spread_note,
    target,
    vm_command,
)

LIST_TARGET = 1.0  # s
RSS_TARGET = 150.0  # MB
STATUS_TARGET = 1.0  # s
TIME_SCALE = 0.05
FLEET = "big"
STORE = "vm.db"  # vm's fleet store under $VM_HOME (vm_core.cli.cmd_fleet)


def run(ctx: Context) -> list[Figure]:
    per_provider, members = (20, 12) if ctx.smoke else (1000, 1000)
    home = ctx.scratch("listing-home")
    state = home / "mock-clouds"
    names = {p: [f"{FLEET}-{s}" for s in range(members) if s % 3 == i] for i, p in enumerate(worlds.PROVIDERS)}
    ids: dict[str, dict[str, str]] = {}
    prepare_world(state, worlds.fleet_world, lambda clouds: ids.update(worlds.seed(clouds, per_provider, names)))
    store = _fleet_store(home / STORE, names, ids)
    env = child_env(ctx, VM_HOME=str(home))
    total = per_provider * len(worlds.PROVIDERS)
    cli = _has_fleet_status(env)
    status_cmd = {"get": _cli_status_cmd() if cli else _status_cmd(home, store, "get"),
                  "list": _status_cmd(home, store, "list")}
    ctx.log(f"  fleet status command: {' '.join(Path(a).name for a in status_cmd['get'][:4])}")
    with mock_server(ctx, state, time_scale=TIME_SCALE):
        listed = _list(ctx, env, total)
        status = {how: _status(ctx, env, cmd, how, members) for how, cmd in status_cmd.items()}
        if ctx.profile_dir:
            _profiles(ctx, env, status_cmd["get"])
    ctx.note("listing", f"- {total} instances ({per_provider} per provider), fleet `{FLEET}` of {members} members; "
                        f"mock time scale {TIME_SCALE} (Lambda: one request per {fmt(1.0 * TIME_SCALE)} s)")
    walls, rss = [t[0] for t in listed], [t[1] for t in listed]
    tag = f"{total}" if not ctx.smoke else f"{total}_smoke"
    return [
        target(f"list_json_{tag}_wall", median(walls), "s", LIST_TARGET, spread_note(walls)),
        target(f"list_json_{tag}_peak_rss", median(rss), "MB", RSS_TARGET, "ru_maxrss of the `vm` process"),
        target(f"fleet_status_{members}_wall", median(status["get"]), "s", STATUS_TARGET,
               f"{spread_note(status['get'])}; " + ("`vm fleet status big -o json`" if cli else
                                                    "vm_core FleetDestroyer.view in a fresh process "
                                                    "(`vm fleet status` is not in the CLI)")),
        Figure(f"fleet_status_{members}_list_prototype_wall", median(status["list"]), "s",
               f"reference: the list-per-provider prototype `vm fleet status` now follows; the command takes "
               f"{fmt(median(status['get']) / median(status['list']))} x its time",
               note=f"{spread_note(status['list'])}; bench/_fleet_status.py --refresh list"),
    ]


def _fleet_store(path: Path, names: dict[str, list[str]], ids: dict[str, dict[str, str]]) -> Path:
    from vm_core.fleet.store import FleetRecord, FleetState, MemberRecord, MemberState, SqliteFleetStore

    store = SqliteFleetStore(path)
    count = sum(len(v) for v in names.values())
    store.create_fleet(FleetRecord(name=FLEET, gpu=worlds.GPU, gpu_count=worlds.GPU_COUNT, count=count,
                                   min_count=count, strategy="spread", state=FleetState.ACTIVE, owner_pid=0))
    for provider, member_names in names.items():
        region, shape = worlds.OFFERS[provider]
        for name in member_names:
            store.add_member(MemberRecord(fleet=FLEET, slot=int(name.rsplit("-", 1)[1]), attempt=1,
                                          provider=provider, name=name, region=region, shape=shape,
                                          state=MemberState.RUNNING, instance_id=ids[provider][name]))
    store.close()
    return path


def _list(ctx: Context, env: dict[str, str], expected: int) -> list[tuple[float, float]]:
    out = ctx.workdir / "list.json"
    cmd = [*vm_command(), "list", "-o", "json"]
    run_timed(cmd, env, stdout=out)  # warm-up
    results = []
    for _ in range(ctx.runs(5)):
        timed = run_timed(cmd, env, stdout=out)
        count = len(json.loads(out.read_text()))
        if count != expected:
            raise RuntimeError(f"vm list -o json listed {count} instances, expected {expected}")
        results.append((timed.wall, timed.max_rss / 2**20))
    ctx.log(f"  vm list -o json: {', '.join(f'{fmt(w)} s / {fmt(r)} MB' for w, r in results)}")
    return results


def _has_fleet_status(env: dict[str, str]) -> bool:
    done = subprocess.run([*vm_command(), "fleet", "status", "--help"], env=env, capture_output=True, timeout=60)
    return done.returncode == 0


def _cli_status_cmd() -> list[str]:
    return [*vm_command(), "fleet", "status", FLEET, "-o", "json"]


def _status_cmd(home: Path, store: Path, how: str) -> list[str]:
    script = Path(__file__).with_name("_fleet_status.py")
    return [sys.executable, str(script), "--store", str(store), "--endpoints",
            str(home / "mock-clouds" / "endpoints.json"), "--name", FLEET, "--refresh", how]


def _status(ctx: Context, env: dict[str, str], cmd: list[str], how: str, members: int) -> list[float]:
    out = ctx.workdir / f"status-{how}.json"
    walls = []
    for _ in range(ctx.runs(3)):
        walls.append(run_timed(cmd, env, stdout=out).wall)
        running = sum(1 for m in json.loads(out.read_text())["members"] if m["state"] == "running")
        if running != members:
            raise RuntimeError(f"fleet status ({how}) showed {running} running members, expected {members}")
    ctx.log(f"  fleet status ({how}): {', '.join(fmt(w) for w in walls)} s")
    return walls


def _profiles(ctx: Context, env: dict[str, str], status_cmd: list[str]) -> None:
    assert ctx.profile_dir is not None
    profile_command([*vm_command(), "list", "-o", "json"], env, ctx.profile_dir / "list_json.txt")
    profile_command(status_cmd, env, ctx.profile_dir / "fleet_status.txt")


if __name__ == "__main__":
    from run import main

    sys.exit(main(["--only", Path(__file__).stem, *sys.argv[1:]]))
