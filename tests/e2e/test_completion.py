"""Shell completion through the real `vm` (click's protocol, as the scripts of `vm completion` drive it): fleet
names from the store, VM names and ids from what vm last listed, GPU types and sizes from the catalog, profiles
from config.toml. TAB asks no cloud: the mock clouds are stopped while completing, and stay stopped."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conftest import VmHome

PROFILES = """
[profiles.work]
embedded = true

[profiles.team]
embedded = true
"""


def complete(vm: VmHome, line: str) -> list[str]:
    """What bash gets for TAB at the end of `line` (a trailing space: a new word)."""
    words = line.split()
    cword = len(words) if line.endswith(" ") else len(words) - 1
    run = vm(env={"_VM_COMPLETE": "bash_complete", "COMP_WORDS": line, "COMP_CWORD": str(cword)})
    assert run.code == 0 and run.err == "", run.err
    return [item.split(",", 1)[1] for item in run.out.split()]


def test_tab_completes_fleets_vms_gpus_and_profiles_without_a_cloud(fresh_home: VmHome) -> None:
    vm = fresh_home
    vm.config(PROFILES)
    lone = vm.ok("create", "-p", "lambda", "--gpu", "H100", "--name", "tabby", "-o", "json").json()
    gone = vm.ok("create", "-p", "lambda", "--gpu", "H100", "--name", "tabgone", "-o", "json").json()
    fleet = vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "1", "--name", "tabfleet", "--providers",
                  "crusoe", "-o", "json").json()
    [member] = fleet["members"]
    vm.ok("list")  # what completion knows of every provider's VMs
    vm.ok("destroy", gone["id"], "-p", "lambda")  # and what it forgets
    vm.stop()  # no cloud answers any more

    assert sorted(complete(vm, "vm ssh tab")) == sorted(["tabby", member["name"]])
    assert sorted(complete(vm, "vm get ")) == sorted([lone["id"], member["id"]])
    assert complete(vm, "vm get -p lambda ") == [lone["id"]]
    assert complete(vm, "vm destroy -p crusoe ") == [member["id"]]
    assert complete(vm, "vm fleet status tab") == ["tabfleet"]
    assert complete(vm, "vm fleet destroy ") == ["tabfleet"]
    assert complete(vm, "vm list --fleet t") == ["tabfleet"]
    assert complete(vm, "vm create -p crusoe --gpu H1") == ["H100:8"]  # H100 alone is H100:1, not sold there
    assert complete(vm, "vm create --gpu H100:") == ["H100:1", "H100:2", "H100:4", "H100:8"]
    assert "H100" in complete(vm, "vm offers --gpu H")  # every size, for offers
    assert complete(vm, "vm list --profile ") == ["work", "team", "auto", "local"]
    assert complete(vm, "vm --profile w") == ["work"]
    # a --profile on the line limits the VMs to what that profile listed (the fleet store's members stay: one store)
    assert complete(vm, "vm --profile work get ") == [member["id"]]
    assert complete(vm, "vm get --profile work ") == [member["id"]]

    assert vm.mock("status").returncode == 3  # TAB started no mock cloud (nor called one)
