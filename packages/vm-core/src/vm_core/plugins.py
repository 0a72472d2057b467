"""Entry-point plugins, loaded lazily and defensively.

Providers come from the group `vm_core.providers` (and, later, spread strategies from `vm_core.strategies`).
vm-core's own providers register there too, exactly as a third-party package would. Listing names does not
import any plugin; loading one imports only that plugin's module. A plugin that fails to import, or is not
what it claims to be, is reported and skipped, never fatal. `VM_DISABLE_PROVIDERS=a,b` hides plugins by name.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

PROVIDERS_GROUP = "vm_core.providers"
STRATEGIES_GROUP = "vm_core.strategies"
EMBEDDED_GROUP = "vm_core.embedded"
PROVIDER_ATTRIBUTES = ("name", "title", "settings", "connect")  # what every ProviderPlugin has (provider.py)
_ABSENT = object()


@dataclass(frozen=True)
class PluginProblem:
    group: str
    name: str
    reason: str


@dataclass
class PluginSet:
    """The plugins of one group: names known without importing, loaded on first use. `check` (if any) is made
    once per loaded plugin: the problem it names (None: none) makes the plugin broken."""

    group: str
    required_attributes: tuple[str, ...]
    disabled: frozenset[str] = frozenset()
    check: Callable[[Any], str | None] | None = None
    _entry_points: dict[str, Any] = field(default_factory=dict)
    _loaded: dict[str, Any] = field(default_factory=dict)
    problems: list[PluginProblem] = field(default_factory=list)

    def __post_init__(self) -> None:
        from importlib.metadata import entry_points

        for ep in entry_points(group=self.group):
            if ep.name not in self.disabled and ep.name not in self._entry_points:
                self._entry_points[ep.name] = ep

    def names(self) -> list[str]:
        return sorted(self._entry_points)

    def get(self, name: str) -> Any | None:
        """The loaded plugin, or None if unknown or broken (then `problems` says why)."""
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
        try:
            plugin = ep.load()
        except Exception as exc:  # noqa: BLE001 - any failure of third-party code must not break vm
            self._problem(name, f"cannot be loaded from {ep.value}: {type(exc).__name__}: {exc}")
            return None
        missing = [a for a in self.required_attributes if not hasattr(plugin, a)]
        if missing:
            self._problem(name, f"{ep.value} is not a plugin of {self.group} (missing {', '.join(missing)})")
            return None
        if getattr(plugin, "name", name) != name:
            self._problem(name, f"{ep.value} calls itself {plugin.name!r}, registered as {name!r}")
            return None
        problem = self.check(plugin) if self.check is not None else None
        if problem:
            self._problem(name, f"{ep.value} declares {problem}")
            return None
        return plugin

    def _problem(self, name: str, reason: str) -> None:
        self.problems.append(PluginProblem(self.group, name, reason))


def optional(plugin: Any, attribute: str, default: Any) -> Any:
    """An optional attribute of a plugin: `default` when the plugin lacks it, when reading it fails, or when the
    value is not of the default's type (a callable where the default is None). Third-party code never breaks vm."""
    try:
        value = getattr(plugin, attribute, _ABSENT)
    except Exception:  # noqa: BLE001 - a failing property of third-party code means "not declared"
        return default
    if value is _ABSENT or value is None:
        return default
    if default is None:
        return value if callable(value) else None
    if not isinstance(value, type(default)) or isinstance(value, bool) != isinstance(default, bool):
        return default
    return value


DEFAULT_CREATE_CONCURRENCY = 4


def create_concurrency(names: Iterable[str]) -> dict[str, int]:
    """Concurrent create calls a fleet makes per provider: its plugin's optional `create_concurrency`
    (DEFAULT_CREATE_CONCURRENCY when it declares none or is not installed)."""
    plugins = provider_set()
    return {name: max(1, optional(plugins.get(name), "create_concurrency", DEFAULT_CREATE_CONCURRENCY))
            for name in names}


def disabled_from_env(variable: str = "VM_DISABLE_PROVIDERS") -> frozenset[str]:
    return frozenset(n.strip() for n in os.environ.get(variable, "").split(",") if n.strip())


def provider_set(disabled: frozenset[str] = frozenset()) -> PluginSet:
    """The provider plugins but `disabled`, each checked once, when loaded: one whose GPU declaration (its `gpus`)
    is malformed is broken (vm_core.catalog.declaration_problem says why)."""
    from .catalog import declaration_problem

    return PluginSet(PROVIDERS_GROUP, PROVIDER_ATTRIBUTES, disabled, check=declaration_problem)


def provider_plugins() -> PluginSet:
    return provider_set(disabled_from_env())
