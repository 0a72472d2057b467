"""Accounts known by an API key, and SSH keys kept in a cloud account, for clouds whose launches name an account
key rather than take a public key."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from ..errors import UsageError
from .memo import Memo


def key_fingerprint(api_key: str) -> str:
    """The account of a cloud whose API has no account id: the key's owner. A SHA-256 prefix of the key tells two
    keys apart without revealing either."""
    return "key sha256:" + hashlib.sha256(api_key.encode()).hexdigest()[:16]


def key_name(public_key: str) -> str:
    """The name vm gives a public key it adds to an account: `vm-` and a SHA-256 prefix of the key."""
    return "vm-" + hashlib.sha256(public_key.encode()).hexdigest()[:12]


class AccountKeys:
    """The name of the account key a launch uses, per public key: the account's key holding it (added as
    `key_name(public_key)` when the account has none), or `default()` without a public key. Each is looked up
    once, one thread at a time, so concurrent creates never add the same key twice.

    `find(public_key)` is the name of the account's key with that public key, or None; `add(name, public_key)`
    adds it and returns its name, raising UsageError when the cloud refuses: then the key is looked up again (an
    other process added it first, so the name is taken), and the error stands when it is still not there."""

    def __init__(self, *, find: Callable[[str], str | None], add: Callable[[str, str], str],
                 default: Callable[[], str]) -> None:
        self._find, self._add, self._default = find, add, default
        # public key ("" = the default key) -> key name
        self._names: Memo[str, str] = Memo(lambda key: self._holding(key) if key else self._default())

    def name_for(self, public_key: str | None) -> str:
        return self._names((public_key or "").strip())

    def _holding(self, public_key: str) -> str:
        found = self._find(public_key)
        if found is not None:
            return found
        try:
            return self._add(key_name(public_key), public_key)
        except UsageError:
            found = self._find(public_key)
            if found is None:
                raise
            return found
