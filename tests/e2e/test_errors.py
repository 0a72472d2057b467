"""Errors through the real `vm`: exit codes, messages on stderr (plain or JSON), and no state changed by bad input."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import VmHome

# Regions of the default scenario where the cloud sells H100 but has no H100 capacity (Crusoe's has room for two
# VMs, which the test fills first).
NO_H100_CAPACITY = {"crusoe": "us-southcentral1-a", "lambda": "us-east-1", "nebius": "eu-west1"}
H100 = {"crusoe": "H100:8", "lambda": "H100", "nebius": "H100"}  # a size each sells (crusoe: only 8 GPUs)
WRONG = "d3JvbmctY3JlZGVudGlhbA"
CONFIG = f"""
default_profile = "local"
[profiles.local]
embedded = true
[profiles.bad]
embedded = true
[profiles.bad.crusoe]
secret_key = "{WRONG}"
[profiles.bad.lambda]
api_key = "{WRONG}"
[profiles.bad.nebius]
token = "{WRONG}"
[profiles.half]
embedded = true
[profiles.half.lambda]
api_key = "{WRONG}"
"""


@pytest.fixture(scope="module")
def home(shared_home: VmHome) -> VmHome:
    shared_home.config(CONFIG)
    return shared_home


@pytest.mark.parametrize("provider", sorted(NO_H100_CAPACITY))
def test_no_capacity_is_exit_6_and_leaves_nothing(home: VmHome, provider: str) -> None:
    name = f"full-{provider}"
    fillers = []
    if provider == "crusoe":
        fillers = [i["id"] for i in home.ok("create", "-p", provider, "--gpu", H100[provider], "--region",
                                            NO_H100_CAPACITY[provider], "--count", "2", "--name", "filler",
                                            "--reservation", "none", "-o", "json").json()]
    result = home("create", "-p", provider, "--gpu", H100[provider], "--region", NO_H100_CAPACITY[provider],
                  "--name", name, "--reservation", "none", "-o", "json")
    assert result.code == 6, result.err
    error = result.error()
    assert (error["code"], error["provider"], error["retryable"]) == ("capacity", provider, False)
    assert error["scope"] in ("zone", "region", "provider") and error["message"]
    assert result.out == "" and home.live(name) == []
    table = home("create", "-p", provider, "--gpu", H100[provider], "--region", NO_H100_CAPACITY[provider], "--name",
                 name, "--reservation", "none", "-q")
    assert table.code == 6 and table.err.startswith("vm: error: ") and "Traceback" not in table.err
    if fillers:
        home.ok("destroy", *fillers, "-p", provider)


@pytest.mark.parametrize("provider", ["crusoe", "lambda", "nebius"])
def test_wrong_credentials_are_exit_4(home: VmHome, provider: str) -> None:
    result = home("list", "--profile", "bad", "-p", provider, "-o", "json")
    assert result.code == 4, result.err
    assert result.error()["code"] == "auth" and result.error()["provider"] == provider
    assert WRONG not in result.out + result.err


def test_all_providers_failing_alike_keep_the_exit_code(home: VmHome) -> None:
    result = home("list", "--profile", "bad")
    assert result.code == 4
    assert sum(line.startswith("vm: warning: ") for line in result.err.splitlines()) == 3
    assert "vm: error: 3 of 3 providers failed" in result.err


def test_one_failing_provider_gives_a_warning_and_the_others_results(home: VmHome) -> None:
    vm_id = home.ok("create", "-p", "nebius", "--gpu", "H100", "--name", "seen-anyway", "-o", "json").json()["id"]
    table = home("list", "--profile", "half")
    assert table.code == 7
    assert [line for line in table.err.splitlines() if line.startswith("vm: warning: ")][0].startswith(
        "vm: warning: lambda: ")
    assert "vm: error: 1 of 3 providers failed" in table.err
    assert vm_id in table.out
    as_json = home("list", "--profile", "half", "-o", "json")
    assert as_json.code == 7 and vm_id in [i["id"] for i in as_json.json()]
    error = as_json.error()
    assert error["code"] == "partial_failure" and [f["target"] for f in error["failures"]] == ["lambda"]
    assert error["failures"][0]["code"] == "auth"
    home.ok("destroy", vm_id, "-p", "nebius")


BAD_INPUT = [
    ["create", "-p", "crusoe", "--gpu", "H100", "--count", "0"],
    ["create", "-p", "crusoe", "--gpu", "H100", "--count", "1000"],
    ["create", "-p", "lambda", "--gpu", "L40S"],
    ["create", "-p", "nebius", "--gpu", "H100", "--name", "Not_Valid"],
    ["create", "-p", "nebius", "--gpu", "H100", "--name", ""],
    ["create", "-p", "azure", "--gpu", "H100"],
    ["create", "-p", "crusoe", "--gpu", "K80"],
    ["create", "-p", "crusoe", "--gpu", "H100", "--reservation", "none", "--strict"],
    ["destroy", "not-an-id", "-p", "crusoe"],
    ["stop", "1234", "-p", "nebius"],
    ["reboot", "xyz", "-p", "lambda"],
]


def test_bad_input_is_exit_2_and_changes_nothing(home: VmHome) -> None:
    home.ok("list")  # the mock clouds are up
    before = home.inventory()
    for args in BAD_INPUT:
        result = home(*args)
        assert result.code == 2, (args, result.err)
        assert result.err.startswith("vm: error: ") and "Traceback" not in result.err, args
        as_json = home(*args, "-o", "json")
        assert as_json.code == 2 and as_json.error()["code"] == "usage", args
    assert home.inventory() == before


def test_unknown_provider_lists_the_loaded_ones(home: VmHome) -> None:
    result = home("list", "-p", "aws")
    assert result.code == 2
    assert "unknown provider 'aws'; available providers: crusoe, " in result.err and "lambda, nebius" in result.err


def test_unknown_profile_lists_the_profiles(home: VmHome) -> None:
    result = home("list", "--profile", "prod")
    assert result.code == 4
    assert "unknown profile 'prod'" in result.err and "profiles: bad, half, auto, local" in result.err
    assert home("list", env={"VM_PROFILE": "prod"}).code == 4


def test_config_readable_by_others_is_refused(fresh_home: VmHome) -> None:
    fresh_home.path.mkdir(parents=True)
    path = fresh_home.config("[profiles.local]\nembedded = true\n", mode=0o644)
    result = fresh_home("list")
    assert result.code == 4
    assert result.err.splitlines() == [
        f"vm: error: {path} is accessible to group or others (mode 0644) and may hold credentials; refusing to"
        " read it", f"hint: chmod 600 {path}"]
    assert not fresh_home.mock_dir.exists()  # refused before anything started


def test_malformed_config_names_file_and_line(fresh_home: VmHome) -> None:
    fresh_home.path.mkdir(parents=True)
    path = fresh_home.config("[profiles.local]\nembedded = tru\n")
    result = fresh_home("list", "-o", "json")
    assert result.code == 4
    assert result.error()["code"] == "config"
    assert result.error()["message"].startswith(f"{path} is not valid TOML: ") and "line 2" in result.error()["message"]


def test_without_autostart_it_says_how_to_start_the_clouds(fresh_home: VmHome) -> None:
    result = fresh_home("list", env={"VM_NO_AUTOSTART": "1"})
    assert result.code == 4
    assert "VM_NO_AUTOSTART is set" in result.err
    assert f"-m mock_clouds serve --detach --state-dir {fresh_home.mock_dir}" in result.err
    assert not (fresh_home.mock_dir / "endpoints.json").exists()
