"""How hints and words (vm_core.hints) are spelled: each command as `vm ARGS...` quoted for a POSIX shell
(shlex), bare when the hint is just its commands (one, or joined by `&&`), between backticks inside prose; each
setting as its option, `--NAME VALUE` (the parameter's name with dashes, as click names options). JSON output
gives the hint's text as `suggestion` and its commands as `next`, a list of argv lists (["vm", "fleet", "destroy",
"train"])."""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from ..hints import Command, Hint, Part, Setting, Words

PROGRAM = "vm"


def argv(command: Command) -> list[str]:
    """The command line of `command` as a list of arguments, the program first."""
    return [PROGRAM, *command.args]


def spelled(command: Command) -> str:
    """The command as it is typed in a shell."""
    return shlex.join(argv(command))


def option(setting: Setting) -> str:
    """The setting as its command-line option: Setting("max_price", "4.00") is `--max-price 4.00`."""
    name = "--" + setting.name.replace("_", "-")
    return f"{name} {setting.value}" if setting.value else name


def render(hint: Hint) -> str:
    """The hint as `vm` prints it after "hint: "."""
    return _spelled(hint.parts(), "" if hint.is_command_line else "`")


def words(text: str) -> str:
    """A message or note as `vm` prints it: Words with their settings as options, commands between backticks."""
    return _spelled(text.parts, "`") if isinstance(text, Words) else text


def _spelled(parts: Iterable[Part], quote: str) -> str:
    return "".join(f"{quote}{spelled(p)}{quote}" if isinstance(p, Command) else option(p) if isinstance(p, Setting)
                   else p for p in parts)


def to_json(hint: Hint | None) -> dict[str, object]:
    """The hint's keys of a JSON error body: none without a hint; `next` only when it names commands."""
    if hint is None:
        return {}
    body: dict[str, object] = {"suggestion": render(hint)}
    if hint.commands:
        body["next"] = [argv(c) for c in hint.commands]
    return body
