"""Embedded clouds: local stand-ins that a profile with `embedded = true` uses without any configuration.

A package registers an `EmbeddedClouds` under the entry-point group `vm_core.embedded` (mock-clouds registers
its three mock clouds there; vm-core never imports it). A provider is served by the first of them, by entry-point
name, that lists it in `providers`, provided its plugin declares `embedded_settings`, which turns the endpoint
record of its cloud into the plugin's settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .plugins import EMBEDDED_GROUP, MalformedPlugin, PluginSet, provider_plugins

if TYPE_CHECKING:
    from .plugins import LoadedPlugin


class EmbeddedClouds(Protocol):
    """What a `vm_core.embedded` entry point names: clouds run as one background server whose state lives in a
    directory vm gives it (<vm state dir>/<name>). Loading it must start nothing."""

    name: str
    title: str  # how messages name them, e.g. "the local mock clouds"
    providers: tuple[str, ...]  # the provider plugins they serve

    def endpoints(self, state_dir: Path) -> dict[str, Any] | None:
        """{provider: its endpoint record, ..., "time_scale": float} of the running server; None if none runs."""
        ...

    def serve_command(self, state_dir: Path, time_scale: str | None = None) -> list[str]:
        """A command that starts the server in the background and exits once it answers (non-zero exit and a
        message otherwise). `time_scale` (from VM_MOCK_TIME_SCALE) speeds up the clouds' clocks."""
        ...

    def stop_command(self, state_dir: Path) -> list[str]:
        """A command that stops it, runnable from any shell."""
        ...


def embedded_plugins() -> PluginSet:
    """The `vm_core.embedded` entry points, each checked once, when loaded: one whose `providers` is not a tuple of
    provider names is broken."""
    return PluginSet(EMBEDDED_GROUP, ("name", "title", "providers", "endpoints", "serve_command", "stop_command"),
                     declare=_declared)


def _declared(clouds: Any) -> EmbeddedClouds:
    providers = clouds.providers
    if not isinstance(providers, tuple | list) or not all(isinstance(p, str) for p in providers):
        raise MalformedPlugin(f"providers must be a tuple of provider names, not {providers!r}")
    found: EmbeddedClouds = clouds
    return found


def serving(clouds: PluginSet, plugin: LoadedPlugin) -> EmbeddedClouds | None:
    """The embedded clouds that serve this provider plugin, or None (no entry point lists it, or the plugin
    declares no `embedded_settings`)."""
    if plugin.embedded_settings is None:
        return None
    return next((c for c in clouds.load_all().values() if plugin.name in c.providers), None)


def plugin_settings(plugin: LoadedPlugin, endpoints: Mapping[str, Any]) -> dict[str, Any]:
    """The settings `plugin` needs to talk to its cloud among the running `endpoints`: its `embedded_settings`
    of the cloud's endpoint record and the clouds' `time_scale` (so that it paces itself like the clouds' own
    clocks). {} when they do not serve it."""
    build = plugin.embedded_settings
    if build is None or plugin.name not in endpoints:
        return {}
    return dict(build(endpoints[plugin.name], float(endpoints.get("time_scale", 1.0))))


def settings_from_endpoints(endpoints: dict[str, Any], provider: str) -> dict[str, Any]:
    """`plugin_settings` of the installed provider plugin named `provider` ({} when there is none). Reads the
    process's registry of plugins (plugins.installed_providers)."""
    plugin = provider_plugins().get(provider)
    return plugin_settings(plugin, endpoints) if plugin is not None else {}
