"""How hints (vm_core.hints) are spelled: each command as `vm ARGS...` quoted for a POSIX shell (shlex), bare
when the hint is just its commands (one, or joined by `&&`), between backticks inside prose. JSON output gives
the hint's text as `suggestion` and its commands as `next`, a list of argv lists (["vm", "fleet", "destroy",
"train"])."""

from __future__ import annotations

import shlex

from ..hints import Command, Hint

PROGRAM = "vm"


def argv(command: Command) -> list[str]:
    """The command line of `command` as a list of arguments, the program first."""
    return [PROGRAM, *command.args]


def spelled(command: Command) -> str:
    """The command as it is typed in a shell."""
    return shlex.join(argv(command))


def render(hint: Hint) -> str:
    """The hint as `vm` prints it after "hint: "."""
    quote = "" if hint.is_command_line else "`"
    return "".join(f"{quote}{spelled(p)}{quote}" if isinstance(p, Command) else p for p in hint.parts())


def to_json(hint: Hint | None) -> dict[str, object]:
    """The hint's keys of a JSON error body: none without a hint; `next` only when it names commands."""
    if hint is None:
        return {}
    body: dict[str, object] = {"suggestion": render(hint)}
    if hint.commands:
        body["next"] = [argv(c) for c in hint.commands]
    return body
