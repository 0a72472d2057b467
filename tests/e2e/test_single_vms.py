"""Single VMs and the CLI through the real `vm`: regions, reboot, idempotent verbs, output, filters, prompts."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import VmHome

PROVIDERS = ("crusoe", "lambda", "nebius")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_unknown_region_is_exit_2_before_any_create_listing_the_offered_regions(shared_home: VmHome,
                                                                                 provider: str) -> None:
    shared_home.ok("list")
    before = shared_home.inventory()
    result = shared_home("create", "-p", provider, "--gpu", "H100", "--region", "mars-1", "--name", "lost",
                         "-o", "json")
    assert result.code == 2 and result.out == "", result.err
    error = result.error()
    assert error["code"] == "usage" and "'mars-1'" in error["message"]
    offered = {o["region"] for o in shared_home.ok("offers", "--gpu", "H100", "-p", provider, "--all",
                                                     "-o", "json").json()}
    named = set(error["message"].split("regions that sell it: ")[1].replace(";", ",").replace(
        "with capacity now: ", "").replace("without: ", "").split(", "))
    assert named == offered
    assert shared_home.inventory() == before


def _progress(run_err: str) -> list[str]:
    return [line.split(": ")[-1] for line in run_err.splitlines()]


def test_crusoe_reboot_is_stop_then_start_and_hard_is_reset(shared_home: VmHome) -> None:
    vm = shared_home.ok("create", "-p", "crusoe", "--gpu", "H100", "--name", "rb-crusoe", "-o", "json").json()
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
