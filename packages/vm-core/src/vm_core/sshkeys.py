"""SSH public keys: reading `--ssh-key PATH`, checking a profile's `ssh_public_key` setting, and the rule that
chooses the key of new VMs, the same on every cloud: `--ssh-key PATH`, else the profile's `ssh_public_key`, else
the cloud's own setting (Crusoe's `ssh_public_key_file` in ~/.crusoe/config), else the first of
~/.ssh/id_ed25519.pub, id_ecdsa.pub, id_rsa.pub (`default_key`, put under the settings by Session.sources); no
key at all is exit 2 before any call (`check_keys`) unless `--no-ssh-key` asks for a VM nobody can log in to.

vm installs public keys on new VMs and never reads or sends a private key: a private key file is recognised by
its name (PATH.pub exists beside it) or by its first line's header alone, and refused before anything else of it
is read. Nothing here makes a network call.
"""

from __future__ import annotations

import base64
import binascii
import logging
import shlex
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, UsageError
from .hints import Hint, Setting, Words

if TYPE_CHECKING:
    from .session import Session

MAX_KEY_FILE = 16 * 1024  # far above any OpenSSH public key line (an RSA-16384 key is about 2.8 KB)
_HEADER_BYTES = 64  # enough to see "-----BEGIN OPENSSH PRIVATE KEY-----" and stop there
KEY_TYPES = frozenset({
    "ssh-ed25519", "ssh-rsa", "ssh-dss", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com",
})
EXAMPLE = "ssh-ed25519 AAAAC3Nza... you@host"
log = logging.getLogger(__name__)


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


# ------------------------------------------------------------------------------------------ which key a VM gets
NO_KEY = ""  # CreateSpec.ssh_public_key of `--no-ssh-key`: no key, on purpose (None: the provider's own rule)
DEFAULT_KEY_FILES = ("id_ed25519.pub", "id_ecdsa.pub", "id_rsa.pub")  # in ~/.ssh, the first that exists wins
KEYGEN = "ssh-keygen -t ed25519"
SSH_KEY = Setting("ssh_key", "PATH", plain="an SSH key file")  # the CLI spells these as their options
NO_SSH_KEY = Setting("no_ssh_key", plain="no SSH key")


def default_key(environ: Mapping[str, str]) -> tuple[str, str] | None:
    """The user's own public key when nothing names one: (the key line, where it is, as `~/.ssh/id_ed25519.pub`)
    of the first of DEFAULT_KEY_FILES in HOME/.ssh (HOME from `environ`) that holds one OpenSSH public key
    line; None when none does. A file there that is not one is skipped, and said under --debug."""
    from .native import home_of, shown

    home = home_of(environ)
    for name in DEFAULT_KEY_FILES:
        path = home / ".ssh" / name
        if not path.is_file():
            continue
        try:
            return read_public_key(str(path)), shown(path, home)
        except UsageError as exc:
            log.debug("not using %s as the default SSH key: %s", path, exc.message)
    return None


def has_key(settings: Mapping[str, Any]) -> bool:
    """Whether a provider's resolved settings name a key for new VMs: `ssh_public_key` (the profile's, the
    cloud's own setting, or the user's ~/.ssh key, in that order: Session.sources), or an account key by name
    (Lambda's `ssh_key_name`)."""
    return bool(settings.get("ssh_public_key") or settings.get("ssh_key_name"))


def check_keys(session: Session, names: Iterable[str], given: str | None, warn: Callable[[str], None]) -> None:
    """Before any call to a cloud, for new VMs on the providers `names`: UsageError (exit 2) when one of them has
    no key to install (`given`, the --ssh-key key, is None and its settings name none: has_key), with the hint
    (--ssh-key or ssh-keygen); with `given` NO_KEY (--no-ssh-key), UsageError for a provider whose launches must
    name a key (its plugin's `needs_ssh_key`: Lambda), else a warning that nobody can log in. A provider whose plugin
    has no `ssh_public_key` setting (plugins.LoadedPlugin.takes_ssh_keys) is left to its own devices. Resolves the
    providers' settings (no network call but starting the embedded mock clouds)."""
    names = list(names)
    if given == NO_KEY:
        if needing := [n for n in names if session.plugin(n).needs_ssh_key]:
            also = ", or leave those providers out with {}" if len(names) > 1 else ""
            raise UsageError(Words(NO_SSH_KEY, f": {', '.join(needing)} cannot create a VM without an SSH key "
                                   "(each launch names one of the account's keys)"),
                             suggestion=Hint.say("give your public key with {}" + also, SSH_KEY,
                                                 *([Setting("providers")] if also else [])))
        warn(Words(NO_SSH_KEY, ": the new VMs get no SSH key of yours, so nobody can log in to them"))
        return
    if given:
        return
    lacking = [n for n in names if session.plugin(n).takes_ssh_keys and not has_key(session.settings(n))]
    if lacking:
        files = ", ".join(f"~/.ssh/{f}" for f in DEFAULT_KEY_FILES)
        raise UsageError(Words(f"no SSH public key for new VMs on {', '.join(lacking)}: nobody could log in to them "
                               "(no ", SSH_KEY, f", no ssh_public_key setting, none of {files})"),
                         suggestion=Hint.say(f"give one with {{}}, or make one with `{KEYGEN}`; {{}} creates VMs "
                                             "nobody can log in to", SSH_KEY, NO_SSH_KEY))


def no_key_error(provider: str) -> UsageError:
    """A provider asked for a VM without a key and without the choice of none (library callers; the CLI checks
    first: check_keys)."""
    return UsageError("no SSH public key for the new VM: nobody could log in to it", provider=provider,
                      suggestion=Hint.say(f"give one with {{}}, or make one with `{KEYGEN}`", SSH_KEY))


def unheld_key() -> str:
    """A well-formed ed25519 public key line made of 32 random bytes: no private key was ever made for it, so
    nobody can log in with it (for a cloud whose API requires a key, under --no-ssh-key)."""
    import secrets

    def string(data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + data

    blob = string(b"ssh-ed25519") + string(secrets.token_bytes(32))
    return f"ssh-ed25519 {base64.b64encode(blob).decode()} nobody-can-log-in"
