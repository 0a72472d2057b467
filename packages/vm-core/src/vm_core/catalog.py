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

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    from .plugins import LoadedPlugin

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class GpuType:
    name: str  # canonical: what `--gpu`, shapes and offers say
    aliases: tuple[str, ...]  # other names `--gpu` accepts (case-insensitive, as the name)
    memory_gb: int  # memory of one GPU
    vendor: str = "NVIDIA"


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


class MalformedDeclaration(ValueError):
    """A plugin's (or catalog.toml's) GPU types are not what the catalog needs; the message says which and why."""


def read_gpus(source: Traversable) -> tuple[GpuType, ...]:
    """The `[[gpu]]` tables of a TOML file (keys: name, memory_gb, optional aliases and vendor; none: no GPUs) as
    GPU types: what a plugin may return as its `gpus`. Raises MalformedDeclaration for a table missing a key or
    with an unknown one (the values are checked by `check_gpus`)."""
    import tomllib

    found = []
    for i, row in enumerate(tomllib.loads(source.read_text()).get("gpu", ())):
        unknown = sorted(set(row) - {"name", "aliases", "memory_gb", "vendor"})
        if unknown or not {"name", "memory_gb"} <= set(row):
            raise MalformedDeclaration(f"{source.name}: [[gpu]] #{i + 1} needs name and memory_gb (and may have "
                                       f"aliases and vendor){'; unknown: ' + ', '.join(unknown) if unknown else ''}")
        aliases = row.get("aliases", ())
        found.append(GpuType(row["name"], tuple(aliases) if isinstance(aliases, list) else aliases,
                             row["memory_gb"], row.get("vendor", "NVIDIA")))
    return tuple(found)


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+_-]{0,39}")


def check_gpus(declared: object, shared: Iterable[GpuType] = ()) -> tuple[GpuType, ...]:
    """`declared` as GPU types, if it is a tuple or list of GpuType with names (and aliases) of letters, digits,
    `.`, `+`, `_` or `-`, a whole number of GB of memory and a vendor, no two naming the same GPU and none naming
    one of `shared` (the catalog's own types, which a plugin sells without declaring). Raises
    MalformedDeclaration saying which entry is wrong and why."""
    if not isinstance(declared, tuple | list):
        raise MalformedDeclaration(f"gpus must be a tuple of GpuType, not {type(declared).__name__}")
    taken = {n.upper(): g.name for g in shared for n in (g.name, *g.aliases)}
    for i, gpu in enumerate(declared):
        where = f"gpus[{i}]"
        _check_gpu(where, gpu)
        for name in (gpu.name, *gpu.aliases):
            if name.upper() in taken:
                raise MalformedDeclaration(f"{where} ({gpu.name}): {name!r} already names the catalog's GPU type "
                                           f"{taken[name.upper()]}")
            taken[name.upper()] = gpu.name
    return tuple(declared)


def _check_gpu(where: str, gpu: object) -> None:
    if not isinstance(gpu, GpuType):
        raise MalformedDeclaration(f"{where} is a {type(gpu).__name__}, not a GpuType")
    names = (gpu.name, *gpu.aliases) if isinstance(gpu.aliases, tuple) else None
    if names is None or not all(isinstance(n, str) and _NAME.fullmatch(n) for n in names):
        raise MalformedDeclaration(f"{where} ({gpu.name!r}): the name and each alias (a tuple) must be 1 to 40 "
                                   "letters, digits, '.', '+', '_' or '-' (no spaces, no ':'), e.g. A100-80GB")
    if isinstance(gpu.memory_gb, bool) or not isinstance(gpu.memory_gb, int) or gpu.memory_gb <= 0:
        raise MalformedDeclaration(f"{where} ({gpu.name}): memory_gb must be a whole number of GB above 0, "
                                   f"not {gpu.memory_gb!r}")
    if not isinstance(gpu.vendor, str) or not gpu.vendor.strip():
        raise MalformedDeclaration(f"{where} ({gpu.name}): vendor must be a name such as NVIDIA or AMD")


@functools.cache
def shared_gpus() -> tuple[GpuType, ...]:
    """catalog.toml's GPU types: those more than one provider may sell (read once per process)."""
    from importlib import resources

    return check_gpus(read_gpus(resources.files("vm_core").joinpath("catalog.toml")))


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
