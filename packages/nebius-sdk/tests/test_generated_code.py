"""CI guard: the committed `nebius_sdk/_pb` must be exactly what `protos/generate.py` makes of `protos/`."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
TARGET = "packages/nebius-sdk/src/nebius_sdk/_pb"


def test_generated_code_is_up_to_date() -> None:
    missing = [m for m in ("grpc_tools", "betterproto2_compiler") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(
            f"code generator not installed ({', '.join(missing)}); install grpcio-tools and "
            "betterproto2-compiler==0.10.* to check that nebius_sdk/_pb is not stale"
        )
    result = subprocess.run(
        [sys.executable, "protos/generate.py", "--check", "--target", TARGET],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, (
        f"nebius_sdk/_pb is stale; run `python protos/generate.py` and commit the result\n"
        f"{result.stdout}{result.stderr}"
    )


def test_protos_script_has_its_generator_in_the_default_environment() -> None:
    """`hatch run protos --check` (README) runs in hatch's default environment: it must install the generator."""
    import tomllib

    hatch = tomllib.loads((REPO / "hatch.toml").read_text())
    assert "protos/generate.py" in hatch["envs"]["default"]["scripts"]["protos"]
    names = {dep.split("=")[0].split("<")[0].split(">")[0].strip() for dep in hatch["envs"]["default"]["dependencies"]}
    assert {"grpcio-tools", "betterproto2-compiler", "ruff"} <= names
