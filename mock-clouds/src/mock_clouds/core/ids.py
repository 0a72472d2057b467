"""Identifier formats of each cloud (see the research notes for the real shapes)."""

from __future__ import annotations

import secrets
import string
import uuid

_BASE36 = string.digits + string.ascii_lowercase


def _base36(n: int) -> str:
    return "".join(secrets.choice(_BASE36) for _ in range(n))


def nebius_id(kind: str, routing: str = "e00") -> str:
    """`computeinstance-e00hf93cfnsgaxygn3`: resource type, routing code, 15 base36 characters."""
    return f"{kind}-{routing}{_base36(15)}"


def vm_id(provider: str) -> str:
    if provider == "crusoe":
        return str(uuid.uuid4())
    if provider == "lambda":
        return uuid.uuid4().hex
    return nebius_id("computeinstance")


def operation_id(provider: str) -> str:
    if provider == "crusoe":
        return str(uuid.uuid4()).upper()
    if provider == "lambda":
        return uuid.uuid4().hex
    return nebius_id("computeoperation")
