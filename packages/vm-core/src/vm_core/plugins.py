"""Entry-point plugins, loaded lazily and defensively, and the typed record of a provider plugin.

Providers come from the group `vm_core.providers`, spread strategies from `vm_core.strategies`, embedded clouds from
`vm_core.embedded`. vm-core's own providers register there too, exactly as a third-party package would. Listing
names does not import any plugin; loading one imports only that plugin's module. A plugin that fails to import, or
is not what it claims to be, is reported and skipped, never fatal. `VM_DISABLE_PROVIDERS=a,b` hides plugins by name.

A provider plugin is read once, when it is loaded, into a `LoadedPlugin`: every fact vm knows of a cloud is a typed
field of it with a default. A fact of the wrong type, or an attribute that looks like a misspelt fact
(`create_concurency`), makes the plugin broken with the reason, as one that fails to import; it never silently
gets the default. The provider plugins of a process are found and loaded once (`installed_providers`): the
session, the catalog and the fleet engine read the same records.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .gpus import GpuType, ShapeEntry
from .plugin_facts import MalformedPlugin, checked, misspelt, read_facts
from .provider import Setting
from .spend.rules import DEFAULT as DEFAULT_BILLING
from .spend.rules import BillingRule

if TYPE_CHECKING:
    from .native import NativeCredentials
    from .provider import Provider

__all__ = [
    "DEFAULT_CREATE_CONCURRENCY", "EMBEDDED_GROUP", "FACTS", "PROVIDERS_GROUP", "PROVIDER_ATTRIBUTES",
    "STRATEGIES_GROUP", "LoadedPlugin", "MalformedPlugin", "PluginProblem", "PluginSet", "ProviderSet",
    "create_concurrency", "disabled_from_env", "discover_providers", "installed_providers",
    "provider_plugins", "provider_set",
]

PROVIDERS_GROUP = "vm_core.providers"
STRATEGIES_GROUP = "vm_core.strategies"
EMBEDDED_GROUP = "vm_core.embedded"
PROVIDER_ATTRIBUTES = ("name", "title", "connect")  # what every provider plugin has (and settings or settings_type)
DEFAULT_CREATE_CONCURRENCY = 4
_ABSENT = object()


@dataclass(frozen=True, kw_only=True)
class LoadedPlugin:
    """A provider plugin as vm reads it: validated when it is made, so every field has its type.

    The loader makes one from whatever the `vm_core.providers` entry point names (`LoadedPlugin.of`); a package
    may also register a `LoadedPlugin` itself. Constructing one raises MalformedPlugin for a fact of the wrong type.

    **Fields:**
    - `name` (the entry point's name, what `--provider` takes), `title` ("Example Cloud"),
      `connect(settings) -> Provider` (no network call; ConfigError for unusable settings);
    - `settings`: the keys of its profile table; derived from `settings_type` (a dataclass of `kit.setting`
      fields) when that is declared, which the session then parses into an instance handed to `connect`;
    - `instance_id_pattern` (a regex; "": any id) and `instance_id_example`: what `vm get ID` checks first;
    - `gpus`: GPU types only it sells; `shapes`: its rows of the GPU catalog (GPUs of catalog.toml or `gpus`);
    - `create_concurrency`: creates a fleet sends it at once; `debug_loggers`: the loggers `--debug` shows;
    - `billing`: how its cloud bills a VM's time (a spend.rules.BillingRule; default spend.rules.DEFAULT),
      what `vm cost` estimates by;
    - `embedded_settings(endpoint, time_scale)`: its settings in an embedded profile (None: none serves it);
    - `native_credentials(environ, home)`: its cloud's own credentials (None: only its settings' env vars);
    - `provider_class`: the class `connect` returns (declared, else `connect`'s return annotation; None:
      unknown), whose capabilities `vm providers` shows without connecting;
    - `needs_ssh_key`: each create must name an SSH key (declared, else the provider class says so);
    - `source`: the object the entry point named (None: this record itself).
    """

    name: str
    title: str
    connect: Callable[[Any], Provider]
    settings: tuple[Setting, ...] = ()
    settings_type: type | None = None
    instance_id_pattern: str = ""
    instance_id_example: str = ""
    gpus: tuple[GpuType, ...] = ()
    shapes: tuple[ShapeEntry, ...] = ()
    create_concurrency: int = DEFAULT_CREATE_CONCURRENCY
    billing: BillingRule = DEFAULT_BILLING
    debug_loggers: tuple[str, ...] = ()
    embedded_settings: Callable[[Mapping[str, Any], float], Mapping[str, Any]] | None = None
    native_credentials: Callable[[Mapping[str, str], Path], NativeCredentials] | None = None
    provider_class: type | None = None
    needs_ssh_key: bool = False
    source: object = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        for key, value in checked(self).items():
            object.__setattr__(self, key, value)

    @classmethod
    def of(cls, plugin: object) -> LoadedPlugin:
        """The record of a plugin object (one with the attributes of the fields); the record itself if it is one.
        Raises MalformedPlugin for a fact of the wrong type, one whose reading raised, or an attribute that looks
        like a misspelt fact."""
        if isinstance(plugin, LoadedPlugin):
            return plugin
        if problem := misspelt(plugin, FACTS):
            raise MalformedPlugin(problem)
        return cls(**read_facts(plugin, FACTS), source=plugin)

    @property
    def secret_keys(self) -> frozenset[str]:
        """The keys of its secret settings (shown only as <set>)."""
        return frozenset(s.key for s in self.settings if s.secret)

    @property
    def takes_ssh_keys(self) -> bool:
        """Whether it installs public keys on its VMs: it has an `ssh_public_key` setting (sshkeys.check_keys)."""
        return any(s.key == "ssh_public_key" for s in self.settings)


FACTS = tuple(f.name for f in dataclasses.fields(LoadedPlugin) if f.name != "source")


@dataclass(frozen=True)
class PluginProblem:
    group: str
    name: str
    reason: str


@dataclass
class PluginSet:
    """The plugins of one group: names known without importing, loaded on first use (thread-safe). `declare` (if
    any) turns each loaded object into what the set holds, once per plugin; the MalformedPlugin it raises makes the
    plugin broken."""

    group: str
    required_attributes: tuple[str, ...]
    disabled: frozenset[str] = frozenset()
    declare: Callable[[Any], Any] | None = None
    _entry_points: dict[str, Any] = field(default_factory=dict)
    _loaded: dict[str, Any] = field(default_factory=dict)
    problems: list[PluginProblem] = field(default_factory=list)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    def __post_init__(self) -> None:
        from importlib.metadata import entry_points

        for ep in entry_points(group=self.group):
            if ep.name not in self.disabled and ep.name not in self._entry_points:
                self._entry_points[ep.name] = ep

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._entry_points)

    def get(self, name: str) -> Any | None:
        """The loaded plugin, or None if unknown or broken (then `problems` says why)."""
        with self._lock:
            if name in self._loaded:
                return self._loaded[name]
            ep = self._entry_points.get(name)
            if ep is None:
                return None
            plugin = self._load(name, ep)
            if plugin is not None:
                self._loaded[name] = plugin
            else:
                del self._entry_points[name]
            return plugin

    def load_all(self) -> dict[str, Any]:
        return {name: plugin for name in self.names() if (plugin := self.get(name)) is not None}

    def _load(self, name: str, ep: Any) -> Any | None:
        """The plugin `ep` names, as `declare` makes it; None (and a problem) when it is broken."""
        try:
            return self._declared(name, ep.load())
        except MalformedPlugin as exc:  # a fact of the wrong type (also of a LoadedPlugin made at import)
            reason = f"{ep.value} declares {exc}"
        except NotAPlugin as exc:
            reason = f"{ep.value} {exc}"
        except Exception as exc:  # noqa: BLE001 - any failure of third-party code must not break vm
            reason = f"cannot be loaded from {ep.value}: {type(exc).__name__}: {exc}"
        self.problems.append(PluginProblem(self.group, name, reason))
        return None

    def _declared(self, name: str, plugin: Any) -> Any:
        if missing := [a for a in self.required_attributes if not _has(plugin, a)]:
            raise NotAPlugin(f"is not a plugin of {self.group} (missing {', '.join(missing)})")
        if (called := _read(plugin, "name", name)) != name:
            raise NotAPlugin(f"calls itself {called!r}, registered as {name!r}")
        return self.declare(plugin) if self.declare is not None else plugin


class NotAPlugin(Exception):
    """What an entry point names is not a plugin of its group, or is registered under another name."""


def _has(plugin: object, attribute: str) -> bool:
    return _read(plugin, attribute, _ABSENT) is not _ABSENT


def _read(plugin: object, attribute: str, default: Any) -> Any:
    try:
        return getattr(plugin, attribute, default)
    except Exception:  # noqa: BLE001 - a failing property of third-party code is reported where it matters
        return default


class ProviderSet:
    """The provider plugins of a registry (a PluginSet of LoadedPlugin records) but `disabled`: what a session
    acts on. Names are known without importing; each plugin is loaded and checked once per registry."""

    group = PROVIDERS_GROUP

    def __init__(self, registry: PluginSet, disabled: frozenset[str] = frozenset()) -> None:
        self.registry = registry
        self.disabled = frozenset(disabled)

    def names(self) -> list[str]:
        return [n for n in self.registry.names() if n not in self.disabled]

    def get(self, name: str) -> LoadedPlugin | None:
        """The plugin's record, or None if unknown, disabled or broken (then `problems` says why)."""
        if name in self.disabled:
            return None
        found = self.registry.get(name)
        return found if isinstance(found, LoadedPlugin) else None

    def load_all(self) -> dict[str, LoadedPlugin]:
        return {name: plugin for name in self.names() if (plugin := self.get(name)) is not None}

    @property
    def problems(self) -> list[PluginProblem]:
        return [p for p in self.registry.problems if p.name not in self.disabled]


