"""Output a user can act on, through the real `vm` executable: lines that say each thing once, the hint of a name
that is taken, a closed pipe that is not a failure, and a newcomer's workspace without the test plugin."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

from vm_core.fleet.location import store_at
from vm_core.fleet.naming import FleetIdentity, new_fleet_id
from vm_core.fleet.store import FleetRecord, MemberRecord

if TYPE_CHECKING:
    from conftest import VmHome

VM = str(Path(sys.executable).parent / "vm")
ROOT = Path(__file__).resolve().parents[2]


def test_an_intent_that_left_no_vm_reads_never_created_once(shared_home: VmHome) -> None:
    vm = shared_home
    vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "1", "--name", "once", "--providers", "crusoe")
    store = store_at(None, vm.path)
    record = store.get_fleet("once")
    assert record is not None
    name = FleetIdentity("once", record.fleet_id).member_name(1, 0)
    store.add_member(MemberRecord("once", 1, 0, "crusoe", name))  # as a create killed before its call leaves it

    planned = vm.ok("fleet", "reconcile", "once", "--dry-run")
    assert f"crusoe: {name}: would mark never created\n" in planned.err, planned.err
    destroyed = vm.ok("fleet", "destroy", "once")
    assert f"crusoe: {name}: never created\n" in destroyed.err, destroyed.err
    assert "never created: never created" not in destroyed.err + planned.err
    assert vm.live("once") == [] and store.get_fleet("once") is None


def test_a_create_of_a_name_being_created_hints_another_name(shared_home: VmHome) -> None:
    vm = shared_home
    store = store_at(None, vm.path)
    # alice's create on another machine: its fleet recorded, its lease live (60 s)
    store.acquire_lease("busy", "alice@laptop:4242", "fleet create", 60)
    store.create_fleet(FleetRecord(name="busy", gpu="H100", gpu_count=1, count=4, min_count=4,
                                   strategy="spread", fleet_id=new_fleet_id(), created_by="alice@laptop"))
    before = vm.inventory()
    refused = vm("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "busy", "-o", "json")
    assert refused.code == 2, refused.err
    error = refused.error()
    assert "a fleet named 'busy' already exists and is being changed by alice@laptop:4242" in error["message"]
    assert error["suggestion"] == "see `vm fleet status busy`, or pick another name", error
    assert error["next"] == [["vm", "fleet", "status", "busy"]]
    assert "run this again" not in refused.err
    assert vm.inventory() == before  # the refused create changed nothing
    vm.ok("fleet", "status", "busy")  # the hint's command runs
    destroying = vm("fleet", "destroy", "busy", "-o", "json")  # any other command is told to wait for alice
    assert destroying.code == 2 and "run this again" in destroying.error()["suggestion"], destroying.err
    store.release_lease("busy", "alice@laptop:4242")
    vm.ok("fleet", "destroy", "busy")


def test_a_reader_that_closes_the_pipe_early_is_not_a_failure(shared_home: VmHome) -> None:
    vm = shared_home
    vm.ok("create", "--provider", "lambda", "--gpu", "H100", "--count", "3", "--name", "piped")
    # the reader has gone before vm writes anything: every write of stdout finds the pipe closed
    child = subprocess.Popen([VM, "list"], env=vm.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()
    err = child.stderr.read()
    assert child.wait(timeout=300) == 0, err
    assert "error" not in err and "Traceback" not in err, err
    # the shell line of a script under pipefail
    done = subprocess.run(["bash", "-o", "pipefail", "-c", f"'{VM}' list | head -1"], env=vm.env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[:2] == ["PROVIDER", "ID"] and done.stdout.count("\n") == 1
    vm.ok("destroy", *[i["id"] for i in vm.live("piped-1") + vm.live("piped-2") + vm.live("piped-3")],
          "--provider", "lambda")


def test_a_failure_is_still_its_exit_code_when_the_pipe_is_closed(shared_home: VmHome) -> None:
    done = subprocess.run(["bash", "-o", "pipefail", "-c", f"'{VM}' get nonexistent --provider lambda | head -1"],
                          env=shared_home.env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 2, done.stderr  # a malformed id: bad input, whoever reads stdout


def test_the_newcomers_workspace_has_no_test_plugin() -> None:
    """`hatch run vm providers` (the README's first steps) runs in the default environment, which installs the
    workspace without the test plugin `example`; the test environment installs it."""
    envs = tomllib.loads((ROOT / "hatch.toml").read_text())["envs"]
    assert "tests/example_provider" not in envs["default"]["workspace"]["members"]
    assert "tests/example_provider" in envs["hatch-test"]["workspace"]["members"]


def test_a_missing_store_driver_hints_a_package_that_exists(shared_home: VmHome, tmp_path: Path) -> None:
    """Without psycopg, a team store's URL is exit 4 with a hint that installs psycopg itself (vm-core and its
    extra are not on PyPI), naming the environment to install it in."""
    shadow = tmp_path / "no-driver" / "psycopg"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('psycopg is not installed')\n")
    run = shared_home("fleet", "list", "-o", "json", env={"PYTHONPATH": str(shadow.parent),
                                                         "VM_STORE_URL": "postgresql://alice@db.internal/vm"})
    assert run.code == 4 and run.out == "", run.err
    error = run.error()
    assert error["message"].endswith("needs the PostgreSQL driver psycopg 3, which is not installed"), error
    assert error["suggestion"] == (f"install psycopg 3 where vm is installed ({sys.prefix}): "
                                   "pip install 'psycopg[binary]==3.*'"), error
