"""The GPU catalog: GPU types (the shared ones in catalog.toml, each provider plugin's own in its `gpus`) and each
provider's shapes of them (its plugin's `shapes`).

A plugin's `gpus` and `shapes` are checked once, when the plugin is loaded (plugins.LoadedPlugin, with `check_gpus`):
a malformed one makes the plugin broken, with the reason, as a plugin that fails to import.

`--gpu TYPE[:N]` is parsed here; N is GPUs per VM. `TYPE` alone means `TYPE:1` (the convention of SkyPilot's
`--gpus H100` and dstack's `gpu: H100`), except where a command asks for every size (`vm offers`).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import UsageError
from .gpus import (
    GpuType,
    MalformedDeclaration,
    ShapeEntry,
    check_gpus,
    read_gpus,
    read_shapes,
    shared_gpus,
)

# GPU types and shape rows (gpus.py) are part of the catalog's interface for plugin authors.
__all__ = ["Catalog", "GpuRequest", "GpuType", "MalformedDeclaration", "ShapeEntry", "check_gpus",
           "default_catalog", "merged_gpus", "plugin_shapes", "read_gpus", "read_shapes", "shared_gpus"]

if TYPE_CHECKING:
    from .plugins import LoadedPlugin

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class GpuRequest:
    gpu: str  # canonical name
    gpu_count: int | None  # per VM; None = every size (only from `parse(..., any_size=True)`)


class Catalog:
    def __init__(self, gpus: list[GpuType], shapes: list[ShapeEntry]) -> None:
        self.gpus = gpus
        self.shapes = shapes
        self._by_alias = {alias.upper(): g for g in gpus for alias in (g.name, *g.aliases)}
        self._by_shape: dict[tuple[str, str], ShapeEntry] = {}
        for entry in shapes:  # the first entry of a (provider, shape), as a scan would find it
            self._by_shape.setdefault((entry.provider, entry.shape), entry)

    def gpu(self, name: str) -> GpuType:
        """The canonical GPU for a name or alias (case-insensitive); UsageError lists the known ones."""
        found = self._by_alias.get(name.strip().upper())
        if found is None:
            known = ", ".join(g.name for g in self.gpus)
            raise UsageError(f"unknown GPU type {name!r}; known types: {known}")
        return found

    def parse(self, text: str, *, any_size: bool = False) -> GpuRequest:
        """`H100` or `H100:8`. Without a count: one GPU per VM, or every size (`gpu_count` None) if `any_size`.
        Raises UsageError for an unknown type or a bad count."""
        name, sep, count = text.partition(":")
        gpu = self.gpu(name)
        if not sep:
            return GpuRequest(gpu.name, None if any_size else 1)
        if not re.fullmatch(r"[0-9]{1,3}", count) or not 1 <= int(count) <= 64:
            raise UsageError(f"bad GPU count in {text!r}: give GPUs per VM as a number from 1 to 64, e.g. H100:8")
        return GpuRequest(gpu.name, int(count))

    def shapes_for(self, provider: str, gpu: str, gpu_count: int | None = None) -> list[ShapeEntry]:
        """The provider's shapes of `gpu` (exactly `gpu_count` GPUs if given), smallest and cheapest first."""
        found = [s for s in self.shapes if s.provider == provider and s.gpu == gpu]
        if gpu_count is not None:
            found = [s for s in found if s.gpu_count == gpu_count]
        return sorted(found, key=lambda s: (s.gpu_count, s.price_per_hour or 0.0))

    def sizes(self, provider: str, gpu: str) -> list[int]:
        """The GPU counts per VM in which `provider` sells `gpu` (empty: it does not, or the catalog does not
        know the provider)."""
        return sorted({s.gpu_count for s in self.shapes if s.provider == provider and s.gpu == gpu})

    def size_note(self, provider: str, gpu: str, gpu_count: int) -> str | None:
        """Why `provider` cannot host a VM of `gpu_count` x `gpu` (e.g. "crusoe sells H100 only as H100:8"),
        or None when it sells that size or the catalog does not know the provider."""
        if not self.knows(provider) or gpu_count in self.sizes(provider, gpu):
            return None
        sizes = [f"{gpu}:{n}" for n in self.sizes(provider, gpu)]
        if not sizes:
            return f"{provider} does not sell {gpu}"
        listed = sizes[0] if len(sizes) == 1 else f"{', '.join(sizes[:-1])} or {sizes[-1]}"
        return f"{provider} sells {gpu} only as {listed}"

    def knows(self, provider: str) -> bool:
        """Whether the catalog lists shapes of `provider` (third-party providers' own offers decide)."""
        return any(s.provider == provider for s in self.shapes)

    def lookup(self, provider: str, shape: str) -> ShapeEntry | None:
        """The catalog entry of a provider's shape (one dict lookup: listings map thousands of VMs)."""
        return self._by_shape.get((provider, shape))


@functools.cache
def default_catalog() -> Catalog:
    """The shared GPU types and those of every installed provider plugin, with the shapes of every plugin (also
    disabled ones, so the catalog is the same whatever VM_DISABLE_PROVIDERS says), built once per process on first
    use (commands that need no shape skip it) from the process's plugin records (plugins.installed_providers). A
    broken plugin (one whose facts are malformed among them) adds nothing."""
    from .plugins import provider_set

    plugins = provider_set().load_all().values()
    gpus = merged_gpus(shared_gpus(), {plugin.name: plugin.gpus for plugin in plugins})
    return Catalog(gpus, [s for plugin in plugins for s in plugin_shapes(plugin, {g.name for g in gpus})])


def merged_gpus(shared: Iterable[GpuType], declared: dict[str, tuple[GpuType, ...]]) -> list[GpuType]:
    """The shared GPU types, then each plugin's (in the order of their names). Two plugins may declare the same
    GPU type alike; a later declaration naming a known GPU type differently is left out and logged."""
    gpus = list(shared)
    taken = {n.upper(): g for g in gpus for n in (g.name, *g.aliases)}
    for provider in sorted(declared):
        for gpu in declared[provider]:
            clashing = {taken[n.upper()] for n in (gpu.name, *gpu.aliases) if n.upper() in taken}
            if clashing == {gpu}:
                continue
            if clashing:
                log.warning("provider %s: GPU type %s left out: it names %s, declared otherwise by another provider",
                            provider, gpu.name, ", ".join(sorted(g.name for g in clashing)))
                continue
            gpus.append(gpu)
            taken.update({n.upper(): gpu for n in (gpu.name, *gpu.aliases)})
    return gpus


def plugin_shapes(plugin: LoadedPlugin, gpus: Iterable[str]) -> list[ShapeEntry]:
    """The plugin's `shapes` (checked when it was loaded: its own rows, of GPU types it sells) whose GPU type is
    among `gpus`; a row left out (its GPU type clashed with another plugin's: merged_gpus) is logged."""
    known, kept = set(gpus), []
    for row in plugin.shapes:
        if row.gpu in known:
            kept.append(row)
        else:
            log.debug("provider %s: shape %s left out of the catalog (GPU type %s is not in it)",
                      plugin.name, row.shape, row.gpu)
    return kept
