"""offers, providers, config show, --debug, completion, -q, colour and the autostart, through the real `vm`."""

from __future__ import annotations

import os
import pty
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import VmHome

VM = str(Path(sys.executable).parent / "vm")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_offers_cheapest_first_with_capacity_and_reservations(shared_home: VmHome) -> None:
    offers = shared_home.ok("offers", "--gpu", "H100", "-o", "json").json()
    assert {o["provider"] for o in offers} == {"crusoe", "lambda", "nebius"}
    assert all(o["gpu"] == "H100" and o["available"] for o in offers)
    per_gpu = [o["price_per_hour"] / o["gpu_count"] for o in offers]
    assert per_gpu == sorted(per_gpu)
    reserved = {o["reservation_id"] for o in offers if o["reserved"]}
    assert "804bf3a2-5b7e-4c1d-9f0a-6e2d8c4b1a11" in reserved
    table = shared_home.ok("offers", "--gpu", "H100:8", "--provider", "crusoe")
    header = ["PROVIDER", "REGION", "SHAPE", "GPU", "$/H", "$/GPU/H", "SOURCE", "CAPACITY", "RESERVATION", "SPOT"]
    assert table.rows()[0] == header
    assert {r[3] for r in table.rows()[1:]} == {"H100x8"} and all(r[0] == "crusoe" for r in table.rows()[1:])
    every = shared_home.ok("offers", "--gpu", "H100", "--all", "-o", "json").json()
    assert len(every) > len(offers) and not every[-1]["available"]


def test_spot_offers_are_marked_and_create_spot_makes_a_preemptible_vm(shared_home: VmHome) -> None:
    """`vm create --spot` end to end; the Nebius mock refuses a preemptible create without a pricing model, as the
    live API does (real-clouds.md §2, the spot row), so the create running proves vm opts into spot pricing."""
    offers = shared_home.ok("offers", "--gpu", "H100:1", "-o", "json").json()
    spot = [o for o in offers if o["spot"]]
    assert {o["provider"] for o in spot} == {"nebius"} and {o["price_per_hour"] for o in spot} == {1.25}
    assert offers[0]["spot"]  # the cheapest per GPU-hour
    table = shared_home.ok("offers", "--gpu", "H100:1", "--provider", "nebius")
    assert [r[-1] for r in table.rows()[1:]].count("spot") == len(spot)
    made = shared_home.ok("create", "-p", "nebius", "--gpu", "H100:1", "--spot", "--name", "spotty", "-o", "json")
    assert made.json()["price_per_hour"] == 1.25 and made.json()["state"] == "running"
    assert made.json()["spot"] is True and made.json()["reserved"] is False
    got = shared_home.ok("get", made.json()["id"], "-p", "nebius")
    assert got.rows()[0][6] == "RESERVED" and got.rows()[1][6] == "spot"  # the table's marker
    assert [r[6] for r in shared_home.ok("list", "--name", "spotty").rows()[1:]] == ["spot"]
    others = [i for i in shared_home.ok("list", "-o", "json").json() if i["id"] != made.json()["id"]]
    assert all(i["spot"] is False for i in others), others
    refused = shared_home("create", "-p", "crusoe", "--gpu", "H100:8", "--spot", "--name", "no-spot", "-o", "json")
    assert refused.code == 5 and refused.error()["code"] == "unsupported" and shared_home.live("no-spot") == []
    shared_home.ok("destroy", "-p", "nebius", made.json()["id"])


def test_providers_shows_endpoints_and_capabilities(shared_home: VmHome) -> None:
    shared_home.ok("list")
    endpoints = shared_home.endpoints()
    doc = {p["name"]: p for p in shared_home.ok("providers", "-o", "json").json()}
    assert doc["crusoe"]["endpoint"] == endpoints["crusoe"]["url"]
    assert doc["lambda"]["endpoint"] == endpoints["lambda"]["url"]
    assert doc["nebius"]["endpoint"] == endpoints["nebius"]["target"]
    assert {n: p["capabilities"] for n, p in doc.items() if n != "example"} == {
        "crusoe": {"stop_start": True, "reboot": True, "lists_reservations": True},
        "lambda": {"stop_start": False, "reboot": True, "lists_reservations": True},
        "nebius": {"stop_start": True, "reboot": True, "lists_reservations": False},
    }
    table = shared_home.ok("providers").rows()
    assert table[0] == ["NAME", "TITLE", "STATUS", "STOP/START", "REBOOT", "LISTS-RESERVATIONS", "ENDPOINT"]
    lam = next(r for r in table if r[0] == "lambda")
    assert lam[3:7] == ["ok", "no", "yes", "yes"]  # title "Lambda Cloud" is two cells


