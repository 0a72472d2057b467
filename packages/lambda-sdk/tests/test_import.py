"""Importing lambda_sdk is cheap: no requests (and no msgspec) until a client or model is used."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import lambda_sdk
import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _run(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)


def test_import_does_not_load_requests_or_grpc() -> None:
    result = _run("import lambda_sdk, sys; assert not {'requests','grpc','msgspec'} & set(sys.modules)")
    assert result.returncode == 0, result.stderr


def test_constructing_a_client_loads_requests_but_makes_no_call() -> None:
    code = (
        "import lambda_sdk, sys\n"
        "c = lambda_sdk.LambdaClient('k', base_url='http://127.0.0.1:9/api/v1')\n"
        "assert 'requests' in sys.modules\n"
        "print(repr(c))\n"
    )
    result = _run(code)
    assert result.returncode == 0, result.stderr
    assert "redacted" in result.stdout and "'k'" not in result.stdout


def test_lazy_names_resolve_and_unknown_names_fail() -> None:
    assert lambda_sdk.LambdaClient.__name__ == "LambdaClient"
    assert lambda_sdk.InstanceStatus.ACTIVE.value == "active"
    assert set(lambda_sdk.__all__) <= set(dir(lambda_sdk))
    with pytest.raises(AttributeError):
        lambda_sdk.NoSuchThing  # noqa: B018
