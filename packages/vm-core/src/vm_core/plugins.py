"""Entry-point plugins, loaded lazily and defensively.

Providers come from the group `vm_core.providers` (and, later, spread strategies from `vm_core.strategies`).
vm-core's own providers register there too, exactly as a third-party package would. Listing names does not
import any plugin; loading one imports only that plugin's module. A plugin that fails to import, or is not
what it claims to be, is reported and skipped, never fatal. `VM_DISABLE_PROVIDERS=a,b` hides plugins by name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

PROVIDERS_GROUP = "vm_core.providers"
STRATEGIES_GROUP = "vm_core.strategies"


@dataclass(frozen=True)
class PluginProblem:
    group: str
    name: str
    reason: str


@dataclass
class PluginSet:
    """The plugins of one group: names known without importing, loaded on first use."""

    group: str
    required_attributes: tuple[str, ...]
    disabled: frozenset[str] = frozenset()
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
        return plugin

    def _problem(self, name: str, reason: str) -> None:
        self.problems.append(PluginProblem(self.group, name, reason))


def disabled_from_env(variable: str = "VM_DISABLE_PROVIDERS") -> frozenset[str]:
    return frozenset(n.strip() for n in os.environ.get(variable, "").split(",") if n.strip())


def provider_plugins() -> PluginSet:
    return PluginSet(PROVIDERS_GROUP, ("name", "title", "settings", "connect"), disabled_from_env())
