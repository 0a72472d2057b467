"""The `vm` commands, in process, against the example third-party provider (tests/example_provider).

The example cloud is a JSON file, so these tests are fast and need no mock clouds; the e2e suite drives the real
executable against the three mock clouds.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from vm_core.cli.app import App, stop_debug_logging
from vm_core.cli.main import run

TOKEN = "tok-3x4mpl3-s3cr3t-9qz7"


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)

    def error(self) -> dict:
        return json.loads(self.err.strip().splitlines()[-1])["error"]


def write_config(home: Path, text: str) -> Path:
    path = home / "config.toml"
    path.write_text(text)
    path.chmod(0o600)
    return path


@pytest.fixture
def cloud(tmp_path: Path) -> Path:
    return tmp_path / "example-cloud.json"


@pytest.fixture
def home(tmp_path: Path, cloud: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VM_HOME", str(tmp_path))
    monkeypatch.setenv("VM_NO_AUTOSTART", "1")
    for name in ("VM_PROFILE", "VM_EXAMPLE_PATH", "VM_EXAMPLE_TOKEN", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    write_config(tmp_path, f"""
default_profile = "p"
[profiles.p.example]
path = "{cloud}"
token = "{TOKEN}"
seconds = 0.05
capacity = 3
[profiles.slow.example]
path = "{cloud}"
token = "{TOKEN}"
seconds = 60
""")
    return tmp_path


@pytest.fixture
def vm(home: Path, capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    def invoke(*args: str) -> Result:
        capsys.readouterr()
        code = run(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return invoke


def create(vm: Callable[..., Result], *args: str) -> Result:
    return vm("create", "--provider", "example", "--gpu", "H100", *args)


def test_lifecycle_in_tables_and_json(vm) -> None:
    made = create(vm, "--name", "box", "-o", "json")
    assert made.code == 0, made.err
    doc = made.json()
    assert set(doc) == {"provider", "id", "name", "state", "gpu", "gpu_count", "region", "reserved",
                        "reservation_id", "spot", "price_per_hour", "fleet", "created_at", "public_ip", "ssh"}
    assert (doc["provider"], doc["name"], doc["state"], doc["gpu"], doc["gpu_count"]) == (
        "example", "box", "running", "H100", 1)
    assert "accepted" in made.err and "box: running" in made.err  # progress, one line per state change
    vm_id = doc["id"]

    table = vm("list")
    assert table.code == 0
    header, row = table.out.splitlines()
    assert header.split() == ["PROVIDER", "ID", "NAME", "STATE", "GPU", "REGION", "RESERVED", "$/H"]
    assert row.split() == ["example", vm_id, "box", "running", "H100x1", "local", "-", "1.25"]

    assert vm("get", vm_id, "--provider", "example", "-o", "json").json()["id"] == vm_id
    assert vm("stop", vm_id, "-p", "example", "-o", "json").json()["state"] == "stopped"
    assert vm("get", vm_id, "-p", "example").out.splitlines()[1].split()[3] == "stopped"
    assert vm("start", vm_id, "-p", "example", "-o", "json").json()["state"] == "running"

    gone = vm("destroy", vm_id, "-p", "example", "-o", "json")
    assert (gone.code, gone.json()) == (0, {"provider": "example", "id": vm_id, "name": "box", "state": "terminated",
                                           "note": None})
    assert vm("destroy", vm_id, "-p", "example").code == 0  # already gone is success
    assert vm("list", "-o", "json").json() == []


def test_count_names_and_concurrent_creates(vm) -> None:
    made = create(vm, "--count", "3", "--name", "web", "-o", "json")
    assert made.code == 0, made.err
    assert sorted(i["name"] for i in made.json()) == ["web-1", "web-2", "web-3"]


def test_generated_name(vm) -> None:
    name = create(vm, "-o", "json").json()["name"]
    assert name.startswith("vm-") and len(name) == 9


def test_partial_failure_keeps_the_created_vms_and_says_so(vm) -> None:
    result = create(vm, "--count", "4", "--name", "many", "-o", "json")  # capacity 3
    assert result.code == 7
    created = result.json()
    assert len(created) == 3 and all(i["state"] == "running" for i in created)
    error = result.error()
    assert error["code"] == "partial_failure" and error["message"] == "1 of 4 VMs failed"
    assert [f["code"] for f in error["failures"]] == ["capacity"]
    assert "left running" in error["suggestion"] and all(i["id"] in error["suggestion"] for i in created)
    assert len(vm("list", "-o", "json").json()) == 3


def test_capacity_error_of_a_single_vm_has_its_own_exit_code(vm) -> None:
    assert create(vm, "--count", "3").code == 0
    result = create(vm, "--name", "one-more")
    assert result.code == 6
    assert "vm: error: example: no room for one-more" in result.err


def test_all_failing_for_one_reason_keeps_that_reason(vm) -> None:
    assert create(vm, "--count", "3").code == 0
    result = create(vm, "--count", "2", "-o", "json")
    assert result.code == 6 and result.error()["message"].startswith("2 of 2 VMs failed")


def test_destroy_several_continues_past_failures(vm) -> None:
    ids = [i["id"] for i in create(vm, "--count", "2", "-o", "json").json()]
    # The second VM is stopped first: stopping both again leaves it as it is ("already stopped").
    assert vm("stop", ids[1], "-p", "example").code == 0
    again = vm("stop", *ids, "-p", "example")
    assert again.code == 0 and ": already stopped" in again.err
    # An id that does not exist fails alone; the other VM is still started.
    result = vm("start", ids[0], "ex-0123abcd", "-p", "example")
    assert result.code == 7
    assert "vm: error: ex-0123abcd: " in result.err and "vm: error: 1 of 2 VMs failed" in result.err
    assert ids[0] in result.out
    assert vm("destroy", *ids, "ex-0123abcd", "-p", "example").code == 0  # an unknown id is already gone


def test_no_wait_prints_the_operation_and_returns(vm) -> None:
    result = vm("create", "-p", "example", "--gpu", "H100", "--name", "later", "--no-wait", "-o", "json",
                "--profile", "slow")
    assert result.code == 0, result.err
    doc = result.json()
    assert doc["operation_id"].startswith("op-") and doc["id"].startswith("ex-") and doc["action"] == "create"
    assert vm("get", doc["id"], "-p", "example", "--profile", "slow", "-o", "json").json()["state"] == "creating"


def test_timeout_exits_9_and_says_the_operation_goes_on(vm) -> None:
    result = create(vm, "--name", "slowpoke", "--timeout", "0.3", "--profile", "slow")
    assert result.code == 9
    assert "goes on in the cloud" in result.err and "hint: follow it with `vm get ex-" in result.err


def test_quiet_suppresses_progress(vm) -> None:
    result = create(vm, "-q", "--name", "hush")
    assert result.code == 0 and result.err == ""


def test_reboot_unsupported_is_exit_5(vm) -> None:
    vm_id = create(vm, "-o", "json").json()["id"]
    result = vm("reboot", vm_id, "-p", "example", "-o", "json")
    assert result.code == 5
    assert result.error() == {"code": "unsupported", "message": "Example Cloud cannot reboot instances",
                              "provider": "example", "retryable": False,
                              "suggestion": f"vm stop {vm_id} --provider example && vm start {vm_id}"
                                            " --provider example",
                              "next": [["vm", "stop", vm_id, "--provider", "example"],
                                       ["vm", "start", vm_id, "--provider", "example"]]}


def test_unknown_instance_is_exit_3(vm) -> None:
    result = vm("get", "ex-0123abcd", "-p", "example")
    assert result.code == 3 and "vm: error: example: no instance ex-0123abcd" in result.err


def test_offers_and_providers(vm) -> None:
    offers = vm("offers", "--gpu", "H100", "-o", "json")
    assert offers.code == 0
    assert offers.json() == [{"provider": "example", "region": "local", "gpu": "H100", "gpu_count": 1,
                              "shape": "ex-h100.1x", "price_per_hour": 1.25, "capacity": 3, "available": True,
                              "reserved": False, "reservation_id": "", "spot": False,
                              "price_source": None}]
    providers = {p["name"]: p for p in vm("providers", "-o", "json").json()}
    assert providers["example"]["configured"] is True and providers["example"]["status"] == "ok"
    assert providers["example"]["capabilities"] == {"stop_start": True, "reboot": False,
                                                      "lists_reservations": False}
    assert providers["lambda"]["configured"] is False  # not in this profile
    assert providers["lambda"]["capabilities"]["stop_start"] is False  # known from the plugin, unconnected


def test_only_configured_providers_are_listed(vm) -> None:
    result = vm("list", "-o", "json")
    assert (result.code, result.json(), result.err) == (0, [], "")


def test_unconfigured_provider_is_a_config_error(vm) -> None:
    result = vm("list", "--provider", "crusoe")
    assert result.code == 4 and "not configured in profile 'p'" in result.err


def test_wrong_token_is_an_auth_error(vm, home: Path, cloud: Path) -> None:
    assert create(vm).code == 0
    write_config(home, f'default_profile = "p"\n[profiles.p.example]\npath = "{cloud}"\ntoken = "another-token"\n')
    result = vm("list", "-o", "json")
    assert result.code == 4 and result.error()["code"] == "auth"


def test_config_show_never_shows_a_secret(vm, cloud: Path) -> None:
    table = vm("config", "show")
    assert table.code == 0 and TOKEN not in table.out + table.err
    assert any(line.split()[:3] == ["example", "token", "<set>"] for line in table.out.splitlines())
    doc = vm("config", "show", "-o", "json").json()
    assert doc["profile"] == "p" and doc["profiles"] == ["p", "slow", "auto", "local"] and doc["embedded"] is False
    assert doc["providers"]["example"]["settings"]["token"] == {
        "value": "<set>", "source": "profile", "from": "config.toml [profiles.p.example]", "secret": True}
    assert doc["providers"]["example"]["settings"]["path"]["value"] == str(cloud)
    assert TOKEN[-4:] not in json.dumps(doc)


def test_settings_from_the_environment(vm, home: Path, cloud: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(home, "[profiles.envonly]\n")
    monkeypatch.setenv("VM_EXAMPLE_PATH", str(cloud))
    monkeypatch.setenv("VM_EXAMPLE_TOKEN", TOKEN)
    assert create(vm, "--name", "from-env").code == 0
    shown = vm("config", "show", "-o", "json").json()["providers"]["example"]["settings"]
    assert shown["path"]["source"] == "env" and shown["token"]["value"] == "<set>"


def test_debug_logs_with_secrets_redacted(vm) -> None:
    result = create(vm, "--debug", "--name", "dbg")
    assert result.code == 0
    assert "debug: vm_core.session: profile p: connecting example (" in result.err
    assert "token=<set>" in result.err and TOKEN not in result.err


def test_debug_output_redacts_any_secret_the_session_has_seen(home: Path) -> None:
    app = App()
    app.debug = True
    session = app.session()
    session.provider("example")
    record = logging.LogRecord("vm_core.x", logging.DEBUG, __file__, 1, "a careless line with %s", (TOKEN,), None)
    try:
        line = logging.getLogger("vm_core").handlers[-1].format(record)
    finally:
        stop_debug_logging()
    assert line == "debug: vm_core.x: a careless line with <redacted>"
    assert app.redact(f"error: {TOKEN}") == "error: <redacted>"


def test_a_plugin_bug_is_an_error_with_a_traceback_only_under_debug(vm, cloud: Path) -> None:
    cloud.write_text("{not json")
    listed = vm("list")
    assert listed.code == 1 and "vm: error: unexpected JSONDecodeError: " in listed.err
    assert "Traceback" not in listed.err
    assert "Traceback (most recent call last)" in vm("list", "--debug").err
    got = vm("get", "ex-0123abcd", "-p", "example")
    assert got.code == 1 and got.err.startswith("vm: error: internal error: JSONDecodeError")
    assert "Traceback" not in got.err
    assert "Traceback (most recent call last)" in vm("get", "ex-0123abcd", "-p", "example", "--debug").err


def test_options_before_or_after_the_command(vm) -> None:
    assert vm("-o", "json", "list").json() == []
    assert vm("config", "-o", "json", "show").json()["profile"] == "p"
    assert vm("--profile", "slow", "config", "show", "-o", "json").json()["profile"] == "slow"
