"""Every hint `vm` prints is a command that works: collected across scenarios, then each one is run.

A hint is the `hint:` line of an error (or `suggestion` under -o json) and the command of the autostart line. Its
commands are the text between backticks, or the whole hint when it is a command (`vm ...`, `chmod ...`). They are
run as a user would run them, by a shell whose PATH has `vm`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conftest import Run, VmHome

BIN = str(Path(sys.executable).parent)
BACKTICKED = re.compile(r"`([^`]+)`")
UNKNOWN = {"crusoe": "00000000-0000-4000-8000-000000000000", "lambda": "0" * 32}


def hints(run: Run) -> list[str]:
    """The hints of one run: `hint:` lines, JSON suggestions and the autostart line's command."""
    found = []
    for line in run.err.splitlines():
        if line.startswith("hint: "):
            found.append(line.removeprefix("hint: "))
        elif line.startswith('{"error"'):
            found.append(json.loads(line)["error"].get("suggestion") or "")
        elif line.startswith("vm: starting the local mock clouds"):
            found.append(line)
    return [h for h in found if h]


def commands(hint: str) -> list[str]:
    quoted = BACKTICKED.findall(hint)
    if quoted:
        return quoted
    return [hint] if hint.startswith(("vm ", "chmod ")) else []


def shell(home: VmHome, command: str) -> subprocess.CompletedProcess[str]:
    env = {**home.env, "PATH": f"{BIN}{os.pathsep}{home.env.get('PATH', '')}"}
    return subprocess.run(["/bin/sh", "-c", command], env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL, check=False)


def assert_runs(home: VmHome, command: str) -> None:
    done = shell(home, command)
    said = done.stdout + done.stderr
    assert "Traceback (most recent call last)" not in said, (command, said)
    assert "No such option" not in said and "Missing option" not in said, (command, said)
    if command.startswith("vm "):
        assert done.returncode not in (2, 127), (command, said)  # parsed, ran; may fail for its own reasons
    else:
        assert done.returncode == 0, (command, said)


def test_every_hint_is_a_command_that_runs(fresh_home: VmHome) -> None:
    home = fresh_home
    runs = [home("list", env={"VM_NO_AUTOSTART": "1"})]  # hint: how to start the clouds by hand
    start_by_hand = [c for h in hints(runs[0]) for c in commands(h)]
    assert len(start_by_hand) == 1 and " -m mock_clouds serve --detach " in start_by_hand[0]
    assert_runs(home, start_by_hand[0])
    home.ok("list")
    lam = home.ok("create", "-p", "lambda", "--gpu", "H100", "--name", "hinted", "-o", "json").json()["id"]
    neb = home.ok("create", "-p", "nebius", "--gpu", "H100", "--name", "hinted", "-o", "json").json()["id"]
    scenarios = [
        ["create", "-p", "crusoe", "--gpu", "H100:8", "--region", "mars-1"],
        ["create", "-p", "nebius", "--gpu", "H100", "--region", "mars-1", "-o", "json"],
        ["create", "-p", "crusoe"],
        ["create", "-p", "crusoe", "--gpu", "H100:8", "--strict"],
        ["create", "-p", "crusoe", "--gpu", "H100:8", "--reservation", UNKNOWN["crusoe"]],
        ["create", "-p", "crusoe", "--gpu", "H100:8", "--region", "us-northcentral1-a", "--reservation", "none"],
        # Room for two: the third fails, and the hint says how to destroy the two (then the zone is full).
        ["create", "-p", "crusoe", "--gpu", "H100:8", "--region", "us-southcentral1-a", "--reservation", "none",
         "--count", "3", "--name", "three"],
        ["create", "-p", "crusoe", "--gpu", "H100:8", "--region", "us-southcentral1-a", "--reservation", "none"],
        ["create", "-p", "nebius", "--gpu", "H100", "--region", "eu-west1", "--reservation", "none"],
        ["create", "-p", "lambda", "--gpu", "H100", "--strict"],
        ["create", "-p", "lambda", "--gpu", "H100", "--reservation", UNKNOWN["lambda"]],
        ["stop", lam, "-p", "lambda"],
        ["start", neb, "-p", "nebius", "--strict"],
        ["reboot", neb, "-p", "nebius", "--hard"],
        ["reboot", lam, "-p", "lambda", "--hard"],
        ["offers"],
    ]
    collected: dict[str, list[str]] = {}
    for args in scenarios:
        run = home(*args)
        assert run.code != 0, args
        found = hints(run)
        assert found, (args, run.err)  # every one of these failures comes with a hint
        for hint in found:
            collected.setdefault(hint, args)
    to_run = [c for hint in collected for c in commands(hint)]
    assert any(c.startswith("vm offers --gpu H100 --provider crusoe") for c in to_run), to_run
    assert any(c.startswith("vm offers --gpu H100 --provider nebius") for c in to_run), to_run
    assert any(c.startswith("vm destroy ") and c.endswith(" --provider crusoe --yes") for c in to_run), to_run
    for command in sorted(set(to_run), key=lambda c: "destroy" in c):  # destroying last: the others need the VMs
        assert_runs(home, command)

    home.path.joinpath("config.toml").write_text("[profiles.local]\nembedded = true\n")
    home.path.joinpath("config.toml").chmod(0o644)
    unsafe = home("list")
    assert unsafe.code == 4
    fixes = [c for h in hints(unsafe) for c in commands(h)]
    assert fixes and fixes[0].startswith("chmod 600 ")
    for command in fixes:
        assert_runs(home, command)
    assert home("list").code == 0  # the hint fixed it


