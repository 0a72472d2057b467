"""GPU types and shape rows, the two things a provider plugin declares for the catalog (its `gpus` and `shapes`),
and how those declarations are read from TOML and checked. The catalog (catalog.py) is built from them; the
plugin loader (plugins.py) checks them once per plugin. Imports nothing of vm-core."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable


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
