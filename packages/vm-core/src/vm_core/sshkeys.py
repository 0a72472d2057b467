"""SSH public keys: reading `--ssh-key PATH` and checking a profile's `ssh_public_key` setting.

vm installs public keys on new VMs and never reads or sends a private key: a private key file is recognised by
its name (PATH.pub exists beside it) or by its first line's header alone, and refused before anything else of it
is read. Nothing here makes a network call.
"""

from __future__ import annotations

import base64
import binascii
import shlex
from pathlib import Path
from typing import Any

from .errors import ConfigError, UsageError

MAX_KEY_FILE = 16 * 1024  # far above any OpenSSH public key line (an RSA-16384 key is about 2.8 KB)
_HEADER_BYTES = 64  # enough to see "-----BEGIN OPENSSH PRIVATE KEY-----" and stop there
KEY_TYPES = frozenset({
    "ssh-ed25519", "ssh-rsa", "ssh-dss", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com",
})
EXAMPLE = "ssh-ed25519 AAAAC3Nza... you@host"


def parse_public_key(text: str) -> str:
    """The one OpenSSH public key line in `text` (`<type> <base64 blob> [comment]`, the blob naming the same
    type), stripped. Raises ValueError saying what is wrong; the message never quotes `text`."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) != 1:
        raise ValueError(f"expected one OpenSSH public key line ({EXAMPLE}), found {len(lines)} lines")
    if "PRIVATE KEY" in lines[0]:
        raise ValueError("this is a private key; vm never reads or sends private keys")
    fields = lines[0].split()
    if len(fields) < 2 or fields[0] not in KEY_TYPES:
        raise ValueError(f"not an OpenSSH public key (expected a line like {EXAMPLE})")
    if _blob_type(fields[1]) != fields[0]:
        raise ValueError(f"not a valid {fields[0]} public key (its base64 part does not decode to one)")
    return lines[0]


def _blob_type(encoded: str) -> str | None:
    """The key type a public key blob starts with (an SSH string: 4-byte length, then the name), else None."""
    try:
        blob = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return None
    size = int.from_bytes(blob[:4], "big")
    if len(blob) < 4 + size:
        return None
    return blob[4:4 + size].decode("ascii", errors="replace")


def read_public_key(path: str) -> str:
    """The public key in the file at `path` (`--ssh-key PATH`; `~` is expanded). Raises UsageError, before any
    cloud call, for a missing or unreadable file, a private key (refused unread beyond its header) or a file
    that is not one OpenSSH public key line; its message starts with `path` (the CLI puts its option first)."""
    file = Path(path).expanduser()
    option = path
    if not file.exists():
        raise UsageError(f"{option}: no such file")
    if not file.is_file():
        raise UsageError(f"{option}: not a file")
    public = file.with_name(file.name + ".pub")
    if file.suffix != ".pub" and public.is_file():
        raise _private(option, file)
    try:
        with file.open("rb") as stream:
            head = stream.read(_HEADER_BYTES)
            if b"PRIVATE KEY" in head.split(b"\n", 1)[0] or head.startswith(b"PuTTY-User-Key-File"):
                raise _private(option, file)
            data = head + stream.read(MAX_KEY_FILE + 1 - len(head))
    except OSError as exc:
        raise UsageError(f"{option}: cannot read it ({exc.strerror})") from None
    if len(data) > MAX_KEY_FILE:
        raise UsageError(f"{option}: too large for a public key ({MAX_KEY_FILE} bytes at most)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{option}: not a text file, so not an OpenSSH public key") from None
    try:
        return parse_public_key(text)
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}") from None


def _private(option: str, file: Path) -> UsageError:
    public = file.with_name(file.name + ".pub")
    if public.is_file():
        return UsageError(f"{option} is a private key; vm never reads or sends private keys: give its public key,"
                          f" {public}")
    derive = f"ssh-keygen -y -f {shlex.quote(str(file))} > {shlex.quote(str(public))}"
    return UsageError(f"{option} is a private key; vm never reads or sends private keys: give a public key"
                      " (.pub) file", suggestion=derive)


def public_key_setting(value: Any, provider: str) -> str | None:
    """A provider's `ssh_public_key` setting (the key line itself, as in the profile), checked: None when unset;
    ConfigError (exit 4) when it is not one OpenSSH public key line, a private key above all."""
    text = "" if value is None else str(value).strip()
    if not text:
        return None
    try:
        return parse_public_key(text)
    except ValueError as exc:
        raise ConfigError(f"the {provider} setting ssh_public_key: {exc}", provider=provider) from None
