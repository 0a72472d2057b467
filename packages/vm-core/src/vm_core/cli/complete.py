"""What TAB completes, without asking any cloud: a shell waits for these answers.

- fleet names: the fleet store of the profile (the local SQLite file, or the team's PostgreSQL database);
- VM names and ids (`vm ssh`, `vm get`, `vm stop`, ...): what vm last saw, kept in `$STATE/completion.json` by the
  commands that list, create or destroy VMs (`remember`, `forget`), plus the members the fleet store records;
- GPU types and sizes (`--gpu`): the catalog (`H100`, `H100:8`, ...), only the sizes `--provider` sells when given
  (a bare `H100` only where one GPU per VM is sold, except for `vm offers`, where it means every size);
- profiles (`--profile`): those of config.toml, `auto` and `local`.

Every completer answers [] rather than fail: a broken config file or an unreachable store never prints on TAB.
The cache holds names and ids only (no secret), per profile and provider, and is written atomically (0600).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from ..config import Paths
    from ..fleet.store import FleetStore
    from ..model import Instance

CACHE_FILE = "completion.json"
PROFILE_NAMED = "vm.profile"  # ctx.meta key: the profile --profile named (set by the option, cli/app.py)


def _quietly(fn: Callable[..., list[str]]) -> Callable[[click.Context, click.Parameter, str], list[str]]:
    """A click `shell_complete` that answers [] when `fn` fails (TAB never prints an error)."""

    def complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
        try:
            return [c for c in fn(ctx) if c.startswith(incomplete)]
        except Exception:  # noqa: BLE001 - completion must not fail
            return []

    return complete


def _environ() -> Mapping[str, str]:
    return os.environ


def _paths() -> Paths:
    from ..config import Paths

    return Paths.from_env(_environ())


def _profile_name(ctx: click.Context) -> str | None:
    """The profile the command line names (--profile, before or after the command), else VM_PROFILE."""
    named = ctx.meta.get(PROFILE_NAMED)  # click shares `meta` with every context of the command line
    return named or _environ().get("VM_PROFILE") or None


# ------------------------------------------------------------------------------------------ profiles
def _profiles(ctx: click.Context) -> list[str]:
    from ..config import load_config

    return load_config(_paths().config_file).names()


# ------------------------------------------------------------------------------------------ fleets
def _store(ctx: click.Context) -> FleetStore | None:
    """The profile's fleet store, or None when the local SQLite file was never created."""
    from ..config import load_config
    from ..fleet.location import SQLITE_FILE, store_at

    paths = _paths()
    url = (_environ().get("VM_STORE_URL") or "").strip() or load_config(paths.config_file).profile(
        _profile_name(ctx)).store_url
    if url is None and not (paths.state_dir / SQLITE_FILE).exists():
        return None
    return store_at(url, paths.state_dir)


def _fleets(ctx: click.Context) -> list[str]:
    store = _store(ctx)
    return [] if store is None else sorted(f.name for f in store.list_fleets())


# ------------------------------------------------------------------------------------------ VMs
def remember(state_dir: Path, profile: str, provider: str, vms: Iterable[tuple[str, str]], *,
             complete: bool) -> None:
    """Record VMs (id, name) of `provider` seen under `profile`: all of its VMs when `complete` (a listing that
    was not filtered: it replaces what was known), else some more (a create). Never raises."""
    def change(known: dict[str, str]) -> dict[str, str]:
        return {**({} if complete else known), **dict(vms)}

    _update(state_dir, profile, provider, change)


def forget(state_dir: Path, profile: str, provider: str, ids: Iterable[str]) -> None:
    """Drop destroyed VMs from what completion knows. Never raises."""
    gone = set(ids)
    _update(state_dir, profile, provider, lambda known: {i: n for i, n in known.items() if i not in gone})


def _update(state_dir: Path, profile: str, provider: str, change: Callable[[dict[str, str]], dict[str, str]]) -> None:
    path = state_dir / CACHE_FILE
    try:
        cache = _read(path)
        entry = cache.setdefault(profile, {})
        entry[provider] = change(dict(entry.get(provider, {})))
        state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".{CACHE_FILE}.{os.getpid()}.{time.monotonic_ns()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(cache, out)
        os.replace(tmp, path)
    except (OSError, ValueError):
        return  # completion is a convenience: a read-only or full state dir changes nothing else


def _read(path: Path) -> dict[str, dict[str, dict[str, str]]]:
    """{profile: {provider: {id: name}}} ({} when there is no readable cache)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _vms(ctx: click.Context) -> list[tuple[str, str, str]]:
    """(provider, id, name) of the VMs vm last saw (of the command line's profile when it names one) and of
    the fleet store's members, limited to the command's --provider when given."""
    wanted, provider = _profile_name(ctx), ctx.params.get("provider")
    found = {(p, i, n) for profile, entry in _read(_paths().state_dir / CACHE_FILE).items()
             if wanted in (None, profile) for p, vms in entry.items() for i, n in vms.items()}
    found |= set(_members(ctx))
    return sorted(v for v in found if provider in (None, v[0]))


def _members(ctx: click.Context) -> list[tuple[str, str, str]]:
    from ..fleet.store import MAY_EXIST

    store = _store(ctx)
    if store is None:
        return []
    return [(m.provider, m.instance_id, m.name) for f in store.list_fleets() for m in store.members(f.name)
            if m.instance_id and m.state in MAY_EXIST]


def _ids(ctx: click.Context) -> list[str]:
    return [i for _, i, _ in _vms(ctx)]


def _names_and_ids(ctx: click.Context) -> list[str]:
    vms = _vms(ctx)
    return sorted({n for _, _, n in vms if n} | {i for _, i, _ in vms})


# ------------------------------------------------------------------------------------------ GPUs
def _gpu_sizes(ctx: click.Context, *, any_size: bool) -> list[str]:
    """`TYPE` and `TYPE:N` of every size sold (by --provider when given). A bare `TYPE` means every size with
    `any_size` (`vm offers`), else one GPU per VM: it is offered only where that size is sold."""
    from ..catalog import default_catalog

    catalog, provider = default_catalog(), ctx.params.get("provider")
    shapes = [s for s in catalog.shapes if provider in (None, s.provider)]
    types = sorted({s.gpu for s in shapes if any_size or s.gpu_count == 1})
    sizes = sorted({(s.gpu, s.gpu_count) for s in shapes})
    return types + [f"{gpu}:{count}" for gpu, count in sizes]


def _gpus(ctx: click.Context) -> list[str]:
    return _gpu_sizes(ctx, any_size=False)


def _gpu_types(ctx: click.Context) -> list[str]:
    return _gpu_sizes(ctx, any_size=True)


complete_profiles = _quietly(_profiles)
complete_fleets = _quietly(_fleets)
complete_instance_ids = _quietly(_ids)
complete_vm_names = _quietly(_names_and_ids)
complete_gpus = _quietly(_gpus)  # vm create, vm fleet create: TYPE is TYPE:1
complete_gpu_types = _quietly(_gpu_types)  # vm offers: TYPE is every size


def listed(state_dir: Path, profile: str, by_provider: Mapping[str, Sequence[Instance]]) -> None:
    """After an unfiltered `vm list`: every VM of each provider that answered, for completion."""
    for provider, instances in by_provider.items():
        remember(state_dir, profile, provider, [(i.id, i.name) for i in instances], complete=True)
