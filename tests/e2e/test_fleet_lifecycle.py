"""Fleet budgets, expiry and watching through the real `vm`, checked against the mock clouds' own inventory:
`--max-price` refuses before anything exists, `--ttl` is recorded and shown, `vm fleet reap` destroys exactly the
expired fleets (and runs as docs/fleets.md tells cron and systemd to run it), `vm fleet status --watch` on a pipe
and on a pseudo-terminal, stopped by a real SIGINT."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shlex
import shutil
import signal
import subprocess
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from .conftest import VM, VmHome

NEBIUS = ["--gpu", "H100", "--providers", "nebius"]
DOCS = Path(__file__).resolve().parents[2] / "docs" / "fleets.md"
CLEAR = b"\x1b[H\x1b[2J"


def live_names(vm: VmHome, prefix: str) -> list[str]:
    return sorted(i["name"] for i in vm.inventory()
                  if i["name"].startswith(prefix) and i["state"] not in ("terminated", "terminating"))


def fleet_names(vm: VmHome) -> list[str]:
    return [f["name"] for f in vm.ok("fleet", "list", "-o", "json").json()]


def wait_until_expired(status: dict[str, Any]) -> None:
    """Sleep until the wall clock passes the fleet's expires_at (expiry is defined by the clock)."""
    left = datetime.fromisoformat(status["expires_at"]).timestamp() - time.time()
    time.sleep(max(left, 0) + 0.2)


# ------------------------------------------------------------------------------------------------- budgets
def test_a_plan_above_the_cap_creates_nothing_and_records_nothing(shared_home: VmHome) -> None:
    vm = shared_home
    plan = vm.ok("fleet", "create", *NEBIUS, "--count", "2", "--name", "capped", "--dry-run", "-o", "json").json()
    total = plan["price_per_hour"]
    cap = round(total - 0.01, 2)
    before = vm.inventory()
    refused = vm("fleet", "create", *NEBIUS, "--count", "2", "--name", "capped", "--max-price", str(cap),
                 "-o", "json")
    assert refused.code == 6 and refused.out == ""
    error = refused.error()
    assert error["code"] == "budget"
    assert f"${total:.2f}/h" in error["message"] and f"--max-price {cap:.2f}" in error["message"]
    assert vm.inventory() == before
    assert "capped" not in fleet_names(vm) and vm("fleet", "status", "capped").code == 3
    table = vm("fleet", "create", *NEBIUS, "--count", "2", "--name", "capped", "--max-price", str(cap))
    assert table.code == 6 and "vm: error: the plan costs" in table.err and "Traceback" not in table.err


def test_dry_run_shows_the_total_and_the_cap(shared_home: VmHome) -> None:
    vm = shared_home
    plan = vm.ok("fleet", "create", *NEBIUS, "--count", "2", "--name", "drycap", "--max-price", "1000",
                 "--ttl", "2d", "-o", "json", "--dry-run").json()
    assert plan["max_price"] == 1000.0 and plan["price_per_hour"] > 0 and plan["price_complete"]
    assert plan["ttl_seconds"] == 172800
    table = vm.ok("fleet", "create", *NEBIUS, "--count", "2", "--name", "drycap", "--max-price", "1000",
                  "--dry-run")
    assert f"total $/h  {plan['price_per_hour']:.2f}" in table.out and "max $/h    1000.00" in table.out
    before = vm.inventory()
    over = vm("fleet", "create", *NEBIUS, "--count", "2", "--name", "drycap", "--max-price", "0.5", "--dry-run")
    assert over.code == 6 and "max $/h    0.50" in over.out and "above the cap --max-price 0.50" in over.err
    assert vm.inventory() == before and "drycap" not in fleet_names(vm)


@pytest.mark.parametrize("value", ["0", "-5", "abc", "nan", "inf"])
def test_a_bad_max_price_is_exit_2(shared_home: VmHome, value: str) -> None:
    result = shared_home("fleet", "create", *NEBIUS, "--count", "1", "--name", "badcap", "--max-price", value)
    assert result.code == 2 and "--max-price" in result.err and "Traceback" not in result.err
    assert "badcap" not in fleet_names(shared_home)


# ------------------------------------------------------------------------------------------------- expiry
@pytest.mark.parametrize("value", ["0s", "8", "h", "1.5h", "-1h", "8x", "366d", "8 h", ""])
def test_a_bad_ttl_is_exit_2_before_anything(shared_home: VmHome, value: str) -> None:
    before = live_names(shared_home, "badttl")
    result = shared_home("fleet", "create", *NEBIUS, "--count", "1", "--name", "badttl", "--ttl", value,
                         "-o", "json")
    assert result.code == 2 and result.out == "" and "--ttl" in result.error()["message"]
    assert live_names(shared_home, "badttl") == before == []
    assert "badttl" not in fleet_names(shared_home)


