"""What to do next, as data: the core says which vm command helps, the CLI (vm_core.cli.spelling) says how it is
spelled (`vm ARGS...`, quoted for a POSIX shell) and JSON output gives each command as its argv.

A Hint is advice: prose whose `{}` marks stand for its commands and settings, in order (a hint without them is
plain text, marks and all). A hint that is only commands (`Hint.run(...)`, or commands joined by `&&`) prints as
that command line; commands inside prose print between backticks, so every command a hint shows can be copied and
run as printed. A Setting names an input of the running command (`max_price`); the CLI spells it as its option.

Text that is not advice names settings the same way: `Words` is a str (its plain form) that keeps its parts, so
messages and notes pass through the engine as strings and the CLI still spells their settings.
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
class Setting:
    """An input of the running command, as data: `name` is its parameter (max_price, strict), `value` what it
    is set to ("" when the value is not part of the point). The CLI spells it as its option (`--max-price 4.00`);
    elsewhere it reads as `plain`, by default its name in words and its value."""

    name: str
    value: str = ""
    plain: str = ""

    def __str__(self) -> str:
        return self.plain or " ".join(w for w in (self.name.replace("_", " "), self.value) if w)


@dataclass(frozen=True, slots=True)
class Hint:
    """Advice: `text`, in which each MARK stands for the next of `refs`, commands and settings (as many marks as
    refs; without refs the text is taken as it is)."""

    text: str
    refs: tuple[Command | Setting, ...] = ()

    def __post_init__(self) -> None:
        if self.refs and self.text.count(MARK) != len(self.refs):
            raise ValueError(f"hint {self.text!r} has {self.text.count(MARK)} marks for {len(self.refs)} commands")

    @property
    def commands(self) -> tuple[Command, ...]:
        """The vm commands the hint names, in order."""
        return tuple(r for r in self.refs if isinstance(r, Command))

    @classmethod
    def run(cls, *args: object) -> Hint:
        """The hint that is one command and nothing else."""
        return cls(MARK, (Command.of(*args),))

    @classmethod
    def say(cls, text: str, *refs: Command | Setting) -> Hint:
        """Prose with commands or settings in it: Hint.say("see {}, or pick another name", Command.of("fleet",
        "status", n)); Hint.say("raise {}", Setting("max_price"))."""
        return cls(text, refs)

    @property
    def is_command_line(self) -> bool:
        """Whether the hint is only its commands: one, or several joined by `&&` (a shell line)."""
        return len(self.commands) == len(self.refs) > 0 and not self.text.replace(MARK, "").replace("&&", "").strip()

    def parts(self) -> Iterable[str | Command | Setting]:
        """The text, commands and settings in reading order (empty texts left out)."""
        if not self.refs:
            yield self.text
            return
        pieces = self.text.split(MARK)
        for piece, ref in zip(pieces, self.refs, strict=False):
            if piece:
                yield piece
            yield ref
        if pieces[-1]:
            yield pieces[-1]


Part = str | Command | Setting


class Words(str):
    """Text that names settings (or commands) as data: the str is the plain form (each Setting as its `plain`,
    each command as its arguments), `parts` keep them so the CLI can spell them: str(Words("reserved (",
    Setting("reservation", "none"), ")")) is "reserved (reservation none)"; the CLI prints
    "reserved (--reservation none)". Words given as parts are flattened into these."""

    parts: tuple[Part, ...]

    def __new__(cls, *parts: Part) -> Words:
        flat = tuple(q for p in parts for q in (p.parts if isinstance(p, Words) else (p,)))
        words = super().__new__(cls, "".join(_plain(p) for p in flat))
        words.parts = flat
        return words


def _plain(part: Part) -> str:
    return part if isinstance(part, str) else " ".join(part.args) if isinstance(part, Command) else str(part)


def phrase(*parts: Part) -> str:
    """The parts as one text: Words when any of them names a setting or command (or is Words), else a str."""
    if any(not isinstance(p, str) or isinstance(p, Words) for p in parts):
        return Words(*parts)
    return "".join(str(p) for p in parts)


def joined(separator: str, items: Iterable[str]) -> str:
    """separator.join(items), as Words when some item is Words (keeping its settings)."""
    listed = list(items)
    return phrase(*[part for n, item in enumerate(listed) for part in ((separator, item) if n else (item,))])


def hint_of(suggestion: str | Hint | None) -> Hint | None:
    """A hint from what an error was given: a Hint as is, plain text as advice that names no vm command."""
    if suggestion is None or isinstance(suggestion, Hint):
        return suggestion
    return Hint(suggestion) if suggestion else None
