"""API-key authentication: `Bearer <key>`, `Basic base64("<key>:")` (curl -u KEY:) and raw `Basic <key>`.

The credential's owner is the Lambda account; its scope is the project whose owner is that account.
"""

from __future__ import annotations

import base64
import binascii

from ..core.models import Provider
from ..core.world import World
from .errors import invalid_api_key


def candidate_keys(authorization: str) -> list[str]:
    """The API keys an Authorization header may carry, most likely first (empty for other schemes)."""
    scheme, _, credentials = authorization.strip().partition(" ")
    credentials = credentials.strip()
    if not credentials:
        return []
    if scheme.lower() == "bearer":
        return [credentials]
    if scheme.lower() != "basic":
        return []
    candidates = [_basic_user(credentials), _basic_user(credentials.removesuffix(":")), credentials]
    return [c for c in dict.fromkeys(candidates) if c]


def _basic_user(encoded: str) -> str:
    """The user part of a base64 `user:password` pair (the API key), or "" if it is not one."""
    try:
        decoded = base64.b64decode(encoded, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return ""
    user, colon, _ = decoded.partition(":")
    return user if colon else ""


def authenticate(world: World, headers: dict[str, str]) -> str:
    """The account the request's API key belongs to, else raises the 401 ApiError. Call inside world.tx()."""
    for key in candidate_keys(headers.get("authorization", "")):
        owner = world.owner_of(Provider.LAMBDA, key)
        if owner is not None:
            return owner
    raise invalid_api_key()


def account_scope(world: World, account: str) -> str:
    """The scope (project id) that holds the account's instances."""
    project = next((p for p in world.config(Provider.LAMBDA).projects if p.owner == account), None)
    return project.id if project is not None else account
