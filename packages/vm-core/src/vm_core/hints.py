"""What to do next, as data: the core says which vm command helps, the CLI (vm_core.cli.hints) says how it is
spelled (`vm ARGS...`, quoted for a POSIX shell) and JSON output gives each command as its argv.

A Hint is advice: prose whose `{}` marks stand for its commands, in order (a hint without commands is plain text,
marks and all). A hint that is only commands (`Hint.run(...)`, or commands joined by `&&`) prints as that command
line; commands inside prose print between backticks, so every command a hint shows can be copied and run as
printed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

MARK = "{}"


@dataclass(frozen=True, slots=True)
class Command:
    """One vm command: its arguments after the program name, e.g. ("fleet", "destroy", "train")."""

    args: tuple[str, ...]

    @classmethod
    def of(cls, *args: object) -> Command:
        """The command of these arguments (numbers and other values as their str)."""
        return cls(tuple(str(a) for a in args))


@dataclass(frozen=True, slots=True)
class Hint:
    """Advice: `text`, in which each MARK stands for the next of `commands` (as many marks as commands; without
    commands the text is taken as it is)."""

    text: str
    commands: tuple[Command, ...] = ()

    def __post_init__(self) -> None:
        if self.commands and self.text.count(MARK) != len(self.commands):
            raise ValueError(f"hint {self.text!r} has {self.text.count(MARK)} marks for {len(self.commands)} commands")

    @classmethod
    def run(cls, *args: object) -> Hint:
        """The hint that is one command and nothing else."""
        return cls(MARK, (Command.of(*args),))

    @classmethod
    def say(cls, text: str, *commands: Command) -> Hint:
        """Prose with commands in it: Hint.say("see {}, or pick another name", Command.of("fleet", "status", n))."""
        return cls(text, commands)

    @property
    def is_command_line(self) -> bool:
        """Whether the hint is only its commands: one, or several joined by `&&` (a shell line)."""
        return bool(self.commands) and not self.text.replace(MARK, "").replace("&&", "").strip()

    def parts(self) -> Iterable[str | Command]:
        """The text and commands in reading order (empty texts left out)."""
        if not self.commands:
            yield self.text
            return
        pieces = self.text.split(MARK)
        for piece, command in zip(pieces, self.commands, strict=False):
            if piece:
                yield piece
            yield command
        if pieces[-1]:
            yield pieces[-1]


def hint_of(suggestion: str | Hint | None) -> Hint | None:
    """A hint from what an error was given: a Hint as is, plain text as advice that names no vm command."""
    if suggestion is None or isinstance(suggestion, Hint):
        return suggestion
    return Hint(suggestion) if suggestion else None