def discover_providers() -> PluginSet:
    """A new registry of the provider plugins installed now (entry points read now, each loaded on first use)."""
    return PluginSet(PROVIDERS_GROUP, PROVIDER_ATTRIBUTES, declare=LoadedPlugin.of)


_installed: list[PluginSet] = []
_installed_lock = threading.Lock()


def installed_providers() -> PluginSet:
    """The registry of this process, disabled plugins included: found on first use, then shared by every caller
    (session, catalog, fleet engine), so each plugin is imported and checked once per process."""
    with _installed_lock:
        if not _installed:
            _installed.append(discover_providers())
        return _installed[0]


def provider_set(disabled: Iterable[str] = frozenset()) -> ProviderSet:
    """The provider plugins of this process but `disabled`."""
    return ProviderSet(installed_providers(), frozenset(disabled))


def provider_plugins(environ: Mapping[str, str] | None = None) -> ProviderSet:
    """The provider plugins of this process but those VM_DISABLE_PROVIDERS names in `environ` (default: the
    process's environment)."""
    return provider_set(disabled_from_env(environ=environ))


def disabled_from_env(variable: str = "VM_DISABLE_PROVIDERS", *,
                      environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The names of `variable` (comma-separated) in `environ` (default: the process's environment)."""
    found = (os.environ if environ is None else environ).get(variable, "")
    return frozenset(n.strip() for n in found.split(",") if n.strip())


def create_concurrency(names: Iterable[str]) -> dict[str, int]:
    """Concurrent create calls a fleet makes per provider: its plugin's `create_concurrency`
    (DEFAULT_CREATE_CONCURRENCY when it is not installed or broken). Reads the process's registry."""
    registry = installed_providers()
    found = {name: registry.get(name) for name in names}
    return {name: plugin.create_concurrency if isinstance(plugin, LoadedPlugin) else DEFAULT_CREATE_CONCURRENCY
            for name, plugin in found.items()}

