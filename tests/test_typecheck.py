"""The type check of CI: `mypy` in strict mode over the sources of every package and of the mock clouds, with the
configuration in pyproject.toml ([tool.mypy]). It runs as a test so that `hatch test`, the one CI command, runs it."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_sources_type_check_under_mypy_strict() -> None:
    done = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml")], cwd=REPO,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"mypy found type errors:\n{done.stdout}{done.stderr}"
    assert done.stdout.startswith("Success: no issues found"), done.stdout


def test_the_check_is_strict_and_covers_every_package() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["strict"] is True
    sources = {str(p.relative_to(REPO)) for p in (REPO / "packages").glob("*/src")} | {"mock-clouds/src"}
    checked = {str(p.relative_to(REPO)) for pattern in config["files"] for p in REPO.glob(pattern)}
    assert sources <= checked, sorted(sources - checked)
    # only generated code is exempt (see the comment in pyproject.toml)
    for override in config.get("overrides", []):
        assert all(module.endswith("._pb.*") for module in override["module"]), override
