"""`vm fleet create` ends with the documented exit code, and a real Ctrl-C to its process group leaves an
interrupted fleet (exit 130) that `vm fleet destroy` cleans up completely."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import pytest

from .conftest import VM, VmHome


def fleet_vms(vm: VmHome, name: str) -> list[dict]:
    return [i for i in vm.inventory() if i["name"].startswith(f"{name}--") and i["state"] != "terminated"]


@pytest.mark.parametrize("delay", [0.3, 1.0, 2.5])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_mid_create_interrupts_cleanly(fresh_home: VmHome, delay: float, sig: signal.Signals) -> None:
    vm = fresh_home
    vm.ok("providers")  # the mock clouds are up before the clock starts
    proc = subprocess.Popen([VM, "fleet", "create", "--gpu", "H100:1", "--count", "6", "--name", "sig"],
                            env={**vm.env, "VM_MOCK_TIME_SCALE": "0.05"}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    # The delay counts from vm's first line (its plan): a signal before the interpreter has even started is
    # Python's own business, and one while the CLI is still imported is test_cli_exit.py's.
    lines: list[str] = []
    spoke = threading.Event()
    reader = threading.Thread(target=_read_into, args=(proc, lines, spoke), daemon=True)
    reader.start()
    assert spoke.wait(timeout=120), "vm printed nothing"
    time.sleep(delay)
    if sig is signal.SIGINT:
        os.killpg(proc.pid, sig)  # what a terminal does on Ctrl-C
    else:
        proc.send_signal(sig)
    proc.stdout.read()
    proc.wait(timeout=300)
    reader.join(timeout=60)
    err = "".join(lines)
    assert "internal error" not in err and "Traceback" not in err, err
    # 130: interrupted; 0: it had finished before the signal came; -SIGTERM: the signal came before the create
    # began or after it ended, where SIGTERM's default action applies (nothing is in flight then)
    assert proc.returncode in (0, 130, -signal.SIGTERM), err
    state = vm("fleet", "status", "sig", "-o", "json")
    if proc.returncode == 130 and "vm fleet destroy sig" in err:
        assert state.json()["state"] == "interrupted"
    elif state.code == 0:
        assert state.json()["state"] == "active"
    vm.ok("fleet", "destroy", "sig")
    assert fleet_vms(vm, "sig") == []


def _read_into(proc: subprocess.Popen[str], lines: list[str], spoke: threading.Event) -> None:
    for line in proc.stderr:
        lines.append(line)
        spoke.set()
    spoke.set()


def test_degraded_is_7_and_a_dry_run_that_cannot_place_everything_is_6(fresh_home: VmHome) -> None:
    vm = fresh_home
    dry = vm("fleet", "create", "--gpu", "H100:8", "--count", "40", "--name", "big", "--providers", "crusoe",
             "--dry-run")
    assert dry.code == 6 and "can be placed" in dry.err and dry.out  # the plan is still shown
    result = vm("fleet", "create", "--gpu", "H100:8", "--count", "40", "--min-count", "1", "--name", "big",
                "--providers", "crusoe", "-o", "json")
    assert result.code == 7, result.err
    assert result.json()["state"] == "degraded" and "vm fleet status big" in result.err
    vm.ok("fleet", "destroy", "big")


def test_all_credentials_refused_is_4_and_records_nothing(fresh_home: VmHome) -> None:
    vm = fresh_home
    vm.ok("providers")
    vm.config('[profiles.bad]\nembedded = true\n[profiles.bad.lambda]\napi_key = "secret_wrong_0123456789abcdef"\n'
              '[profiles.bad.nebius]\ntoken = "wrong-token-0123456789"\n')
    result = vm("fleet", "create", "--gpu", "H100", "--count", "2", "--name", "nocred", "--providers",
                "lambda,nebius", "--profile", "bad")
    assert result.code == 4, result.err
    assert vm.ok("fleet", "list", "-o", "json").json() == []


def test_the_only_provider_unreachable_is_8(fresh_home: VmHome) -> None:
    vm = fresh_home
    vm.path.mkdir(parents=True, exist_ok=True)
    vm.config('[profiles.down]\nembedded = true\n[profiles.down.lambda]\napi_endpoint = "http://127.0.0.1:9"\n')
    result = vm("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "down", "--providers", "lambda",
                "--profile", "down")
    assert result.code == 8, result.err
    assert vm.ok("fleet", "list", "-o", "json").json() == []


def test_a_timeout_is_9(fresh_home: VmHome) -> None:
    vm = fresh_home
    result = vm("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "slow", "--providers", "nebius",
                "--timeout", "0.001", env={"VM_MOCK_TIME_SCALE": "0.05"})
    assert result.code == 9, result.err
    assert "vm fleet destroy slow" in result.err
    vm.ok("fleet", "destroy", "slow")
    assert fleet_vms(vm, "slow") == []


def test_a_fleet_on_an_explicit_nebius_capacity_block(fresh_home: VmHome) -> None:
    vm = fresh_home
    made = vm.ok("fleet", "create", "--gpu", "H100:1", "--count", "2", "--name", "blk", "--providers", "nebius",
                 "--reservation", "capacityblockgroup-e00h100block000001", "--strict", "-o", "json").json()
    assert made["state"] == "active"
    assert {m["reservation_id"] for m in made["members"]} == {"capacityblockgroup-e00h100block000001"}
    vm.ok("fleet", "destroy", "blk")


def test_transient_failures_are_retried_until_the_fleet_is_complete(fresh_home: VmHome) -> None:
    vm = fresh_home
    vm.ok("providers")
    done = vm.mock("faults", "--provider", "lambda", "--error-rate", "0.2", "--drop-rate", "0.2", "--seed", "5")
    assert done.returncode == 0, done.stderr
    made = vm("fleet", "create", "--gpu", "H100:1", "--count", "6", "--min-count", "1", "--name", "flaky",
              "--providers", "lambda", "-o", "json")
    vm.mock("faults", "--provider", "lambda", "--error-rate", "0", "--drop-rate", "0")
    assert made.code == 0, made.err
    assert made.json()["state"] == "active" and len(made.json()["members"]) == 6
    assert len(fleet_vms(vm, "flaky")) == 6  # and nothing doubled by the retries
    vm.ok("fleet", "destroy", "flaky")
    assert fleet_vms(vm, "flaky") == []


def _injected(vm: VmHome) -> int:
    """Errors and dropped answers the three mock clouds have injected so far."""
    from mock_clouds import control

    counts = control.admin_call(vm.endpoints(), "GET", "/faults", timeout=60.0)
    return sum(c["injected"]["error"] + c["injected"]["drop"] for c in counts.values())


@pytest.mark.parametrize("seed", [11, 12])
def test_destroy_retries_deletes_through_transient_errors_and_lost_answers(fresh_home: VmHome, seed: int) -> None:
    """A delete is idempotent: 503s and answers dropped after the VM was deleted are retried with backoff, so the
    destroy ends 0 with every VM gone instead of exit 7 and a re-run."""
    vm = fresh_home
    made = vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "6", "--name", "shaky", "-o", "json").json()
    assert len({m["provider"] for m in made["members"]}) > 1  # deletes of more than one cloud are tested
    for provider in ("crusoe", "lambda", "nebius"):
        done = vm.mock("faults", "--provider", provider, "--error-rate", "0.4", "--drop-rate", "0.2",
                       "--seed", str(seed))
        assert done.returncode == 0, done.stderr
    before = _injected(vm)

    destroyed = vm("fleet", "destroy", "shaky", "-o", "json")

    faults = _injected(vm) - before
    for provider in ("crusoe", "lambda", "nebius"):
        vm.mock("faults", "--provider", provider, "--error-rate", "0", "--drop-rate", "0")
    assert faults > 0, "the destroy met no fault: nothing was tested"
    assert destroyed.code == 0, destroyed.err
    report = destroyed.json()
    assert report["failed"] == 0 and report["destroyed"] == 6, report
    assert {a["action"] for a in report["actions"]} == {"destroyed"} and report["forgotten"], report
    assert fleet_vms(vm, "shaky") == []
    assert vm("fleet", "status", "shaky").code == 3  # the record is gone: nothing of the fleet may run


def test_a_strict_crusoe_fleet_keeps_no_vm_the_backend_put_elsewhere(fresh_home: VmHome) -> None:
    """Crusoe's backend ignores a reservation named at create (terraform-provider-crusoe
    internal/vm/vm_resource.go:468-476) and puts the VM on the cheapest reservation with room: a fleet on
    `--reservation ID --strict` whose VM lands on another one destroys it and reports the slot failed (exit 6)."""
    vm = fresh_home
    result = vm("fleet", "create", "--gpu", "H100:8", "--count", "1", "--name", "elsewhere", "--providers", "crusoe",
                "--reservation", "e384a1de-3f2c-4b5a-8d9e-0c1b2a3f4e22", "--strict")
    assert result.code == 6, result.err
    assert "landed on reservation 804bf3a2-5b7e-4c1d-9f0a-6e2d8c4b1a11" in result.err
    assert "Traceback" not in result.err
    assert fleet_vms(vm, "elsewhere") == []
    assert vm.ok("list", "-p", "crusoe", "-o", "json").json() == []
