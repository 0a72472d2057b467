"""Mock clouds restarted while `vm fleet create` polls its operations: the fleet completes or rolls back cleanly.

The mocks run on fixed ports (`mock-clouds serve --crusoe-port ...`), so the `vm` process keeps talking to the
same addresses; `mock-clouds stop` saves the world and `serve` on the same state dir resumes it. The time scale is
ten times slower than elsewhere, so operations are still in flight when the clouds go away.
"""

from __future__ import annotations

import random
import subprocess
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from reliability_kit import sizes
from reliability_kit.audit import Store, audit, fleet_vms
from reliability_kit.home import PROVIDERS, VM, Run, free_ports

if TYPE_CHECKING:
    from reliability_kit.figures import Figures
    from reliability_kit.home import VmHome

SLOW_SCALE = "0.02"  # a Crusoe create takes ~2 s, a Lambda boot ~4 s
DEADLINE = 120.0


def wait_for_polling(home: VmHome, fleet: str, proc: subprocess.Popen[str]) -> None:
    """Block until a member of the fleet was accepted by its cloud (its operation is being polled)."""
    deadline = time.monotonic() + DEADLINE
    while not any(m.state == "creating" for m in home.store().of(fleet)):
        assert proc.poll() is None, "the create ended before any operation was polled"
        assert time.monotonic() < deadline, "no member reached `creating`"
        time.sleep(0.02)


def create_through_restarts(home: VmHome, figures: Figures, rng: random.Random, name: str, restarts: int) -> None:
    count = rng.randint(3, 8)
    args = ["fleet", "create", "--gpu", "H100", "--count", str(count), "--min-count", str(rng.randint(1, count)),
            "--strategy", rng.choice(["spread", "cheapest", "packed"]), "--name", name, "-q", "-o", "json"]
    proc = subprocess.Popen([VM, *args], env=home.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    wait_for_polling(home, name, proc)
    for _ in range(restarts):
        polled = sum(1 for m in home.store().of(name) if m.state == "creating")
        figures.add("operations in flight at a mock restart", polled)
        home.restart(rng.uniform(0.0, 1.5))
        figures.add("mock restarts")
        time.sleep(rng.uniform(0.0, 1.0))
    out, err = proc.communicate(timeout=600)
    run = Run(tuple(args), proc.returncode, out, err)
    figures.add(f"restarted creates exit {run.code}")
    assert run.code in (0, 6, 7) and "Traceback" not in run.err, run.describe()
    store, live = home.store(), home.inventory()
    findings = audit(store, live, fleets=[name], settled=[name])
    for key, value in findings.counts().items():
        figures.add(key, value)
    assert not findings, f"{run.describe()}\n{findings}"
    if run.code == 6:
        assert run.error()["code"] == "capacity"
    if run.code == 7:
        check_degraded(run, store, live, name)
    gone = home("fleet", "destroy", name, "-q", "-o", "json")
    assert gone.code == 0 and gone.json()["forgotten"], gone.describe()
    assert [vm for vm in home.inventory() if vm["name"].startswith(f"{name}-")] == []


def check_degraded(run: Run, store: Store, live: list[dict[str, Any]], name: str) -> None:
    """Exit 7 is right only for a create that ended degraded: the store records the fleet `degraded` with at
    least its minimum and fewer than requested running, the error says so, and the clouds hold exactly those VMs
    (the audit above also found nothing leaked, duplicated, lost or mismatched)."""
    record = store.fleets[name]
    running = {(m.provider, m.instance_id) for m in store.of(name) if m.state == "running"}
    error = run.error()
    assert record.state == "degraded", f"exit 7 with the fleet {record.state}\n{run.describe()}"
    assert error["code"] == "partial_failure" and f"fleet {name} is degraded" in error["message"], run.describe()
    assert record.min_count <= len(running) < record.count, \
        f"degraded with {len(running)} of {record.count} running (minimum {record.min_count})"
    in_clouds = {(vm["provider"], vm["id"]) for vm in fleet_vms(live, name)}
    assert in_clouds == running, f"degraded fleet {name}: clouds hold {in_clouds}, the store runs {running}"


def serve_on_fixed_ports(home_factory: Callable[..., VmHome]) -> VmHome:
    home = home_factory(SLOW_SCALE)
    home.serve(dict(zip(PROVIDERS, free_ports(len(PROVIDERS)), strict=True)))
    return home


def test_restart_while_polling(home_factory: Callable[..., VmHome], figures: Figures) -> None:
    home = serve_on_fixed_ports(home_factory)
    create_through_restarts(home, figures, sizes.rng("restart-fast"), "restarted", restarts=1)


@pytest.mark.soak
def test_repeated_restarts_while_polling(home_factory: Callable[..., VmHome], figures: Figures) -> None:
    home = serve_on_fixed_ports(home_factory)
    rng = sizes.rng("restart-soak")
    for index in range(sizes.SOAK.restarts):
        create_through_restarts(home, figures, rng, f"restarted{index}", restarts=index + 1)
