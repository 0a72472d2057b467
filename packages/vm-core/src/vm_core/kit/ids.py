"""The check of an instance id an adapter is given, before any call: the plugin's `instance_id_pattern`, applied."""

from __future__ import annotations

import re
from collections.abc import Callable

from ..errors import UsageError


def id_check(pattern: str, message: str, *, provider: str) -> Callable[[str], None]:
    """A function raising UsageError (`message`, whose `{id!r}` is the id) for an id `pattern` does not match
    whole; it returns None for a good one."""
    compiled = re.compile(pattern)

    def check(instance_id: str) -> None:
        if not compiled.fullmatch(instance_id or ""):
            raise UsageError(message.format(id=instance_id), provider=provider)
    return check
