"""Accounts known by an API key, and SSH keys kept in a cloud account, for clouds whose launches name an account
key rather than take a public key."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable

from ..errors import ConfigError, UsageError
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
    `key_name(public_key)` when the account has none); without a public key the `preferred` key, else the
    account's first one. Each is looked up once, one thread at a time, so concurrent creates never add the same
    key twice.

    `listed()` gives the account's keys as (name, public key) pairs; `add(name, public_key)` adds one and returns
    its name, raising UsageError when the cloud refuses: then the keys are listed again (another process added it
    first, so the name is taken), and the error stands when it is still not there. Without a public key, a
    `preferred` name the account lacks, or an account without keys, is a ConfigError (`title` names the cloud,
    `add_at` says where keys are added)."""

    def __init__(self, *, listed: Callable[[], Iterable[tuple[str, str]]], add: Callable[[str, str], str],
                 preferred: str | None, title: str, provider: str, add_at: str) -> None:
        self._listed, self._add = listed, add
        self._preferred, self._title, self._provider, self._add_at = preferred, title, provider, add_at
        # public key ("" = the default key) -> key name
        self._names: Memo[str, str] = Memo(lambda key: self._holding(key) if key else self._default())

    def name_for(self, public_key: str | None) -> str:
        return self._names((public_key or "").strip())

    def _find(self, public_key: str) -> str | None:
        return next((name for name, key in self._listed() if key.strip() == public_key), None)

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

    def _default(self) -> str:
        names = [name for name, _key in self._listed()]
        if self._preferred and self._preferred not in names:
            raise ConfigError(f"the {self._title} account has no SSH key named {self._preferred!r}; it has: "
                              f"{', '.join(names) or 'none'}", provider=self._provider)
        if not names:
            raise ConfigError(f"the {self._title} account has no SSH key, and {self._title} launches need one",
                              provider=self._provider, suggestion=f"add one at {self._add_at}")
        return self._preferred or names[0]
