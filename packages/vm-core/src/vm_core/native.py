"""The clouds' own credentials: what each cloud's tools read (their variables and their files), as settings.

A provider plugin that declares `native_credentials` (provider.ReadsNativeCredentials; plugins.LoadedPlugin) turns
its cloud's conventions into the values of its own settings, each with where it was found:

    found = plugin.native_credentials(environ, home)
    found.settings["secret_key"]    # Sourced(value, kind="file", origin="~/.crusoe/config [default]")
    found.found                     # True: enough to configure the provider (its credentials are there)

The session layers them under the profile's own tables (session.py), so a profile table always wins, and never
reads them for the embedded mock clouds. Reading makes no network call and runs no command; a file that exists
but cannot be read or parsed is a ConfigError naming it (the user meant it to be used).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError

ENV, FILE = "env", "file"  # the kinds of a native source


@dataclass(frozen=True, slots=True)
class Sourced:
    """One setting's value and where it was found: `kind` is ENV or FILE, `origin` says it for a person
    ("env CRUSOE_SECRET_KEY", "~/.crusoe/config [default]")."""

    value: Any
    kind: str
    origin: str


@dataclass(frozen=True, slots=True)
class NativeCredentials:
    """What a cloud's own conventions say. `found`: its credentials are there (the provider can be configured
    from these alone); `notes`: what was seen but cannot be used, and why (said by `vm config show`)."""

    settings: Mapping[str, Sourced] = field(default_factory=dict)
    found: bool = False
    notes: tuple[str, ...] = ()

    @property
    def origins(self) -> list[str]:
        """Where the credentials were found, each place once, in the order first seen."""
        return list(dict.fromkeys(s.origin for s in self.settings.values()))


NONE = NativeCredentials()


def from_env(environ: Mapping[str, str], names: Mapping[str, str | tuple[str, ...]]) -> dict[str, Sourced]:
    """Settings from variables: `names` maps a setting key to its variable, or to several in order of preference
    (the first that is set and not blank wins)."""
    found = {}
    for key, variables in names.items():
        for variable in (variables,) if isinstance(variables, str) else variables:
            if value := environ.get(variable, "").strip():
                found[key] = Sourced(value, ENV, f"env {variable}")
                break
    return found


def home_of(environ: Mapping[str, str]) -> Path:
    """The user's home directory, where the clouds keep their files ($HOME, else the password database's)."""
    return Path(environ.get("HOME") or Path.home())


def shown(path: Path, home: Path) -> str:
    """`path` as a person writes it: under `home` as ~/..., else as it is."""
    try:
        return "~/" + str(path.relative_to(home))
    except ValueError:
        return str(path)


def read_text(path: Path, home: Path) -> str | None:
    """The text of a cloud's file; None when it does not exist. ConfigError when it exists but cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {shown(path, home)}: {exc.strerror if isinstance(exc, OSError) else exc}"
                          ) from None


def read_parsed(path: Path, home: Path, kind: str, parse: Callable[[str], Any]) -> Any:
    """`parse` of a cloud's file (None when it does not exist). ConfigError naming the file when it cannot be read
    or `parse` raises ValueError (its message, which names the line, follows "is not valid KIND")."""
    if (text := read_text(path, home)) is None:
        return None
    try:
        return parse(text)
    except ValueError as exc:
        raise ConfigError(f"{shown(path, home)} is not valid {kind}: {exc}") from None


def read_toml(path: Path, home: Path) -> dict[str, Any] | None:
    """A TOML file as a table; None when it does not exist. ConfigError (naming file and line) when malformed."""
    import tomllib  # its TOMLDecodeError is a ValueError

    found: dict[str, Any] | None = read_parsed(path, home, "TOML", tomllib.loads)
    return found


def expand(path: str, home: Path) -> Path:
    """A path written in a cloud's file: ~ is `home`; a relative path is relative to `home` too."""
    if path.startswith("~"):
        return home / path[1:].lstrip("/")
    return Path(os.path.expandvars(path)) if os.path.isabs(path) else home / path
