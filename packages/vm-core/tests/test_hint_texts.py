"""Every hint (`suggestion=`) written in vm-core's source names vm commands so they can be run as printed: the
whole hint is a command (`vm ...`, `chmod ...`), or each command is between backticks. tests/e2e/test_hints.py
runs the hints of many failures; this guards the ones no scenario reaches.

Outside the CLI a hint that names a vm command is data (vm_core.hints: Hint.run / Hint.say with Command.of);
here it is read as the CLI prints it. Only vm_core.cli spells `vm ...`: no other module, the adapters included,
has a vm command in a string."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import vm_core

SOURCE = Path(vm_core.__file__).parent
VERBS = ("list", "get", "create", "stop", "start", "reboot", "destroy", "offers", "providers", "config", "fleet",
         "ssh", "catalog", "completion")
COMMAND = re.compile(rf"(?<![\w`-])vm ({'|'.join(VERBS)})\b")
ANY_COMMAND = re.compile(rf"(?<![\w-])vm ({'|'.join(VERBS)})\b")
BACKTICKED = re.compile(r"`[^`]*`")


def _text(node: ast.expr) -> str | None:
    """The literal text of a string or f-string (placeholders as X), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "X" for v in node.values)
    if isinstance(node, ast.IfExp):
        return _text(node.body) or _text(node.orelse)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("run", "say"):
        return _hint_text(node)
    return None


def _hint_text(call: ast.Call) -> str | None:
    """A Hint.run(...) or Hint.say(text, Command.of(...), ...) as the CLI prints it (placeholders as X)."""
    if call.func.attr == "run":  # type: ignore[attr-defined]
        return _command(call)
    text = _text(call.args[0])
    commands = [_command(c) if isinstance(c, ast.Call) else "vm X" for c in call.args[1:]]
    if text is None or text.count("{}") != len(commands):
        return None
    pieces = text.split("{}")
    return pieces[0] + "".join(f"`{c}`{after}" for c, after in zip(commands, pieces[1:], strict=True))


def _command(call: ast.Call) -> str | None:
    """The `vm ...` of a literal argument list (numbers and names as X)."""
    words = [a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else "X" for a in call.args]
    return "vm " + " ".join(words) if words else None


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


def test_hints_given_as_data_are_read() -> None:
    """Hint.run and Hint.say in the source are checked too (as the CLI prints them)."""
    texts = dict(hint_texts())
    assert any(t == "vm fleet destroy X" for t in texts.values())
    assert any(t == "see `vm fleet status X`, or pick another name" for t in texts.values())


def test_only_the_cli_spells_vm_commands() -> None:
    """No string (docstrings aside) of a module outside vm_core.cli names a vm command: the core gives hints as
    data and the CLI renders them."""
    spelled = [(str(path.relative_to(SOURCE)), node.lineno, node.value) for path in _core_files()
               for node in _strings(ast.parse(path.read_text(), str(path))) if ANY_COMMAND.search(node.value)]
    assert spelled == []


def _core_files() -> list[Path]:
    return [p for p in sorted(SOURCE.rglob("*.py"))
            if p.relative_to(SOURCE).parts[0] != "cli"]


def _strings(tree: ast.Module) -> list[ast.Constant]:
    """The string constants of a module, docstrings left out."""
    documented = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    docstrings = {id(n.body[0].value) for n in ast.walk(tree) if isinstance(n, documented) and n.body
                  and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [n for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings]


def test_the_scan_sees_a_spelled_command(tmp_path: Path) -> None:
    """The scan is not vacuous: a string naming a vm command is found, one in a docstring is not."""
    tree = ast.parse('"""See `vm list`."""\nHINT = "run `vm fleet status x`"\n')
    assert [n.value for n in _strings(tree) if ANY_COMMAND.search(n.value)] == ["run `vm fleet status x`"]


def test_hints_naming_vm_commands_are_data() -> None:
    """No hint is text naming a vm command: it is a Hint, so `-o json` gives its `next`."""
    written = [(f"{path.relative_to(SOURCE)}:{node.lineno}", text)
               for path in sorted(SOURCE.rglob("*.py"))
               for node in ast.walk(ast.parse(path.read_text(), str(path)))
               if isinstance(node, ast.keyword) and node.arg in ("suggestion", "again", "note")
               and isinstance(node.value, (ast.Constant, ast.JoinedStr)) and (text := _text(node.value))
               and ANY_COMMAND.search(text)]
    assert written == []


OPTION = re.compile(r"(?<![\w-])--[a-z]")
# The core modules that must word no option: the top level and the fleet engine. The adapters and the provider kit
# word their own errors (see NOT_YET_DATA).
OPTION_FREE_PACKAGES = ("fleet",)


def _option_free_files() -> list[Path]:
    return [p for p in sorted(SOURCE.rglob("*.py"))
            if len(p.relative_to(SOURCE).parts) == 1 or p.relative_to(SOURCE).parts[0] in OPTION_FREE_PACKAGES]


def _worded_options(tree: ast.Module) -> list[str]:
    """The strings of a module (docstrings aside) that name an option outside a command's arguments (Command.of,
    Hint.run)."""
    arguments = {id(a) for node in ast.walk(tree) if isinstance(node, ast.Call)
                 and isinstance(node.func, ast.Attribute) and node.func.attr in ("of", "run") for a in node.args}
    return [n.value for n in _strings(tree) if id(n) not in arguments and OPTION.search(n.value)]


def test_the_core_words_no_option() -> None:
    """Option names (`--reservation`, `--max-price`) are the CLI's words: outside vm_core.cli the core says what
    is wrong as data (model.ReservationProblem, a Setting in Words or a Hint, which the CLI spells as its option)
    and names options only inside a command's arguments (Command.of, Hint.run)."""
    files = _option_free_files()
    assert {"model.py", "calls.py", "hints.py", "sshkeys.py", "ssh.py"} <= {p.name for p in files}
    assert any(p.parent.name == "fleet" and p.name == "budget.py" for p in files)
    worded = [(str(p.relative_to(SOURCE)), text) for p in files for text in _worded_options(ast.parse(p.read_text()))]
    assert worded == []


def test_the_option_scan_sees_an_option_in_a_string() -> None:
    """The scan is not vacuous: an option in prose is found; in a docstring or a command's arguments it is not."""
    tree = ast.parse('"""Use --ttl."""\nA = "raise --max-price"\nB = Hint.run("offers", "--gpu", gpu)\n')
    assert _worded_options(tree) == ["raise --max-price"]
