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
