"""Every hint (`suggestion=`) written in vm-core's source names vm commands so they can be run as printed: the
whole hint is a command (`vm ...`, `chmod ...`), or each command is between backticks. tests/e2e/test_hints.py
runs the hints of many failures; this guards the ones no scenario reaches."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import vm_core

SOURCE = Path(vm_core.__file__).parent
COMMAND = re.compile(r"(?<![\w`-])vm (list|get|create|stop|start|reboot|destroy|offers|providers|config|fleet)\b")
BACKTICKED = re.compile(r"`[^`]*`")


def _text(node: ast.expr) -> str | None:
    """The literal text of a string or f-string (placeholders as X), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "X" for v in node.values)
    if isinstance(node, ast.IfExp):
        return _text(node.body) or _text(node.orelse)
    return None


def hint_texts() -> list[tuple[str, str]]:
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.keyword) and node.arg == "suggestion":
                values = [node.value.body, node.value.orelse] if isinstance(node.value, ast.IfExp) else [node.value]
                found += [(f"{path.relative_to(SOURCE)}:{node.value.lineno}", text) for v in values
                          if (text := _text(v))]
    return found


def test_hints_are_found() -> None:
    assert len(hint_texts()) > 30


def test_commands_in_hints_are_whole_or_backticked() -> None:
    loose = [(where, text) for where, text in hint_texts()
             if not text.startswith("vm ") and COMMAND.search(BACKTICKED.sub("", text))]
    assert loose == []


def test_vm_offers_hints_name_a_gpu() -> None:
    commands = [c for _, text in hint_texts() for c in BACKTICKED.findall(text) + [text] if c.startswith("vm offers")]
    assert commands and all("--gpu " in c or c.endswith("--help") for c in commands), commands
