"""Single VMs and the CLI through the real `vm`: regions, reboot, idempotent verbs, output, filters, prompts."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import VmHome

PROVIDERS = ("crusoe", "lambda", "nebius")
VM = str(Path(sys.executable).parent / "vm")


GPU = {"crusoe": "H100:8", "lambda": "H100", "nebius": "H100"}  # a size each cloud sells


@pytest.mark.parametrize("provider", PROVIDERS)
def test_unknown_region_is_exit_2_before_any_create_listing_the_offered_regions(shared_home: VmHome,
                                                                                 provider: str) -> None:
    shared_home.ok("list")
    before = shared_home.inventory()
    result = shared_home("create", "-p", provider, "--gpu", GPU[provider], "--region", "mars-1", "--name", "lost",
                         "-o", "json")
    assert result.code == 2 and result.out == "", result.err
    error = result.error()
    assert error["code"] == "usage" and "'mars-1'" in error["message"]
    offered = {o["region"] for o in shared_home.ok("offers", "--gpu", GPU[provider], "-p", provider, "--all",
                                                     "-o", "json").json()}
    named = set(error["message"].split("regions that sell it: ")[1].replace(";", ",").replace(
        "with capacity now: ", "").replace("without: ", "").split(", "))
    assert named == offered
    assert shared_home.inventory() == before


def _progress(run_err: str) -> list[str]:
    return [line.split(": ")[-1] for line in run_err.splitlines()]


def test_crusoe_reboot_is_stop_then_start_and_hard_is_reset(shared_home: VmHome) -> None:
    vm = shared_home.ok("create", "-p", "crusoe", "--gpu", "H100:8", "--name", "rb-crusoe", "-o", "json").json()
    soft = shared_home.ok("reboot", vm["id"], "-p", "crusoe", "-o", "json")
    assert "rb-crusoe: rebooting as a stop then a start (Crusoe Cloud's API has no guest reboot" in soft.err
    assert {"stopping", "starting", "running"} <= set(_progress(soft.err)) and soft.json()["state"] == "running"
    hard = shared_home.ok("reboot", vm["id"], "-p", "crusoe", "--hard", "-o", "json")
    assert "stopping" not in _progress(hard.err) and "stop then a start" not in hard.err
    assert hard.json()["state"] == "running"
    shared_home.ok("destroy", vm["id"], "-p", "crusoe", "-y")


def test_crusoe_sdk_sends_only_real_actions() -> None:
    from crusoe_sdk import CrusoeClient
    from crusoe_sdk.models import InstanceAction

    assert {a.value for a in InstanceAction} == {"START", "STOP", "RESET", "RESERVE", "UNRESERVE", "UPDATE"}
    assert not hasattr(CrusoeClient, "begin_reboot_instance") and not hasattr(CrusoeClient, "begin_restart_instance")


def test_nebius_hard_reboot_is_refused_not_faked(shared_home: VmHome) -> None:
    vm = shared_home.ok("create", "-p", "nebius", "--gpu", "H100", "--name", "rb-nebius", "-o", "json").json()
    hard = shared_home("reboot", vm["id"], "-p", "nebius", "--hard", "-o", "json")
    assert hard.code == 5 and hard.out == "" and hard.error()["code"] == "unsupported"
    assert "no hard reset" in hard.error()["message"]
    assert [i["state"] for i in shared_home.live("rb-nebius")] == ["running"]
    soft = shared_home.ok("reboot", vm["id"], "-p", "nebius")
    assert "rb-nebius: rebooting as a stop then a start (Nebius AI Cloud has no reboot)" in soft.err
    shared_home.ok("destroy", vm["id"], "-p", "nebius", "-y")


def test_start_of_a_running_vm_is_already_running(shared_home: VmHome) -> None:
    vm = shared_home.ok("create", "-p", "nebius", "--gpu", "H100", "--name", "up-already", "-o", "json").json()
    again = shared_home.ok("start", vm["id"], "-p", "nebius", "-o", "json")
    assert again.json()["state"] == "running" and "nebius: up-already: already running" in again.err
    assert "accepted" not in again.err  # nothing was sent
    shared_home.ok("destroy", vm["id"], "-p", "nebius")


NEVER = {"crusoe": "00000000-0000-4000-8000-00000000abcd", "lambda": "0" * 31 + "a",
         "nebius": "computeinstance-e00neverexisted00"}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_destroy_of_an_id_that_never_existed_says_not_found(shared_home: VmHome, provider: str) -> None:
    vm_id = NEVER[provider]
    table = shared_home.ok("destroy", vm_id, "-p", provider)
    assert f"{provider}: {vm_id}: not found (treated as destroyed)" in table.err
    assert "accepted" not in table.err and "operation" not in table.err + table.out
    doc = shared_home.ok("destroy", vm_id, "-p", provider, "--no-wait", "-o", "json").json()
    assert doc == {"provider": provider, "id": vm_id, "name": None, "state": "terminated",
                   "note": "not found (treated as destroyed)"}


def test_start_falling_back_to_on_demand_says_so_and_strict_refuses(fresh_home: VmHome) -> None:
    vm = fresh_home.ok("create", "-p", "crusoe", "--gpu", "H100:8", "--name", "keep", "-o", "json").json()
    assert vm["reserved"]
    reserved_price = vm["price_per_hour"]
    fresh_home.ok("stop", vm["id"], "-p", "crusoe")
    # Every H100 reservation of the scenario fills up while it is stopped (4 + 2 VMs of 8 GPUs).
    fillers = fresh_home.ok("create", "-p", "crusoe", "--gpu", "H100:8", "--count", "6", "--name", "fill",
                            "-o", "json").json()
    assert all(f["reserved"] for f in fillers)
    strict = fresh_home("start", vm["id"], "-p", "crusoe", "--strict", "-o", "json")
    assert strict.code == 6 and strict.out == "" and strict.error()["code"] == "capacity"
    assert "not started" in strict.error()["message"]
    assert [i["state"] for i in fresh_home.live("keep")] == ["stopped"]
    started = fresh_home.ok("start", vm["id"], "-p", "crusoe", "-o", "json")
    doc = started.json()
    assert doc["state"] == "running" and not doc["reserved"] and doc["price_per_hour"] > reserved_price
    assert (f"vm: warning: crusoe: keep: started on-demand at ${doc['price_per_hour']:.2f}/h: reservation"
            f" {vm['reservation_id']} (${reserved_price:.2f}/h) has no room for it") in started.err


def test_nebius_start_falling_back_from_its_capacity_block_to_on_demand_says_so(fresh_home: VmHome) -> None:
    """Nebius AUTO policy: a stop releases the block, and a start onto a full block runs on-demand (nebius.md,
    reservation policy). The block of the scenario holds 16 GPUs: two H100:8 VMs."""
    block = "capacityblockgroup-e00h100block000001"
    vm = fresh_home.ok("create", "-p", "nebius", "--gpu", "H100:8", "--region", "eu-north1", "--reservation", block,
                       "--name", "blocked", "-o", "json").json()
    assert vm["reservation_id"] == block and vm["price_per_hour"] == 16.80  # 8 x the contract's $2.10
    fresh_home.ok("stop", vm["id"], "-p", "nebius")
    fillers = fresh_home.ok("create", "-p", "nebius", "--gpu", "H100:8", "--region", "eu-north1", "--reservation",
                            block, "--count", "2", "--name", "fill", "-o", "json").json()
    assert all(f["reservation_id"] == block for f in fillers)
    started = fresh_home.ok("start", vm["id"], "-p", "nebius", "-o", "json")
    doc = started.json()
    assert doc["state"] == "running" and not doc["reserved"] and doc["price_per_hour"] == 23.60
    assert ("vm: warning: nebius: blocked: started on-demand at $23.60/h: capacity block "
            f"{block} ($16.80/h) has no room for it") in started.err


def test_strict_start_is_refused_where_the_provider_cannot_tell(shared_home: VmHome) -> None:
    vm = shared_home.ok("create", "-p", "nebius", "--gpu", "H100", "--name", "nostrict", "-o", "json").json()
    shared_home.ok("stop", vm["id"], "-p", "nebius")
    refused = shared_home("start", vm["id"], "-p", "nebius", "--strict", "-o", "json")
    assert refused.code == 5 and refused.out == "" and refused.error()["code"] == "unsupported"
    assert [i["state"] for i in shared_home.live("nostrict")] == ["stopped"]
    shared_home.ok("destroy", vm["id"], "-p", "nebius")


def on_a_terminal(home: VmHome, args: list[str], answer: bytes | None) -> tuple[int, str, str]:
    """Run vm with stdin and stderr on a pseudo-terminal (stdout piped), as a user at a shell would; once the
    question appears, type `answer` (None: expect no question). Returns (exit code, stdout, terminal text)."""
    primary, secondary = pty.openpty()
    proc = subprocess.Popen([VM, *args], env=home.env, stdin=secondary, stderr=secondary, stdout=subprocess.PIPE)
    os.close(secondary)
    seen = b""
    try:
        while proc.poll() is None or select.select([primary], [], [], 0)[0]:
            ready, _, _ = select.select([primary], [], [], 1.0)
            if not ready:
                continue
            try:
                chunk = os.read(primary, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
            if answer is not None and b"[y/N]" in seen:
                os.write(primary, answer)
                answer = None
        out = proc.stdout.read().decode() if proc.stdout else ""
        code = proc.wait(timeout=300)
    finally:
        os.close(primary)
        if proc.stdout:
            proc.stdout.close()
    return code, out, seen.decode(errors="replace").replace("\r\n", "\n")


def test_destroy_on_a_terminal_asks_first(shared_home: VmHome) -> None:
    made = shared_home.ok("create", "-p", "lambda", "--gpu", "H100", "--count", "2", "--name", "ask",
                          "--reservation", "none", "-o", "json").json()
    ids = [m["id"] for m in made]
    total = sum(m["price_per_hour"] for m in made)
    code, out, screen = on_a_terminal(shared_home, ["destroy", *ids, "-p", "lambda"], b"n\n")
    assert code == 1 and out == ""
    assert "These will be destroyed:" in screen and f"Destroy 2 VMs (running now: ${total:.2f}/h)? [y/N]" in screen
    for m in made:
        assert f"lambda  {m['id']}  {m['name']}  running  ${m['price_per_hour']:.2f}/h" in screen
    assert "vm: error: cancelled: nothing was destroyed" in screen
    assert f"hint: vm destroy {' '.join(ids)} --provider lambda --yes" in screen
    assert len(shared_home.live("ask-1") + shared_home.live("ask-2")) == 2
    code, out, screen = on_a_terminal(shared_home, ["destroy", *ids, "-p", "lambda", "-o", "json"], b"y\n")
    assert code == 0 and sorted(d["id"] for d in json.loads(out)) == sorted(ids)
    assert shared_home.live("ask-1") == shared_home.live("ask-2") == []


def test_destroy_yes_skips_the_question_and_no_terminal_never_asks(shared_home: VmHome) -> None:
    first = shared_home.ok("create", "-p", "lambda", "--gpu", "H100", "--name", "noask", "--reservation", "none",
                           "-o", "json").json()
    code, out, screen = on_a_terminal(shared_home, ["destroy", first["id"], "-p", "lambda", "-y"], None)
    assert code == 0 and "[y/N]" not in screen and first["id"] in out
    second = shared_home.ok("create", "-p", "lambda", "--gpu", "H100", "--name", "noask2", "--reservation",
                            "none", "-o", "json").json()
    piped = shared_home.ok("destroy", second["id"], "-p", "lambda")  # stdin is not a terminal: no question
    assert "[y/N]" not in piped.err and shared_home.live("noask2") == []


LAMBDA_RESERVATION = "9b2e4c6a8d0f41e3a5c7e9b1d3f5a7c9"  # the mock's; Lambda will not terminate its VMs
UNTERMINABLE = (f"on reservation {LAMBDA_RESERVATION} cannot be destroyed through Lambda Cloud's API: "
                "`vm destroy` will refuse")


def test_a_create_on_a_reservation_lambda_cannot_terminate_says_so_first_and_asks(fresh_home: VmHome) -> None:
    vm = fresh_home
    vm.ok("providers")
    args = ["create", "-p", "lambda", "--gpu", "H100", "--reservation", LAMBDA_RESERVATION, "--name", "kept"]
    code, out, screen = on_a_terminal(vm, args, b"n\n")
    assert code == 1 and out == "", screen
    assert f"vm: warning: this VM {UNTERMINABLE}" in screen
    assert "Create 1 VM that vm cannot destroy? [y/N]" in screen
    assert "vm: error: cancelled: nothing was created" in screen
    assert f"hint: vm {' '.join(args)} --yes" in screen  # the same command, without the question
    assert screen.index("warning") < screen.index("[y/N]") and "accepted" not in screen
    assert vm.live("kept") == []  # nothing was sent

    code, out, screen = on_a_terminal(vm, [*args, "-o", "json"], b"y\n")
    assert code == 0 and json.loads(out)["reservation_id"] == LAMBDA_RESERVATION, screen
    assert len(vm.live("kept")) == 1

    code, out, screen = on_a_terminal(vm, [*args[:-1], "kept-yes", "--yes"], None)  # --yes: said, not asked
    assert code == 0 and UNTERMINABLE in screen and "[y/N]" not in screen, screen

    piped = vm.ok(*args[:-1], "kept-piped", "--count", "2")  # no terminal: said, not asked; the id is the consent
    assert f"vm: warning: these 2 VMs {UNTERMINABLE}" in piped.err and "[y/N]" not in piped.err
    assert len(vm.live("kept-piped-1") + vm.live("kept-piped-2")) == 2


def test_a_create_on_a_reservation_that_can_be_destroyed_asks_nothing(shared_home: VmHome) -> None:
    code, out, screen = on_a_terminal(shared_home, ["create", "-p", "crusoe", "--gpu", "H100:8", "--reservation",
                                                    "e384a1de-3f2c-4b5a-8d9e-0c1b2a3f4e22", "--name", "freed",
                                                    "-o", "json"], None)
    assert code == 0 and "[y/N]" not in screen and "cannot be destroyed" not in screen, screen
    shared_home.ok("destroy", json.loads(out)["id"], "-p", "crusoe")


FAILING_CONFIG = """
[profiles.local]
embedded = true
[profiles.bad]
embedded = true
[profiles.bad.crusoe]
secret_key = "d3JvbmctY3JlZGVudGlhbA"
[profiles.bad.lambda]
api_key = "d3JvbmctY3JlZGVudGlhbA"
[profiles.bad.nebius]
token = "d3JvbmctY3JlZGVudGlhbA"
[profiles.nokey.crusoe]
access_key_id = "only-half-of-it"
"""


def test_nothing_on_stdout_on_failure(fresh_home: VmHome) -> None:
    fresh_home.path.mkdir(parents=True)
    fresh_home.config(FAILING_CONFIG)
    lam = fresh_home.ok("create", "-p", "lambda", "--gpu", "H100", "--name", "quiet-fail", "-o", "json").json()
    failing = [
        (["list", "--profile", "bad"], 4),
        (["list", "--profile", "nokey"], 4),
        (["offers", "--gpu", "H100", "--profile", "bad"], 4),
        (["get", "0" * 32, "-p", "lambda"], 3),
        (["create", "-p", "crusoe", "--gpu", "H100:8", "--region", "mars-1"], 2),
        (["stop", lam["id"], "-p", "lambda"], 5),
        (["reboot", lam["id"], "-p", "lambda", "--hard"], 5),
        (["destroy", "not-an-id", "-p", "crusoe"], 2),
        (["providers", "--profile", "nope"], 4),
        (["config", "show", "--profile", "nope"], 4),
    ]
    for args, code in failing:
        table = fresh_home(*args)
        assert (table.code, table.out) == (code, ""), (args, table.err)
        assert table.err.startswith("vm: ") and "vm: error: " in table.err, args
        as_json = fresh_home(*args, "-o", "json")
        assert (as_json.code, as_json.out) == (code, ""), (args, as_json.err)
        assert as_json.error()["message"], args  # one JSON error object on stderr
    fresh_home.ok("destroy", lam["id"], "-p", "lambda")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_public_ip_and_ssh_line_in_get_and_list(shared_home: VmHome, provider: str) -> None:
    name = f"reach-{provider}"
    made = shared_home.ok("create", "-p", provider, "--gpu", GPU[provider], "--name", name, "-o", "json").json()
    got = shared_home.ok("get", made["id"], "-p", provider, "-o", "json", "--raw").json()
    ip = got["public_ip"]
    assert ip and ip in json.dumps(got["native"])  # the cloud's own field
    assert got["ssh"] == f"ssh ubuntu@{ip}"
    listed = next(i for i in shared_home.ok("list", "-p", provider, "-o", "json").json() if i["id"] == made["id"])
    assert (listed["public_ip"], listed["ssh"]) == (ip, f"ssh ubuntu@{ip}")
    table = shared_home.ok("get", made["id"], "-p", provider)
    assert table.rows()[0][-1] == "PUBLIC-IP" and table.rows()[1][-1] == ip
    assert table.out.splitlines()[-1] == f"ssh: ssh ubuntu@{ip}"
    shared_home.ok("destroy", made["id"], "-p", provider)


def test_list_filters_and_offers_region(shared_home: VmHome) -> None:
    a = shared_home.ok("create", "-p", "nebius", "--gpu", "H100", "--name", "filt-a", "-o", "json").json()
    b = shared_home.ok("create", "-p", "crusoe", "--gpu", "H100:8", "--name", "filt-b", "-o", "json").json()
    shared_home.ok("stop", b["id"], "-p", "crusoe")

    def ids(*args: str) -> set[str]:
        return {i["id"] for i in shared_home.ok("list", *args, "-o", "json").json()} & {a["id"], b["id"]}

    assert ids() == {a["id"], b["id"]}
    assert ids("--name", "filt-a") == {a["id"]}
    assert ids("--state", "stopped") == {b["id"]} and ids("--state", "running") == {a["id"]}
    assert ids("--region", a["region"]) == {a["id"]}
    assert ids("--name", "filt-a", "--state", "stopped") == set()
    assert all(i["state"] == "stopped" for i in shared_home.ok("list", "--state", "stopped", "-o", "json").json())
    assert shared_home("list", "--state", "sleeping").code == 2
    offers = shared_home.ok("offers", "--gpu", "H100", "--region", "us-south-2", "--all", "-o", "json").json()
    assert offers and {o["region"] for o in offers} == {"us-south-2"}
    shared_home.ok("destroy", a["id"], "-p", "nebius")
    shared_home.ok("destroy", b["id"], "-p", "crusoe")


def test_list_fleet_filter_uses_the_instances_fleet(fresh_home: VmHome) -> None:
    made = fresh_home.ok("fleet", "create", "--gpu", "H100:1", "--count", "2", "--name", "fl", "--providers",
                         "lambda", "-o", "json")
    other = fresh_home.ok("create", "-p", "lambda", "--gpu", "H100", "--name", "loner", "-o", "json").json()
    members = fresh_home.ok("list", "--fleet", "fl", "-o", "json").json()
    assert len(members) == 2 and {m["fleet"] for m in members} == {"fl"} and other["id"] not in str(members)
    assert fresh_home.ok("list", "--fleet", "nothing-like-it", "-o", "json").json() == []
    assert made.code == 0
    fresh_home.ok("fleet", "destroy", "fl")
    fresh_home.ok("destroy", other["id"], "-p", "lambda")


def test_progress_lines_name_the_vms(shared_home: VmHome) -> None:
    made = shared_home.ok("create", "-p", "nebius", "--gpu", "H100", "--name", "named-steps", "-o", "json").json()
    stopped = shared_home.ok("stop", made["id"], "-p", "nebius")
    assert f"nebius: stop named-steps ({made['id']}): accepted" in stopped.err
    assert "nebius: named-steps: stopped" in stopped.err
    gone = shared_home.ok("destroy", made["id"], "-p", "nebius")
    assert f"nebius: destroy named-steps ({made['id']}): accepted" in gone.err
    assert "nebius: named-steps: terminated" in gone.err


def test_providers_checks_credentials_concurrently(fresh_home: VmHome) -> None:
    import socket

    silent = socket.socket()  # accepts connections (the kernel's backlog) and never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    port = silent.getsockname()[1]
    try:
        fresh_home.path.mkdir(parents=True)
        fresh_home.config(f"""
