"""Where vm keeps its files, and the profiles of config.toml.

    VM_HOME set        config file $VM_HOME/config.toml, state $VM_HOME
    VM_HOME unset      config file $XDG_CONFIG_HOME/vm/config.toml (~/.config/vm), state $XDG_STATE_HOME/vm

config.toml:

    default_profile = "work"
    [profiles.work.crusoe]          # one table per provider; keys are the provider plugin's settings
    access_key_id = "..."
    [profiles.local]
    embedded = true                 # the embedded clouds (embedded.py) in $STATE/<their name>; tables here win

`store_url = "postgresql://user@host:5432/vm"` (top level, or in a profile's table to override it) puts the fleet
store in a shared PostgreSQL database (team mode); `VM_STORE_URL` overrides both. Absent: $STATE/vm.db (SQLite).
`monthly_budget = 500.0` in a profile's table caps what each user (user@host) spends through it in a calendar
month, in USD (fleet/spend_budget.py).

Two profiles always exist, whatever the file says (a table of the same name in the file replaces them):

    auto    the clouds whose own credentials are found (their variables and files, native.py); when none are
            found, it is `local`. The default when no default_profile is set, with or without a config file.
    local   `embedded = true`: the embedded mock clouds only, never real credentials.

A config file that group or others may read or write is refused, since it may hold credentials. Nothing here
makes a network call.
"""

from __future__ import annotations

import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ConfigError

if TYPE_CHECKING:
    from .events.webhooks import Webhook

CONFIG_FILE = "config.toml"
LOCAL_PROFILE = "local"
AUTO_PROFILE = "auto"
PRIVATE_DIR_MODE = 0o700


@dataclass(frozen=True, slots=True)
class Paths:
    config_file: Path
    state_dir: Path

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Paths:
        if home := environ.get("VM_HOME"):
            base = Path(home).expanduser()
            return cls(base / CONFIG_FILE, base)
        user_home = Path(environ.get("HOME") or Path.home())
        config = Path(environ.get("XDG_CONFIG_HOME") or user_home / ".config")
        state = Path(environ.get("XDG_STATE_HOME") or user_home / ".local" / "state")
        return cls(config / "vm" / CONFIG_FILE, state / "vm")


@dataclass(frozen=True, slots=True)
class Profile:
    """One named set of provider settings. `providers` maps a provider name to its table of settings."""

    name: str
    embedded: bool = False
    providers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    store_url: str | None = None  # the profile's own, else the top-level one; None: the local SQLite file
    automatic: bool = False  # the built-in `auto`: resolved by the session into the clouds found, else `local`
    notify: tuple[Webhook, ...] = ()  # [[profiles.NAME.notify]]: the webhooks told of events (docs/events.md)
    monthly_budget: float | None = None  # USD per user (user@host) per calendar month (fleet/spend_budget.py)


@dataclass(frozen=True, slots=True)
class Config:
    path: Path | None  # None: no config file
    default_profile: str | None  # None: not set, so `auto`
    profiles: Mapping[str, Profile]  # `local` and `auto` included

    def profile(self, name: str | None = None) -> Profile:
        """The named profile (else the default); ConfigError lists the profiles there are. The `auto` profile
        is returned as it is: session.automatic resolves it into the clouds found, else `local`."""
        wanted = name or self.default_profile or AUTO_PROFILE
        if wanted in self.profiles:
            return self.profiles[wanted]
        where = f" in {self.path}" if self.path else " (there is no config file)"
        source = "" if name else " (default_profile)"
        raise ConfigError(f"unknown profile {wanted!r}{source}{where}; profiles: {', '.join(self.names())}")

    def names(self) -> list[str]:
        """The profiles, those of the file first (in its order), then the built-in ones it does not replace."""
        return [*[n for n in self.profiles if n not in BUILT_IN], *[n for n in BUILT_IN if n in self.profiles]]


BUILT_IN = (AUTO_PROFILE, LOCAL_PROFILE)


def built_in_profiles(store_url: str | None = None) -> dict[str, Profile]:
    """`auto` (every cloud whose own credentials are found) and `local` (the embedded mock clouds)."""
    return {AUTO_PROFILE: Profile(AUTO_PROFILE, store_url=store_url, automatic=True),
            LOCAL_PROFILE: Profile(LOCAL_PROFILE, embedded=True, store_url=store_url)}


def implicit_config() -> Config:
    return Config(None, None, built_in_profiles())