def test_config_show_redacts_every_secret(shared_home: VmHome) -> None:
    shared_home.ok("list")
    table = shared_home.ok("config", "show")
    doc = shared_home.ok("config", "show", "-o", "json").json()
    for secret in shared_home.secrets():
        assert secret not in table.out + table.err and secret not in str(doc)
    assert doc["profile"] == "local" and doc["embedded"] is True and doc["mock_clouds"]["running"] is True
    assert doc["providers"]["lambda"]["settings"]["api_key"] == {"value": "<set>", "source": "embedded",
                                                                "from": "the local mock clouds", "secret": True}
    assert doc["providers"]["crusoe"]["settings"]["secret_key"]["value"] == "<set>"
    assert doc["providers"]["nebius"]["settings"]["token"]["value"] == "<set>"
    assert ["lambda", "api_key", "<set>", "the", "local", "mock", "clouds"] in table.rows()


def test_debug_logs_api_calls_without_secrets(shared_home: VmHome) -> None:
    made = shared_home.ok("create", "-p", "lambda", "--gpu", "H100", "--name", "debugged", "--debug", "-o", "json")
    listed = shared_home.ok("list", "--debug")
    err = made.err + listed.err
    for sdk in ("crusoe_sdk", "lambda_sdk", "nebius_sdk"):
        assert f"debug: {sdk}: " in err, sdk
    assert "POST " in made.err and "/instance-operations/launch" in made.err
    for secret in shared_home.secrets():
        assert secret not in err + made.out + listed.out
    shared_home.ok("destroy", made.json()["id"], "-p", "lambda")


def test_quiet_means_no_progress(shared_home: VmHome) -> None:
    loud = shared_home.ok("create", "-p", "nebius", "--gpu", "H100", "--name", "loud")
    assert "nebius: loud: running" in loud.err
    quiet = shared_home.ok("destroy", loud.rows()[1][1], "-p", "nebius", "-q")
    assert quiet.err == "" and quiet.rows()[1][3] == "terminated"


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_script(shared_home: VmHome, shell: str) -> None:
    script = shared_home.ok("completion", shell).out
    assert "_VM_COMPLETE" in script and "vm" in script


def test_completion_answers(shared_home: VmHome) -> None:
    env = {"_VM_COMPLETE": "bash_complete", "COMP_WORDS": "vm de", "COMP_CWORD": "1"}
    assert shared_home(env=env).out.split() == ["plain,destroy"]


def run_in_pty(home: VmHome, *args: str, env: dict[str, str] | None = None) -> str:
    """Run vm with its stdout on a terminal, as a user would see it."""
    primary, secondary = pty.openpty()
    try:
        done = subprocess.run([VM, *args], env={**home.env, **(env or {})}, stdout=secondary,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=300, check=False)
        os.close(secondary)
        chunks = []
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(primary)
    assert done.returncode == 0, done.stderr
    return b"".join(chunks).decode()


def test_colour_on_a_terminal_unless_no_color(shared_home: VmHome) -> None:
    vm_id = shared_home.ok("create", "-p", "crusoe", "--gpu", "H100:8", "--name", "colourful", "-q",
                           "--reservation", "none", "-o", "json").json()["id"]
    coloured = run_in_pty(shared_home, "list", "-p", "crusoe")
    assert ANSI.search(coloured) and "\x1b[32mrunning" in coloured
    plain = run_in_pty(shared_home, "list", "-p", "crusoe", env={"NO_COLOR": "1"})
    assert not ANSI.search(plain) and "running" in plain
    piped = shared_home.ok("list", "-p", "crusoe")
    assert not ANSI.search(piped.out + piped.err)
    shared_home.ok("destroy", vm_id, "-p", "crusoe")


def test_first_command_starts_the_mock_clouds_once(autostart_home: VmHome) -> None:
    # Two vm processes at once: one starts the clouds, the other waits for it and uses them.
    procs = [subprocess.Popen([VM, "list", "-o", "json"], env=autostart_home.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [p.communicate(timeout=300) + (p.returncode,) for p in procs]
    assert [code for _, _, code in results] == [0, 0], results
    notes = [line for _, err, _ in results for line in err.splitlines()]
    assert len(notes) == 1 and notes[0].startswith("vm: starting the local mock clouds in the background (")
    again = autostart_home.ok("list")
    assert again.err == ""
    assert autostart_home.mock("status").returncode == 0
    for directory in (autostart_home.path, autostart_home.mock_dir):  # what vm creates is private
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE((autostart_home.mock_dir / "autostart.lock").stat().st_mode) == 0o600
    assert stat.S_IMODE((autostart_home.mock_dir / "endpoints.json").stat().st_mode) == 0o600
