"""What the command line asks for, read before (or without) parsing it: for the paths where click has not run, or
could not finish (an interruption while importing, a usage error). Imports nothing."""

from __future__ import annotations

from collections.abc import Sequence


def wants_json(args: Sequence[str]) -> bool:
    """-o json anywhere in the arguments (also when parsing stopped, or never began, before the option)."""
    pairs = zip(args, [*args[1:], ""], strict=True)
    return any((a in ("-o", "--output") and b == "json") or a in ("-ojson", "--output=json") for a, b in pairs)
