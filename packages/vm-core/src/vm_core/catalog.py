"""The GPU catalog: canonical GPU names (catalog.toml) and each provider's shapes for them (its plugin's `shapes`).

`--gpu TYPE[:N]` is parsed here; N is GPUs per VM. `TYPE` alone means `TYPE:1` (the convention of SkyPilot's
`--gpus H100` and dstack's `gpu: H100`), except where a command asks for every size (`vm offers`).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import UsageError

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class GpuType:
    name: str
    aliases: tuple[str, ...]
    memory_gb: int


@dataclass(frozen=True, slots=True)
class ShapeEntry:
    provider: str
    gpu: str
    shape: str
    gpu_count: int
    price_per_hour: float | None = None  # None: the provider's API reports the price
    spot_price_per_hour: float | None = None  # list price of a spot (preemptible) VM; None: not sold as spot


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


def read_shapes(provider: str, source: Traversable) -> tuple[ShapeEntry, ...]:
    """The `[[shape]]` tables of a TOML file (keys: gpu, shape, gpu_count, optional price_per_hour and
    spot_price_per_hour) as `provider`'s shapes: what a plugin may return as its `shapes`."""
    import tomllib

    return tuple(ShapeEntry(provider, **row) for row in tomllib.loads(source.read_text())["shape"])


@functools.cache
def default_catalog() -> Catalog:
    """The catalog's GPUs with the shapes of every installed provider plugin (also disabled ones, so the catalog
    is the same whatever VM_DISABLE_PROVIDERS says), parsed once per process on first use (commands that need no
    shape skip it)."""
    import tomllib
    from importlib import resources

    from .plugins import PROVIDER_ATTRIBUTES, PROVIDERS_GROUP, PluginSet

    data = tomllib.loads(resources.files("vm_core").joinpath("catalog.toml").read_text())
    gpus = [GpuType(g["name"], tuple(g.get("aliases", ())), int(g["memory_gb"])) for g in data["gpu"]]
    plugins = PluginSet(PROVIDERS_GROUP, PROVIDER_ATTRIBUTES).load_all().values()
    return Catalog(gpus, [s for plugin in plugins for s in plugin_shapes(plugin, {g.name for g in gpus})])


def plugin_shapes(plugin: Any, gpus: Iterable[str]) -> list[ShapeEntry]:
    """The plugin's optional `shapes` (a tuple of ShapeEntry), keeping those of its own name and a catalog GPU;
    each row left out is logged, a plugin without shapes has none (its offers alone then decide)."""
    from .plugins import optional

    known, kept = set(gpus), []
    for row in optional(plugin, "shapes", ()):
        if isinstance(row, ShapeEntry) and row.provider == plugin.name and row.gpu in known:
            kept.append(row)
        else:
            log.debug("provider %s: shape %r left out of the catalog (not a ShapeEntry of %s with a catalog GPU)",
                        plugin.name, row, plugin.name)
    return kept
