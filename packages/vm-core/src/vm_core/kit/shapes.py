"""A plugin's `shapes` (its rows of the GPU catalog) and `gpus` (the GPU types only it declares) from a TOML file
next to its module, read on first use, and the offers of those rows."""

from __future__ import annotations

import threading
from importlib import resources

from ..catalog import Catalog, GpuType, ShapeEntry, default_catalog, read_gpus, read_shapes
from ..model import Offer, PriceSource


class ShapesFile:
    """The plugin attribute `shapes`: `provider`'s rows of the `[[shape]]` tables of `filename` in `package`
    (vm_core.catalog.read_shapes), read once, when first asked for: loading the plugin reads no file."""

    def __init__(self, provider: str, package: str, filename: str) -> None:
        self._provider = provider
        self._package = package
        self._filename = filename
        self._shapes: tuple[ShapeEntry, ...] | None = None
        self._lock = threading.Lock()

    def __get__(self, plugin: object, owner: type | None = None) -> tuple[ShapeEntry, ...]:
        with self._lock:
            if self._shapes is None:
                source = resources.files(self._package).joinpath(self._filename)
                self._shapes = read_shapes(self._provider, source)
            return self._shapes


class GpusFile:
    """The plugin attribute `gpus`: the `[[gpu]]` tables of `filename` in `package` (vm_core.catalog.read_gpus:
    name, memory_gb, optional aliases and vendor), read once, when first asked for (the plugin loader checks them)."""

    def __init__(self, package: str, filename: str) -> None:
        self._package = package
        self._filename = filename
        self._gpus: tuple[GpuType, ...] | None = None
        self._lock = threading.Lock()

    def __get__(self, plugin: object, owner: type | None = None) -> tuple[GpuType, ...]:
        with self._lock:
            if self._gpus is None:
                self._gpus = read_gpus(resources.files(self._package).joinpath(self._filename))
            return self._gpus


class GivenCatalog:
    """The provider attribute `_catalog`: the catalog the provider was given (its `_given_catalog`, None for the
    default one), else vm's default catalog, parsed on first use (a provider listing no VMs never needs it)."""

    def __get__(self, provider: object, owner: type | None = None) -> Catalog:
        given: Catalog | None = getattr(provider, "_given_catalog", None)
        return given or default_catalog()


def offer(shape: ShapeEntry, region: str, price_per_hour: float, capacity: int | None, *, available: bool = True,
          reservation_id: str = "", spot: bool = False, price_source: PriceSource | None = None) -> Offer:
    """The Offer of a catalog row in `region`: provider, GPU, GPU count and shape are the row's."""
    return Offer(shape.provider, region, shape.gpu, shape.gpu_count, shape.shape, price_per_hour, capacity,
                 available=available, reservation_id=reservation_id, spot=spot, price_source=price_source)