def load_config(path: Path) -> Config:
    """Read config.toml; the implicit config when it does not exist. Raises ConfigError when the file is
    accessible to group or others, is not valid TOML (naming file and line), or has an unexpected shape."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return implicit_config()
    check_private(path, mode)
    import tomllib  # only with a config file (3 ms)

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    return _parse(path, data)


def check_private(path: Path, mode: int) -> None:
    if stat.S_IMODE(mode) & 0o077:
        raise ConfigError(
            f"{path} is accessible to group or others (mode {stat.S_IMODE(mode):04o}) and may hold credentials;"
            f" refusing to read it",
            suggestion=f"chmod 600 {path}",
        )


def _parse(path: Path, data: dict[str, Any]) -> Config:
    unknown = set(data) - {"default_profile", "profiles", "store_url"}
    if unknown:
        raise ConfigError(f"{path}: unknown top-level key(s) {', '.join(sorted(unknown))};"
                          " expected default_profile, store_url and [profiles.NAME] tables")
    tables = data.get("profiles", {})
    if not isinstance(tables, dict):
        raise ConfigError(f"{path}: `profiles` must be a table of [profiles.NAME] tables")
    store_url = _store_url(path, "store_url", data.get("store_url"))
    profiles = {name: _profile(path, name, table, store_url) for name, table in tables.items()}
    default = data.get("default_profile")
    if default is not None and (not isinstance(default, str) or not default.strip()):
        raise ConfigError(f"{path}: default_profile must be the name of a profile")
    return Config(path, default, {**built_in_profiles(store_url), **profiles})


def _profile(path: Path, name: str, table: Any, store_url: str | None) -> Profile:
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [profiles.{name}] must be a table")
    embedded = table.get("embedded", False)
    if not isinstance(embedded, bool):
        raise ConfigError(f"{path}: [profiles.{name}] embedded must be true or false")
    own_url = _store_url(path, f"[profiles.{name}] store_url", table.get("store_url"))
    notify = _notify(path, name, table.get("notify", []))
    monthly = _monthly_budget(path, name, table.get("monthly_budget"))
    providers = {k: v for k, v in table.items() if k not in ("embedded", "store_url", "notify", "monthly_budget")}
    for key, value in providers.items():
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: [profiles.{name}] has {key} = ...; provider settings go in a table"
                              f" [profiles.{name}.{key}]")
    return Profile(name, embedded, providers, own_url or store_url, notify=notify, monthly_budget=monthly)


def _monthly_budget(path: Path, name: str, value: Any) -> float | None:
    """`monthly_budget = USD` of a profile (None when absent); ConfigError unless a positive, finite number."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0 or value == float("inf"):
        raise ConfigError(f"{path}: [profiles.{name}] monthly_budget must be a positive amount of USD, e.g. 500.0")
    return float(value)


def _notify(path: Path, name: str, tables: Any) -> tuple[Webhook, ...]:
    """The webhooks of `[[profiles.NAME.notify]]` (url, secret, optional events). ConfigError for any other
    shape; the message never repeats a URL or a secret."""
    where = f"{path}: [[profiles.{name}.notify]]"
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise ConfigError(f"{where} must be an array of tables, each with url, secret and optional events")
    return tuple(_webhook(f"{where} #{n}", table) for n, table in enumerate(tables, 1))


def _webhook(where: str, table: dict[str, Any]) -> Webhook:
    from .events.kinds import KIND_NAMES, EventKind
    from .events.webhooks import Webhook

    unknown = set(table) - {"url", "secret", "events"}
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; expected url, secret, events")
    url, secret, events = table.get("url"), table.get("secret"), table.get("events")
    if not isinstance(url, str) or not url.strip().lower().startswith(("http://", "https://")):
        raise ConfigError(f"{where}: url must be an http:// or https:// URL")
    if not isinstance(secret, str) or not secret.strip():
        raise ConfigError(f"{where}: secret must be a non-empty string (the key its requests are signed with)")
    if events is None:
        return Webhook(url.strip(), secret, None)
    if not isinstance(events, list) or not events or not all(isinstance(e, str) for e in events):
        raise ConfigError(f"{where}: events must be a non-empty list of event kinds (leave it out for all)")
    if wrong := sorted(set(events) - set(KIND_NAMES)):
        raise ConfigError(f"{where}: unknown event kind(s) {', '.join(wrong)}; kinds: {', '.join(KIND_NAMES)}")
    return Webhook(url.strip(), secret, frozenset(EventKind(e) for e in events))


def _store_url(path: Path, where: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{path}: {where} must be a non-empty string such as \"postgresql://user@host/vm\"")
    return value.strip()


def ensure_private_dir(path: Path) -> Path:
    """Create `path` and its missing parents with mode 0700; existing directories are left as they are."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    for directory in reversed(missing):
        directory.mkdir(mode=PRIVATE_DIR_MODE, exist_ok=True)
    return path