def test_autostart_line_gives_a_stop_command_that_works_from_any_shell(autostart_home: VmHome) -> None:
    first = autostart_home.ok("list")
    [line] = hints(first)
    [stop] = commands(line)
    assert stop.startswith(sys.executable + " -m mock_clouds stop --state-dir ")
    env_without_venv = {**autostart_home.env, "PATH": "/usr/bin:/bin"}  # a plain shell: `python` may not be ours
    done = subprocess.run(["/bin/sh", "-c", stop], env=env_without_venv, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert not (autostart_home.mock_dir / "endpoints.json").exists() or autostart_home.mock("status").returncode != 0


def test_mock_clouds_commands_default_to_vms_state_dir(fresh_home: VmHome) -> None:
    fresh_home.ok("create", "-p", "lambda", "--gpu", "H100", "--name", "found-by-default")
    mock_clouds = str(Path(BIN) / "mock-clouds")
    status = subprocess.run([mock_clouds, "status"], env=fresh_home.env, capture_output=True, text=True,
                            timeout=300, check=False)
    assert status.returncode == 0, status.stderr
    inventory = subprocess.run([mock_clouds, "inventory", "-o", "json"], env=fresh_home.env, capture_output=True,
                               text=True, timeout=300, check=False)
    assert inventory.returncode == 0 and "found-by-default" in inventory.stdout
    without_vm_home = {k: v for k, v in fresh_home.env.items() if k != "VM_HOME"}
    xdg = fresh_home.path / "xdg-state"
    expected = xdg / "vm" / "mock-clouds"
    elsewhere = subprocess.run([mock_clouds, "status"], env={**without_vm_home, "XDG_STATE_HOME": str(xdg)},
                               capture_output=True, text=True, timeout=300, check=False)
    assert elsewhere.returncode != 0 and str(expected) in elsewhere.stdout + elsewhere.stderr


def test_every_fleet_hint_is_a_command_that_runs(fresh_home: VmHome) -> None:
    home = fresh_home
    home.ok("providers")
    scenarios = [
        ["fleet", "create", "--gpu", "H100:8", "--count", "40", "--min-count", "1", "--name", "big",
         "--providers", "crusoe"],  # degraded
        ["fleet", "create", "--gpu", "H100:8", "--count", "40", "--name", "huge", "--providers", "crusoe"],  # failed
        ["fleet", "create", "--gpu", "H100:8", "--count", "40", "--name", "plan", "--providers", "crusoe",
         "--dry-run"],  # cannot place
    ]
    home.ok("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "resv", "--providers", "lambda",
            "--reservation", "9b2e4c6a8d0f41e3a5c7e9b1d3f5a7c9", "--strict")
    scenarios.append(["fleet", "destroy", "resv"])  # released: still bills
    home.ok("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "acct", "--providers", "lambda")
    home.config('[profiles.local]\nembedded = true\n\n[profiles.other]\nembedded = true\n'
                '[profiles.other.lambda]\napi_key = "secret_other_0123456789"\n')
    scenarios.append(["fleet", "status", "acct", "--profile", "other"])  # another account
    taken = ["fleet", "create", "--gpu", "H100", "--count", "1", "--name", "acct", "--providers", "lambda"]
    scenarios.append([*taken, "-o", "json"])  # the name is taken
    to_run = []
    for args in scenarios:
        run = home(*args)
        assert run.code != 0, (args, run.err)
        found = [c for h in hints(run) if not h.startswith("vm: starting") for c in commands(h)]
        assert found, (args, run.err)
        to_run += found
    assert {"vm fleet status big", "vm fleet destroy huge", "vm fleet forget resv",
            "vm fleet status acct --profile local"} <= set(to_run), to_run
    error = home(*taken, "-o", "json").error()  # under -o json the hint's commands are also data (argv lists)
    assert error["suggestion"] == "see `vm fleet status acct`, or pick another name", error
    assert error["next"] == [["vm", "fleet", "status", "acct"]], error
    for command in to_run:
        assert_runs(home, command)
    home.ok("fleet", "destroy", "big")
    home.ok("fleet", "destroy", "acct")