def test_status_and_list_show_when_a_fleet_expires(shared_home: VmHome) -> None:
    vm = shared_home
    made = vm.ok("fleet", "create", *NEBIUS, "--count", "1", "--name", "timed", "--ttl", "1h30m", "--max-price",
                 "100", "-o", "json").json()
    lasts = datetime.fromisoformat(made["expires_at"]) - datetime.fromisoformat(made["created_at"])
    assert lasts.total_seconds() == pytest.approx(5400, abs=0.01) and made["max_price"] == 100.0
    status = vm.ok("fleet", "status", "timed", "-o", "json").json()
    assert (status["expires_at"], status["max_price"]) == (made["expires_at"], 100.0)
    expires = datetime.fromisoformat(made["expires_at"]).strftime("%Y-%m-%d %H:%M:%S")
    assert f"expires    {expires} UTC" in vm.ok("fleet", "status", "timed").out
    listed = {f["name"]: f for f in vm.ok("fleet", "list", "-o", "json").json()}
    assert listed["timed"]["expires_at"] == made["expires_at"]
    rows = vm.ok("fleet", "list").out.splitlines()
    assert "EXPIRES" in rows[0] and any(r.startswith("timed ") and expires in r for r in rows)
    plain = vm.ok("fleet", "create", *NEBIUS, "--count", "1", "--name", "untimed", "-o", "json").json()
    assert plain["expires_at"] is None and plain["max_price"] is None
    assert "expires    never" in vm.ok("fleet", "status", "untimed").out
    vm.ok("fleet", "destroy", "timed")
    vm.ok("fleet", "destroy", "untimed")


def test_reap_destroys_only_expired_fleets_and_never_a_look_alike(fresh_home: VmHome) -> None:
    vm = fresh_home
    vm.ok("create", "--provider", "nebius", "--gpu", "H100", "--count", "2", "--name", "old")  # old-1, old-2
    old = vm.ok("fleet", "create", *NEBIUS, "--count", "2", "--name", "old", "--ttl", "1s", "-o", "json").json()
    young = vm.ok("fleet", "create", *NEBIUS, "--count", "1", "--name", "young", "--ttl", "8h", "-o", "json").json()
    vm.ok("fleet", "create", *NEBIUS, "--count", "1", "--name", "forever")
    wait_until_expired(old)
    before, fleets = vm.inventory(), vm.ok("fleet", "list", "-o", "json").json()
    dry = vm.ok("fleet", "reap", "--dry-run", "-o", "json").json()
    assert dry["dry_run"] is True
    assert [(f["name"], f["result"], f["vms"]) for f in dry["fleets"]] == [("old", "would-destroy", 2)]
    assert vm.inventory() == before and vm.ok("fleet", "list", "-o", "json").json() == fleets
    reaped = vm.ok("fleet", "reap", "-o", "json").json()  # stdin is not a terminal: no question
    assert [(f["name"], f["result"], f["vms"]) for f in reaped["fleets"]] == [("old", "destroyed", 2)]
    actions = {(a["name"], a["action"]) for a in reaped["fleets"][0]["actions"]}
    assert {(m["name"], "destroyed") for m in old["members"]} <= actions
    assert live_names(vm, "old") == ["old-1", "old-2"]
    assert live_names(vm, "young") == [m["name"] for m in young["members"]] and len(live_names(vm, "forever")) == 1
    assert fleet_names(vm) == ["young", "forever"]
    again = vm.ok("fleet", "reap")
    assert again.out == "" and "no fleet has expired" in again.err


def test_reap_skips_a_fleet_of_another_account_and_goes_on(fresh_home: VmHome) -> None:
    vm = fresh_home
    vm.ok("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "acct", "--providers", "lambda",
          "--ttl", "1s")
    mine = vm.ok("fleet", "create", *NEBIUS, "--count", "1", "--name", "mine", "--ttl", "1s", "-o", "json").json()
    vm.config('[profiles.local]\nembedded = true\n\n'
              '[profiles.other]\nembedded = true\n[profiles.other.lambda]\napi_key = "secret_other_0123456789"\n')
    wait_until_expired(mine)  # created last: both have expired
    result = vm("fleet", "reap", "--profile", "other", "-o", "json")
    assert result.code == 7, result.err
    outcome = {f["name"]: f for f in result.json()["fleets"]}
    assert outcome["acct"]["result"] == "skipped" and "refusing to act on another account" in outcome["acct"]["reason"]
    assert outcome["mine"]["result"] == "destroyed"
    assert "secret_other" not in result.out + result.err
    assert len(live_names(vm, "acct--")) == 1 and live_names(vm, "mine--") == []
    assert vm.ok("fleet", "reap", "-o", "json").json()["fleets"][0]["result"] == "destroyed"
    assert live_names(vm, "acct--") == [] and fleet_names(vm) == []


