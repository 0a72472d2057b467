"""Each SDK installs and works alone: it declares only its own client libraries and cloud-sdk-core (which needs
nothing but the standard library), and importing it loads neither vm-core, the mock clouds nor another SDK.

This checks the packaging metadata and what an import loads, in a fresh interpreter; nothing is built or
installed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

PACKAGES = Path(__file__).resolve().parents[1] / "packages"

# distribution -> (import name, the modules its client needs to load)
SDKS = {
    "crusoe-sdk": ("crusoe_sdk", "crusoe_sdk.client"),
    "lambda-sdk": ("lambda_sdk", "lambda_sdk.client"),
    "nebius-sdk": ("nebius_sdk", "nebius_sdk.client"),
}
DECLARED = {
    "crusoe-sdk": {"requests", "msgspec", "cloud-sdk-core"},
    "lambda-sdk": {"requests", "msgspec", "cloud-sdk-core"},
    "nebius-sdk": {"grpcio", "betterproto2", "cloud-sdk-core", "cryptography"},
    "cloud-sdk-core": set(),
}
WORKSPACE_ONLY = {"vm_core", "mock_clouds", "crusoe_sdk", "lambda_sdk", "nebius_sdk"}


def _dependencies(distribution: str) -> set[str]:
    project = tomllib.loads((PACKAGES / distribution / "pyproject.toml").read_text())["project"]
    return {re.split(r"[\s\[<>=~!;]", requirement, maxsplit=1)[0] for requirement in project["dependencies"]}


def _loaded_after(statement: str) -> set[str]:
    """The top-level packages loaded by `statement` in a fresh interpreter."""
    code = f"{statement}\nimport json, sys\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


@pytest.mark.parametrize("distribution", sorted(DECLARED))
def test_each_package_declares_only_its_own_dependencies(distribution: str) -> None:
    assert _dependencies(distribution) == DECLARED[distribution]


@pytest.mark.parametrize("distribution", sorted(SDKS))
def test_an_sdk_and_its_client_load_no_other_package_of_the_repository(distribution: str) -> None:
    package, client = SDKS[distribution]
    loaded = _loaded_after(f"import {package}, {client}\n{package}.Pager, {package}.PollPolicy, {package}.RetryPolicy")
    assert loaded & WORKSPACE_ONLY == {package}
    assert "cloud_sdk_core" in loaded


def test_cloud_sdk_core_loads_only_the_standard_library() -> None:
    added = _loaded_after("import cloud_sdk_core") - _loaded_after("pass")  # start-up (site, .pth hooks) aside
    assert added - set(sys.stdlib_module_names) == {"cloud_sdk_core"}
