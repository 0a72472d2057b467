"""`vm --help` and `vm --version` stay cheap; completion; colour only where it belongs."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from vm_core.cli.main import COMMANDS, cli, run
from vm_core.cli.output import Output, use_color

HEAVY = {"requests", "grpc", "crusoe_sdk", "lambda_sdk", "nebius_sdk", "betterproto2", "msgspec", "urllib3",
         "importlib.metadata", "mock_clouds"}
PROBE = """
import contextlib, io, sys
from vm_core.cli.main import run
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = run({args!r})
heavy = {heavy!r} & set(sys.modules)
print(code, sorted(heavy), len(out.getvalue()) > 0)
"""


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["-h"], ["create", "--help"], ["list", "--help"]])
def test_help_and_version_import_no_sdk(args: list[str]) -> None:
    done = subprocess.run([sys.executable, "-c", PROBE.format(args=args, heavy=HEAVY)], capture_output=True,
                          text=True, check=True)
    assert done.stdout.split() == ["0", "[]", "True"], done.stderr


def test_version(capsys) -> None:
    assert run(["--version"]) == 0
    assert capsys.readouterr().out == "vm 0.1.0\n"


def test_help_lists_every_command_without_importing_it(capsys) -> None:
    assert run(["--help"]) == 0
    out = capsys.readouterr().out
    for name, (_, text) in COMMANDS.items():
        assert f"  {name}" in out and text in out
    assert "Exit codes: 0 ok" in out.replace("\n ", " ")


def test_every_lazy_command_resolves() -> None:
    for name in COMMANDS:
        command = cli.get_command(None, name)  # type: ignore[arg-type]
        assert command is not None and command.name == name


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(capsys, shell: str) -> None:
    assert run(["completion", shell]) == 0
    assert "_VM_COMPLETE" in capsys.readouterr().out


def test_completion_answers_for_commands_and_providers(monkeypatch, capsys) -> None:
    monkeypatch.setenv("_VM_COMPLETE", "bash_complete")
    monkeypatch.setenv("COMP_WORDS", "vm cr")
    monkeypatch.setenv("COMP_CWORD", "1")
    with pytest.raises(SystemExit):
        run([])
    assert "plain,create" in capsys.readouterr().out.splitlines()
    monkeypatch.setenv("COMP_WORDS", "vm list --provider la")
    monkeypatch.setenv("COMP_CWORD", "3")
    with pytest.raises(SystemExit):
        run([])
    assert capsys.readouterr().out.splitlines() == ["plain,lambda"]


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_without_no_color() -> None:
    assert use_color(FakeTty(), {}) is True
    assert use_color(FakeTty(), {"NO_COLOR": "1"}) is False
    assert use_color(FakeTty(), {"NO_COLOR": ""}) is True  # no-color.org: only a non-empty value counts
    assert use_color(io.StringIO(), {}) is False


def test_table_aligns_coloured_cells(monkeypatch, capsys) -> None:
    monkeypatch.setattr(sys, "stdout", FakeTty())
    monkeypatch.delenv("NO_COLOR", raising=False)
    Output().table(("A", "STATE"), [("x", "running"), ("long-one", "stopped")])
    text = sys.stdout.getvalue()
    assert "\x1b[32mrunning\x1b[0m" in text
    plain = [line.replace("\x1b[32m", "").replace("\x1b[2m", "").replace("\x1b[1m", "").replace("\x1b[0m", "")
             for line in text.splitlines()]
    assert plain == ["A         STATE", "x         running", "long-one  stopped"]
