"""The README's "What am I spending" section is true: each `vm` line of its bash block runs (exit 0) against the
embedded mock clouds after VMs were made and destroyed, the table header it shows is `vm cost`'s, every name of
its JSON and CSV schemas is in the output, and its Python block runs as written."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from .test_python_api_docs import python_blocks, run_blocks

if TYPE_CHECKING:
    from .conftest import VmHome

ROOT = Path(__file__).resolve().parents[2]


def _section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("\n## What am I spending\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else None]


def _block(kind: str) -> str:
    [found] = re.findall(rf"^```{kind}\n(.*?)^```", _section(), re.S | re.M)
    return found


def test_every_example_of_the_section_is_true(fresh_home: VmHome) -> None:
    vm = fresh_home
    made = vm.ok("create", "-p", "crusoe", "--gpu", "H100:8", "--name", "readme-cost", "-o", "json").json()
    vm.ok("destroy", made["id"], "-p", "crusoe", "-y")
    commands = [line.split("#")[0].strip() for line in _block("bash").splitlines() if line.strip()]
    assert len(commands) == 3
    for command in commands:
        words = shlex.split(command)
        assert words[:3] == ["hatch", "run", "vm"], command
        vm.ok(*words[3:])
    assert vm.ok("cost").out.splitlines()[0].split() == _block("text").split()
    doc = vm.ok("cost", "--since", "1d", "-o", "json").json()
    row_names = re.search(r"`ROW = \{(.*?)\}`", _section(), re.S)
    assert row_names is not None
    assert set(doc) == {"since", "until", "by", "currency", "groups", "total", "estimate"}
    assert set(doc["total"]) == {n.strip().strip('"') for n in row_names.group(1).split(",")}
    header = vm.ok("cost", "-o", "csv").out.splitlines()[0]
    assert f"`{header}`" in _section()
    done = run_blocks(vm, python_blocks(_section()))
    assert done.returncode == 0, done.stderr
    assert "crusoe" in done.stdout
