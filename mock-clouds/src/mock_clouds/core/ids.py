"""Identifier formats of each cloud (see the research notes for the real shapes)."""

from __future__ import annotations

import os
import random
import string
import uuid

_BASE36 = string.digits + string.ascii_lowercase
# Ids are made while the world's lock is held: drawn from a generator seeded once from the system's random
# source, not from that source per character (a system call per draw, which in a busy server also hands the
# interpreter to another thread each time). Ids need to be unique, not unguessable: they are no secrets
# (a child process reseeds it, so two processes never draw the same ids).
_RANDOM = random.Random()
os.register_at_fork(after_in_child=_RANDOM.seed)


def _base36(n: int) -> str:
    """`n` random base36 characters, each uniform: one draw below 36**n, written in base 36."""
    value, chars = _RANDOM.randrange(36**n), []
    for _ in range(n):
        value, digit = divmod(value, 36)
        chars.append(_BASE36[digit])
    return "".join(chars)


def random_uuid() -> uuid.UUID:
    """A random (version 4) UUID, drawn like every id here (`uuid.uuid4` reads the system's source each time)."""
    return uuid.UUID(int=_RANDOM.getrandbits(128), version=4)


def random_bytes(n: int) -> bytes:
    """`n` random bytes, drawn like every id here (for hardware addresses and serial numbers, not for secrets)."""
    return _RANDOM.randbytes(n)


def nebius_id(kind: str, routing: str = "e00") -> str:
    """`computeinstance-e00hf93cfnsgaxygn3`: resource type, routing code, 15 base36 characters."""
    return f"{kind}-{routing}{_base36(15)}"


def vm_id(provider: str) -> str:
    if provider == "crusoe":
        return str(random_uuid())
    if provider == "lambda":
        return random_uuid().hex
    return nebius_id("computeinstance")


def operation_id(provider: str) -> str:
    if provider == "crusoe":
        return str(random_uuid()).upper()
    if provider == "lambda":
        return random_uuid().hex
    return nebius_id("computeoperation")