def test_reap_on_a_terminal_asks_first(fresh_home: VmHome) -> None:
    vm = fresh_home
    made = vm.ok("fleet", "create", *NEBIUS, "--count", "1", "--name", "asked", "--ttl", "1s", "-o", "json").json()
    wait_until_expired(made)
    code, screen = on_a_terminal(vm, ["fleet", "reap"], b"n\n")
    assert code == 1 and "asked" in screen and "Destroy 1 expired fleet(s)? [y/N]" in screen
    assert "vm: error: cancelled: nothing was destroyed" in screen and "hint: vm fleet reap --yes" in screen
    assert len(live_names(vm, "asked--")) == 1 and fleet_names(vm) == ["asked"]
    code, screen = on_a_terminal(vm, ["fleet", "reap"], b"y\n")
    assert code == 0 and live_names(vm, "asked--") == [] and fleet_names(vm) == []


def on_a_terminal(vm: VmHome, args: list[str], answer: bytes) -> tuple[int, str]:
    """Run vm with stdin, stdout and stderr on a pseudo-terminal; answer the [y/N] question. (exit code, screen)"""
    primary, secondary = pty.openpty()
    proc = subprocess.Popen([VM, *args], env=vm.env, stdin=secondary, stdout=secondary, stderr=secondary)
    os.close(secondary)
    try:
        seen = read_until(primary, lambda seen: b"[y/N]" in seen)
        os.write(primary, answer)
        seen += read_until(primary, lambda _: False)  # to EOF: the process ended
        code = proc.wait(timeout=300)
    finally:
        os.close(primary)
    return code, seen.decode(errors="replace").replace("\r\n", "\n")


def test_watch_as_json_prints_one_document_per_line(shared_home: VmHome) -> None:
    vm = shared_home
    vm.ok("fleet", "create", *NEBIUS, "--count", "1", "--name", "jsonwatch")
    watched = vm.ok("fleet", "status", "jsonwatch", "--watch", "--interval", "0.1", "-o", "json")
    lines = watched.out.splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["state"] == "active"
    assert "fleet jsonwatch is settled: active" in watched.err
    alone = vm("fleet", "status", "jsonwatch", "--interval", "1")
    assert alone.code == 2 and "--interval only applies with --watch" in alone.err
    vm.ok("fleet", "destroy", "jsonwatch")


def _docs_block(language: str, containing: str) -> str:
    blocks = re.findall(rf"```{language}\n(.*?)```", DOCS.read_text(), re.S)
    return next(b for b in blocks if containing in b)


def test_the_crontab_line_and_systemd_units_of_the_docs_really_run(fresh_home: VmHome, tmp_path: Path) -> None:
    vm = fresh_home
    cron_line = _docs_block("crontab", "vm fleet reap").strip()
    schedule, command = cron_line.split(maxsplit=5)[:5], cron_line.split(maxsplit=5)[5]
    assert schedule == ["*/15", "*", "*", "*", "*"]
    service = _docs_block("ini", "[Service]")
    timer = _docs_block("ini", "[Timer]")
    exec_start = re.search(r"^ExecStart=(.*)$", service, re.M).group(1)  # type: ignore[union-attr]
    calendar = re.search(r"^OnCalendar=(.*)$", timer, re.M).group(1)  # type: ignore[union-attr]
    if shutil.which("systemd-analyze"):
        assert subprocess.run(["systemd-analyze", "calendar", calendar], capture_output=True).returncode == 0
    home = tmp_path / "user"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "vm").symlink_to(VM)
    runs = [(["sh", "-c", command], {"PATH": f"{Path(VM).parent}:/usr/bin:/bin"}),  # cron runs it with sh
            (shlex.split(exec_start.replace("%h", str(home))), {"HOME": str(home)})]
    for argv, env in runs:
        made = vm.ok("fleet", "create", *NEBIUS, "--count", "1", "--name", "nightly", "--ttl", "1s",
                     "-o", "json").json()
        wait_until_expired(made)
        done = subprocess.run(argv, env={**vm.env, **env}, capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL, check=False)
        assert done.returncode == 0, done.stderr
        assert live_names(vm, "nightly") == [] and fleet_names(vm) == []


# ------------------------------------------------------------------------------------------------- watching
@pytest.fixture(scope="module")
def slow_home(tmp_path_factory: pytest.TempPathFactory):
    """Mock clouds slow enough that a Lambda VM takes seconds to boot."""
    home = VmHome(tmp_path_factory.mktemp("vm-slow-watch"))
    home.env["VM_MOCK_TIME_SCALE"] = "0.05"
    home.ok("providers")
    yield home
    home.stop()


