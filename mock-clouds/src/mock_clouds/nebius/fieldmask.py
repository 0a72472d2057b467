"""The field-mask syntax of Nebius' `X-ResetMask` header, as the official SDKs write it.

A mask is a comma-separated list of paths; a path is dot-separated keys; a key is a name (`[A-Za-z0-9_]+`), `*`
(any list element or map key) or a JSON-quoted string; `key.(a,b)` groups paths under a common prefix, at any
depth. Example: `metadata.labels,spec.(cloud_init_user_data,network_interfaces.*.(name,subnet_id))`.
Spaces around keys and separators are allowed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

_NAME = re.compile(r"[A-Za-z0-9_]+")
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
_WILDCARD = "*"


class MaskSyntaxError(ValueError):
    """The header is not a valid field mask; the message says where."""


@dataclass
class Mask:
    """A tree of keys; `whole` marks a field named without a sub-path (it and everything inside it)."""

    children: dict[str, Mask] = field(default_factory=dict)
    whole: bool = False

    def resets(self, path: str) -> bool:
        """Whether the dotted `path` (e.g. "spec.resources.preset") or one of its ancestors is named whole."""
        nodes = [self]
        for key in path.split("."):
            nodes = [child for node in nodes for child in node._matching(key)]
            if not nodes:
                return False
            if any(node.whole for node in nodes):
                return True
        return False

    def _matching(self, key: str) -> list[Mask]:
        return [child for name, child in self.children.items() if name in (key, _WILDCARD)]

    def _add(self, other: Mask) -> None:
        self.whole = self.whole or other.whole
        for key, sub in other.children.items():
            self.children.setdefault(key, Mask())._add(sub)


def parse(text: str) -> Mask:
    """The mask written in `text` ("" is the empty mask); raises MaskSyntaxError."""
    parser = _Parser(text)
    mask = parser.mask()
    parser.skip_spaces()
    if parser.pos != len(text):
        raise parser.error("unexpected character")
    return mask


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, what: str) -> MaskSyntaxError:
        return MaskSyntaxError(f"invalid X-ResetMask {self.text!r}: {what} at position {self.pos}")

    def skip_spaces(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        self.skip_spaces()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def mask(self) -> Mask:
        """paths := [path (',' path)*]; an empty list is allowed only for the whole header."""
        mask = Mask()
        if self.peek() in ("", ")"):
            return mask
        while True:
            mask._add(self.path())
            if self.peek() != ",":
                return mask
            self.pos += 1

    def path(self) -> Mask:
        """path := key ['.' (path | '(' paths ')')]"""
        key = self.key()
        sub = Mask(whole=True)
        if self.peek() == ".":
            self.pos += 1
            if self.peek() == "(":
                self.pos += 1
                sub = self.mask()
                if self.peek() != ")":
                    raise self.error("expected ')'")
                self.pos += 1
                if not sub.children:
                    raise self.error("empty group")
            else:
                sub = self.path()
        return Mask({key: sub})

    def key(self) -> str:
        char = self.peek()
        if char == _WILDCARD:
            self.pos += 1
            return _WILDCARD
        pattern = _QUOTED if char == '"' else _NAME
        match = pattern.match(self.text, self.pos)
        if match is None:
            raise self.error("expected a field name")
        self.pos = match.end()
        return json.loads(match.group()) if char == '"' else match.group()
