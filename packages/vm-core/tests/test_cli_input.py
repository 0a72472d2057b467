"""Bad input is rejected before any API call (exit 2), with a message that says what is valid.

The profile is the embedded default with autostart disabled: had any command got as far as connecting, it would
exit 4 instead, and a started mock cloud or a created example-cloud file would show that state changed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from vm_core.cli.main import run

CRUSOE_ID = "3f0c6a1e-2b4d-4c8e-9a7f-1d2e3f4a5b6c"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VM_HOME", str(tmp_path))
    monkeypatch.setenv("VM_NO_AUTOSTART", "1")
    monkeypatch.delenv("VM_PROFILE", raising=False)
    return tmp_path


def vm(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


BAD = [
    (["create", "-p", "aws", "--gpu", "H100"], "unknown provider 'aws'; available providers: crusoe, "),
    (["create", "-p", "crusoe", "--gpu", "H1000"], "unknown GPU type 'H1000'; known types: H100, H200, B200"),
    (["create", "-p", "crusoe", "--gpu", "H100:x"], "bad GPU count in 'H100:x': give GPUs per VM as a number"),
    (["create", "-p", "crusoe", "--gpu", "H100:0"], "bad GPU count"),
    (["create", "-p", "crusoe", "--gpu", "H100:1"], "crusoe sells H100 only as H100:8"),
    (["create", "-p", "crusoe", "--gpu", "H100"], "crusoe sells H100 only as H100:8"),  # H100 means H100:1
    (["create", "-p", "lambda", "--gpu", "L40S"], "lambda does not sell L40S; providers that do: crusoe, nebius"),
    (["create", "-p", "crusoe", "--gpu", "H100:8", "--count", "0"], "--count must be from 1 to 64 (got 0)"),
    (["create", "-p", "crusoe", "--gpu", "H100:8", "--count", "-3"], "--count must be from 1 to 64 (got -3)"),
    (["create", "-p", "crusoe", "--gpu", "H100:8", "--count", "65"], "--count must be from 1 to 64 (got 65)"),
    (["create", "-p", "crusoe", "--gpu", "H100:8", "--name", ""], "empty VM name; names are 1-63 characters"),
    (["create", "-p", "crusoe", "--gpu", "H100:8", "--name", "Big"], "invalid VM name 'Big'; names are 1-63"),
    (["create", "-p", "crusoe", "--gpu", "H100:8", "--name", "a_b"], "invalid VM name 'a_b'"),
    (["create", "-p", "crusoe", "--gpu", "H100:8", "--name", "-x"], "invalid VM name '-x'"),
    (["create", "-p", "crusoe", "--gpu", "H100:8", "--name", "x" * 64], "invalid VM name"),
    (["create", "-p", "crusoe", "--gpu", "H100:8", "--name", "x" * 62, "--count", "2"],
     f"invalid VM name '{'x' * 62}-1'"),
    (["create", "-p", "crusoe", "--gpu", "H100:8", "--region", " "], "empty --region"),
    (["create", "-p", "crusoe", "--gpu", "H100:8", "--reservation", ""], "--reservation needs auto, none or a"),
    (["create", "-p", "crusoe", "--gpu", "H100:8", "--reservation", "none", "--strict"], "--strict cannot be combined"),
    (["get", "123", "-p", "crusoe"], "malformed crusoe instance id '123'; crusoe instance ids look like a UUID"),
    (["stop", CRUSOE_ID.replace("-", ""), "-p", "crusoe"], "malformed crusoe instance id"),
    (["destroy", CRUSOE_ID, "-p", "lambda"], "malformed lambda instance id"),
    (["reboot", "instance-1", "-p", "nebius"], "nebius instance ids look like computeinstance-"),
    (["start", "bad", "-p", "example"], "malformed example instance id 'bad'; example instance ids look like ex-"),
    (["get", " ", "-p", "lambda"], "empty instance id"),
    (["offers", "--gpu", "TPU"], "unknown GPU type 'TPU'"),
    (["list", "--provider", "aws"], "unknown provider 'aws'"),
]


@pytest.mark.parametrize(("args", "message"), BAD, ids=[" ".join(a)[:60] for a, _ in BAD])
def test_bad_input_is_exit_2_before_any_call(home: Path, capsys, args: list[str], message: str) -> None:
    code, out, err = vm(capsys, *args)
    assert code == 2, err
    assert err.startswith("vm: error: ") and message in err and "Traceback" not in err
    assert out == ""
    assert not (home / "mock-clouds").exists()


def test_bad_input_under_json_is_a_json_error(home: Path, capsys) -> None:
    code, _, err = vm(capsys, "create", "-p", "crusoe", "--gpu", "H100:8", "--count", "0", "-o", "json")
    assert code == 2
    assert json.loads(err) == {"error": {"code": "usage", "message": "--count must be from 1 to 64 (got 0); larger"
                                         " fleets are a job for several commands or a fleet", "provider": None,
                                         "retryable": False}}


@pytest.mark.parametrize(("args", "message"), [
    (["create", "--gpu", "H100"], "Missing option '--provider'"),
    (["create", "-p", "crusoe", "--gpu", "H100:8", "--count", "many"], "'many' is not a valid integer"),
    (["list", "--colour"], "No such option '--colour'"),
    (["lst"], "No such command 'lst'"),
    (["completion", "tcsh"], "'tcsh' is not one of 'bash', 'zsh', 'fish'"),
    (["create", "-p", "crusoe", "--gpu", "H100:8", "--timeout", "0"], "--timeout"),
])
def test_click_usage_errors_are_exit_2_in_vm_style(home: Path, capsys, args: list[str], message: str) -> None:
    code, _, err = vm(capsys, *args)
    assert code == 2
    first, hint = err.strip().splitlines()
    assert first.startswith("vm: error: ") and message in first
    assert hint.startswith("hint: see `vm")


def test_click_usage_error_under_json(home: Path, capsys) -> None:
    code, _, err = vm(capsys, "get", "-o", "json")
    assert code == 2
    error = json.loads(err)["error"]
    assert error["code"] == "usage" and "Missing argument 'ID'" in error["message"]
    assert error["suggestion"] == "see `vm get --help`"


def test_no_command_shows_the_help(home: Path, capsys) -> None:
    code, _, err = vm(capsys)
    assert code == 2 and "Commands:" in err


@pytest.mark.parametrize(("args", "message"), [
    (["fleet", "create", "--gpu", "H100", "--count", "1", "--name", "p", "--max-price", "cheap"],
     "'cheap' is not a price in USD per hour, e.g. 25 or 12.50"),
    (["fleet", "create", "--gpu", "H100", "--count", "1", "--name", "p", "--max-price", "nan"],
     "'nan' is not a positive price in USD per hour"),
    (["fleet", "create", "--gpu", "H100", "--count", "1", "--name", "p", "--timeout", "soon"],
     "'soon' is not a number of seconds"),
    (["fleet", "create", "--gpu", "H100", "--count", "1", "--name", "p", "--timeout", "-5"],
     "'-5' is not a positive, finite number of seconds"),
])
def test_prices_and_seconds_must_be_positive_finite_numbers(home: Path, capsys: pytest.CaptureFixture[str],
                                                            args: list[str], message: str) -> None:
    code, out, err = vm(capsys, *args)
    assert code == 2 and message in err and out == ""