def paused_create(vm: VmHome, name: str, *extra: str) -> subprocess.Popen[bytes]:
    """A `vm fleet create` stopped (SIGSTOP) once its fleet is recorded and still creating: it holds the lease,
    and the fleet cannot settle until the process is continued (SIGCONT)."""
    proc = subprocess.Popen([VM, "fleet", "create", "--gpu", "H100", "--count", "1", "--providers", "lambda",
                             "--name", name, *extra], env=vm.env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    while name not in fleet_names(vm):
        assert proc.poll() is None, "the create ended before its fleet was seen"
        time.sleep(0.05)
    proc.send_signal(signal.SIGSTOP)
    listed = {f["name"]: f for f in vm.ok("fleet", "list", "-o", "json").json()}
    assert listed[name]["state"] == "creating"
    return proc


def read_until(fd: int, done: Any, limit: float = 120.0) -> bytes:
    """Bytes from `fd` until done(bytes so far) or EOF; fails after `limit` seconds without it."""
    seen, deadline = b"", time.monotonic() + limit
    while not done(seen):
        assert time.monotonic() < deadline, seen.decode(errors="replace")
        ready, _, _ = select.select([fd], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    return seen


def test_reap_skips_a_fleet_whose_lease_is_held_and_watch_prints_each_change(slow_home: VmHome) -> None:
    vm = slow_home
    creator = paused_create(vm, "busy", "--ttl", "1s")
    try:
        wait_until_expired(vm.ok("fleet", "status", "busy", "-o", "json").json())
        held = vm("fleet", "reap", "-o", "json")
        assert held.code == 7
        [busy] = held.json()["fleets"]
        assert busy["result"] == "skipped" and "being changed by" in busy["reason"] and "fleet create" in busy["reason"]
        watcher = subprocess.Popen([VM, "fleet", "status", "busy", "--watch", "--interval", "0.2"], env=vm.env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert watcher.stdout is not None
        first = read_until(watcher.stdout.fileno(), lambda seen: b"\n\n" in seen)
        assert b"state      creating" in first and watcher.poll() is None
    finally:
        creator.send_signal(signal.SIGCONT)
    assert creator.wait(timeout=300) == 0
    out, err = watcher.communicate(timeout=300)
    assert watcher.returncode == 0, err
    blocks = [b for b in (first + out).decode().split("\n\n") if b.strip()]
    assert len(blocks) >= 2 and "state      creating" in blocks[0] and "state      active" in blocks[-1]
    assert all(a != b for a, b in zip(blocks, blocks[1:], strict=False))  # a view is printed only when it changed
    assert b"fleet busy is settled: active" in err and b"\x1b[" not in out
    assert vm.ok("fleet", "reap", "-o", "json").json()["fleets"][0]["result"] == "destroyed"
    assert live_names(vm, "busy") == []


def test_watch_redraws_in_place_on_a_terminal_until_ctrl_c_then_stops_when_the_record_is_gone(
        slow_home: VmHome) -> None:
    vm = slow_home
    creator = paused_create(vm, "seen")
    primary, secondary = pty.openpty()
    watcher = subprocess.Popen([VM, "fleet", "status", "seen", "--watch", "--interval", "0.2"], env=vm.env,
                               stdin=secondary, stdout=secondary, stderr=secondary)
    os.close(secondary)
    try:
        screen = read_until(primary, lambda seen: seen.count(CLEAR) >= 3)
        assert watcher.poll() is None and b"state      creating" in screen
        watcher.send_signal(signal.SIGINT)
        screen += read_until(primary, lambda seen: b"stopped watching" in seen)
        assert watcher.wait(timeout=60) == 130
    finally:
        os.close(primary)
        creator.send_signal(signal.SIGKILL)  # works on a stopped process: the create dies mid-way
        creator.wait(timeout=60)
    text = screen.decode(errors="replace")
    assert "Traceback" not in text and "vm: error: stopped watching fleet seen; nothing was changed" in text
    assert "refreshed" in text and "Ctrl-C stops" in text
    # The creator is gone: the fleet is interrupted, which does not settle by itself; destroying it ends the watch.
    watcher = subprocess.Popen([VM, "fleet", "status", "seen", "--watch", "--interval", "0.2"], env=vm.env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert watcher.stdout is not None
    first = read_until(watcher.stdout.fileno(), lambda seen: b"\n\n" in seen)
    assert b"state      interrupted" in first
    if vm("fleet", "destroy", "seen").code != 0:  # the killed create's VM still settling: a re-run finishes
        vm.ok("fleet", "destroy", "seen")
    out, err = watcher.communicate(timeout=300)
    assert watcher.returncode == 0 and b"fleet seen is gone" in err, err
    assert live_names(vm, "seen") == []
