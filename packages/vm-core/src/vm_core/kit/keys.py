"""Accounts known by an API key, and SSH keys kept in a cloud account, for clouds whose launches name an account
key rather than take a public key."""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Callable, Iterable

from ..errors import ConfigError, UsageError
from .memo import Memo


def key_fingerprint(api_key: str) -> str:
    """The account of a cloud whose API has no account id: the key's owner. A SHA-256 prefix of the key tells two
    keys apart without revealing either."""
    return "key sha256:" + hashlib.sha256(api_key.encode()).hexdigest()[:16]


def key_name(public_key: str) -> str:
    """The name vm gives a public key it adds to an account: `vm-` and the first 12 hex digits of its SHA-256
    fingerprint (of the key itself, as `ssh-keygen -l` computes it: the comment does not count)."""
    return "vm-" + hashlib.sha256(_blob(public_key)).hexdigest()[:12]


def _blob(public_key: str) -> bytes:
    """The key's decoded blob (its base64 field); the line itself when that does not decode."""
    fields = public_key.split()
    try:
        return base64.b64decode(fields[1], validate=True)
    except (IndexError, binascii.Error, ValueError):
        return public_key.strip().encode()


def same_key(one: str, other: str) -> bool:
    """Whether two public key lines hold the same key: type and base64 blob, whatever their comments."""
    return one.split()[:2] == other.split()[:2]


class AccountKeys:
    """The name of the account key a launch uses, per public key: the account's key holding the user's public key
    (compared without comments), else that key added as `key_name(public_key)`; without a public key the
    `preferred` key (a setting naming one of the account's keys), else none: another person's key is never
    chosen (in a shared account the first key is someone else's, who would get root on the VM). Each is looked
    up once, one thread at a time, so concurrent creates never add the same key twice.

    `listed()` gives the account's keys as (name, public key) pairs; `add(name, public_key)` adds one and returns
    its name, raising UsageError when the cloud refuses: then the keys are listed again (another process added it
    first, so the name is taken), and the error stands when it is still not there. Without a public key, no
    `preferred` name is a UsageError made before any call (sshkeys.no_key_error), and a `preferred` name the
    account lacks a ConfigError (`title` names the cloud)."""

    def __init__(self, *, listed: Callable[[], Iterable[tuple[str, str]]], add: Callable[[str, str], str],
                 preferred: str | None, title: str, provider: str, add_at: str) -> None:
        self._listed, self._add = listed, add
        self._preferred, self._title, self._provider, self._add_at = preferred, title, provider, add_at
        # public key ("" = the default key) -> key name
        self._names: Memo[str, str] = Memo(lambda key: self._holding(key) if key else self._default())

    def name_for(self, public_key: str | None) -> str:
        return self._names((public_key or "").strip())

    def _find(self, public_key: str) -> str | None:
        return next((name for name, key in self._listed() if same_key(key, public_key)), None)

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
        if not self._preferred:
            from ..sshkeys import no_key_error

            raise no_key_error(self._provider)
        names = [name for name, _key in self._listed()]
        if self._preferred not in names:
            raise ConfigError(f"the {self._title} account has no SSH key named {self._preferred!r}; it has: "
                              f"{', '.join(names) or 'none'}", provider=self._provider,
                              suggestion=f"add it at {self._add_at}, or drop ssh_key_name to use your own key")
        return self._preferred
