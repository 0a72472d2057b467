"""Every ```python example of docs/python-api.md and of the README's "Python API" section runs as written, in
order, in one interpreter per document, against the embedded mock clouds of a fresh VM_HOME (the `local`
profile, which a machine without cloud credentials uses)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import TIMEOUT, VmHome

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
# Runs the blocks (a JSON list on stdin) in one namespace; a failing block is named with its first line.
RUNNER = """
import json, sys, traceback
namespace = {"__name__": "__docs__"}
for number, block in enumerate(json.load(sys.stdin), 1):
    try:
        exec(compile(block, f"<block {number}>", "exec"), namespace)
    except BaseException:
        sys.stderr.write(f"block {number} failed ({block.splitlines()[0]!r}):\\n{traceback.format_exc()}")
        sys.exit(1)
"""


def python_blocks(text: str) -> list[str]:
    return BLOCK.findall(text)


def readme_section() -> str:
    """The README's "## Python API" section, up to the next section."""
    text = (ROOT / "README.md").read_text()
    start = text.index("\n## Python API\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else None]


def run_blocks(home: VmHome, blocks: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(blocks), env=home.env,
                          capture_output=True, text=True, timeout=TIMEOUT, check=False)


def test_the_blocks_are_found() -> None:
    assert len(python_blocks((ROOT / "docs" / "python-api.md").read_text())) >= 4
    assert len(python_blocks(readme_section())) == 1


@pytest.mark.parametrize("document", ["docs/python-api.md", "README.md"])
def test_every_example_runs(fresh_home: VmHome, document: str) -> None:
    text = readme_section() if document == "README.md" else (ROOT / document).read_text()
    done = run_blocks(fresh_home, python_blocks(text))
    assert done.returncode == 0, done.stderr
    for secret in fresh_home.secrets():
        assert secret not in done.stdout + done.stderr
    leftover = [i for i in fresh_home.inventory() if i["state"] != "terminated" and i["name"].startswith("doc-")]
    assert leftover == []  # the examples destroy what they create