[profiles.local]
embedded = true
[profiles.mixed]
embedded = true
[profiles.mixed.lambda]
api_key = "d3JvbmctY3JlZGVudGlhbA"
[profiles.mixed.crusoe]
api_endpoint = "http://127.0.0.1:{port}/v1alpha5"
""")
        good = {p["name"]: p for p in fresh_home.ok("providers", "-o", "json").json()}
        assert {n: good[n]["status"] for n in PROVIDERS} == {"crusoe": "ok", "lambda": "ok", "nebius": "ok"}
        mixed = fresh_home.ok("providers", "--profile", "mixed", "--timeout", "3", "-o", "json")
        doc = {p["name"]: p for p in mixed.json()}
        assert (doc["lambda"]["status"], doc["crusoe"]["status"], doc["nebius"]["status"]) == (
            "auth refused", "unreachable", "ok")
        assert "refused the API key" in doc["lambda"]["problem"]
        assert doc["crusoe"]["problem"] == "no answer within 3 s"
        assert doc["example"]["status"] == "not configured"
        table = fresh_home.ok("providers", "--profile", "mixed", "--timeout", "3")
        assert "vm: warning: provider lambda: auth refused: " in table.err
        assert "vm: warning: provider crusoe: unreachable: no answer within 3 s" in table.err
        assert "d3JvbmctY3JlZGVudGlhbA" not in table.out + table.err + mixed.out + mixed.err
    finally:
        silent.close()


@pytest.mark.parametrize("provider", ["crusoe", "nebius"])
def test_no_wait_reboot_done_as_stop_then_start_still_starts_the_vm(shared_home: VmHome, provider: str) -> None:
    vm = shared_home.ok("create", "-p", provider, "--gpu", GPU[provider], "--name", f"nw-{provider}", "-o",
                        "json").json()
    result = shared_home.ok("reboot", vm["id"], "-p", provider, "--no-wait", "-o", "json")
    assert "waiting despite --no-wait" in result.err
    assert result.json()["state"] == "running"
    assert [i["state"] for i in shared_home.live(f"nw-{provider}")] == ["running"]
    shared_home.ok("destroy", vm["id"], "-p", provider)
