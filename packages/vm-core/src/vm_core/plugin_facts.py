"""The checks of a provider plugin's facts, made once when its LoadedPlugin record is made (plugins.py, which
re-exports MalformedPlugin).

Each check says which fact is wrong and why, as a MalformedPlugin the loader reports; none falls back to a default.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import typing
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .gpus import GpuType, MalformedDeclaration, ShapeEntry, check_gpus, shared_gpus
from .provider import Setting
from .spend.rules import BillingRule

if TYPE_CHECKING:
    from .plugins import LoadedPlugin

_ABSENT = object()
_REQUIRED = ("name", "title", "connect")  # a misspelling of these is reported as missing, by the loader
_SPELLING_CUTOFF = 0.85  # difflib ratio above which an unknown attribute is taken for a misspelt fact


class MalformedPlugin(ValueError):
    """A plugin is not what its group needs; the message says which fact is wrong and why ("create_concurrency
    must be a whole number of 1 or more, not True")."""


def provider_class_of(connect: Callable[..., Any]) -> type | None:
    """The return annotation of `connect` when it names a class; None when it names none or cannot be resolved."""
    try:
        returned = typing.get_type_hints(connect).get("return")
    except Exception:  # noqa: BLE001 - an unresolvable annotation only means "unknown"
        return None
    return returned if isinstance(returned, type) else None


def read_facts(plugin: object, facts: Sequence[str]) -> dict[str, Any]:
    """The facts `plugin` declares (an attribute that is absent or None is left out: its default applies).
    Raises MalformedPlugin when reading one raises, when name, title or connect is missing, or when it declares
    neither settings nor settings_type."""
    found = {}
    for fact in facts:
        try:
            value = getattr(plugin, fact, _ABSENT)
        except Exception as exc:  # noqa: BLE001 - any failure of third-party code is a malformed declaration
            what = "malformed GPU types: reading gpus" if fact == "gpus" else f"{fact}: reading it"
            raise MalformedPlugin(f"{what} failed: {type(exc).__name__}: {exc}") from None
        if value is not _ABSENT and value is not None:
            found[fact] = value
    if missing := [fact for fact in _REQUIRED if fact not in found]:
        raise MalformedPlugin(f"no {', '.join(missing)}")
    if "settings" not in found and "settings_type" not in found:
        raise MalformedPlugin("no settings (a tuple of Setting) and no settings_type")
    return found


def misspelt(plugin: object, facts: Sequence[str]) -> str | None:
    """What looks like a misspelt optional fact among the plugin's public attributes (`create_concurency`), with
    the fact it resembles; None when nothing does."""
    candidates = [f for f in facts if f not in _REQUIRED]
    try:
        names = [n for n in dir(plugin) if not n.startswith("_") and n not in facts]
    except Exception:  # noqa: BLE001 - an object that cannot list its attributes has none to misspell
        return None
    for name in names:
        if close := difflib.get_close_matches(name, candidates, n=1, cutoff=_SPELLING_CUTOFF):
            return f"{name!r}, which is no fact vm knows: is it a misspelt {close[0]!r}?"
    return None


def checked(record: LoadedPlugin) -> dict[str, Any]:
    """The record's facts that need normalising (tuples, derived settings, the provider class), each checked.
    Raises MalformedPlugin naming the first wrong fact."""
    _text("name", record.name)
    _text("title", record.title)
    _callable("connect", record.connect, optional=False)
    _callable("embedded_settings", record.embedded_settings)
    _callable("native_credentials", record.native_credentials)
    gpus = _gpus(record.gpus)
    provider_class = _provider_class(record)
    return {
        "settings": _settings(record),
        "instance_id_pattern": _pattern(record.instance_id_pattern),
        "instance_id_example": _string("instance_id_example", record.instance_id_example),
        "gpus": gpus,
        "shapes": _shapes(record.name, record.shapes, gpus),
        "create_concurrency": _whole("create_concurrency", record.create_concurrency),
        "billing": _billing(record.billing),
        "debug_loggers": _texts("debug_loggers", record.debug_loggers),
        "provider_class": provider_class,
        "needs_ssh_key": _needs_key(record.needs_ssh_key, provider_class),
    }


def _text(fact: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise MalformedPlugin(f"{fact} must be a non-empty str, not {value!r}")
    return value


def _string(fact: str, value: object) -> str:
    if not isinstance(value, str):
        raise MalformedPlugin(f"{fact} must be a str, not {type(value).__name__}")
    return value


def _callable(fact: str, value: object, *, optional: bool = True) -> None:
    if not (callable(value) or (optional and value is None)):
        raise MalformedPlugin(f"{fact} must be callable, not {type(value).__name__}")


def _tuple(fact: str, value: object, kind: str) -> tuple[Any, ...]:
    if not isinstance(value, tuple | list):
        raise MalformedPlugin(f"{fact} must be a tuple of {kind}, not {type(value).__name__}")
    return tuple(value)


def _settings(record: LoadedPlugin) -> tuple[Setting, ...]:
    """The settings: settings_of(settings_type) when that is declared (an explicit `settings` must equal it)."""
    declared = _tuple("settings", record.settings, "Setting")
    for i, setting in enumerate(declared):
        if not isinstance(setting, Setting):
            raise MalformedPlugin(f"settings[{i}] is a {type(setting).__name__}, not a Setting")
    if record.settings_type is not None:
        derived = _derived(record.settings_type)
        if declared and declared != derived:
            raise MalformedPlugin("settings differ from settings_of(settings_type): declare settings_type alone")
        declared = derived
    keys = [s.key for s in declared]
    if twice := sorted({k for k in keys if keys.count(k) > 1}):
        raise MalformedPlugin(f"settings name {', '.join(twice)} more than once")
    return declared


def _derived(settings_type: object) -> tuple[Setting, ...]:
    if not (isinstance(settings_type, type) and dataclasses.is_dataclass(settings_type)):
        raise MalformedPlugin(f"settings_type must be a dataclass of vm_core.kit.setting fields, not {settings_type!r}")
    from .kit.settings import settings_of

    return settings_of(settings_type)


def _pattern(value: object) -> str:
    pattern = _string("instance_id_pattern", value)
    try:
        re.compile(pattern)
    except re.error as exc:
        raise MalformedPlugin(f"instance_id_pattern {pattern!r} is not a regular expression: {exc}") from None
    return pattern


def _gpus(value: object) -> tuple[GpuType, ...]:
    try:
        return check_gpus(value, shared_gpus())
    except MalformedDeclaration as exc:
        raise MalformedPlugin(f"malformed GPU types: {exc}") from None


def _shapes(name: str, value: object, gpus: tuple[GpuType, ...]) -> tuple[ShapeEntry, ...]:
    """Its own ShapeEntry rows, each of a GPU type of catalog.toml or of its `gpus` (by canonical name)."""
    rows = _tuple("shapes", value, "ShapeEntry")
    known = {g.name for g in (*shared_gpus(), *gpus)}
    for i, row in enumerate(rows):
        if not isinstance(row, ShapeEntry):
            raise MalformedPlugin(f"shapes[{i}] is a {type(row).__name__}, not a ShapeEntry")
        if row.provider != name:
            raise MalformedPlugin(f"shapes[{i}] ({row.shape}) is a shape of {row.provider!r}, not of {name!r}")
        if row.gpu not in known:
            raise MalformedPlugin(f"shapes[{i}] ({row.shape}): GPU type {row.gpu!r} is neither in vm's catalog nor in"
                                  " its gpus (declare it there)")
        if isinstance(row.gpu_count, bool) or not isinstance(row.gpu_count, int) or row.gpu_count < 1:
            raise MalformedPlugin(f"shapes[{i}] ({row.shape}): gpu_count must be a whole number of 1 or more")
    return rows


def _whole(fact: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise MalformedPlugin(f"{fact} must be a whole number of 1 or more, not {value!r}")
    return value


def _billing(value: object) -> BillingRule:
    """A BillingRule whose granularity is a whole number of seconds (1 or more), its minimum one of 0 or more and
    its billed states a set of InstanceState values."""
    if not isinstance(value, BillingRule):
        raise MalformedPlugin(f"billing must be a vm_core.spend.rules.BillingRule, not {type(value).__name__}")
    _whole("billing.granularity_seconds", value.granularity_seconds)
    minimum = value.minimum_seconds
    if isinstance(minimum, bool) or not isinstance(minimum, int) or minimum < 0:
        raise MalformedPlugin(f"billing.minimum_seconds must be a whole number of 0 or more, not {minimum!r}")
    from .model import InstanceState

    states = value.billed_states
    known = {s.value for s in InstanceState}
    if not isinstance(states, frozenset) or not states <= known:
        raise MalformedPlugin(f"billing.billed_states must be a frozenset of {', '.join(sorted(known))},"
                              f" not {states!r}")
    return value


def _texts(fact: str, value: object) -> tuple[str, ...]:
    found = _tuple(fact, value, "str")
    if any(not isinstance(v, str) or not v for v in found):
        raise MalformedPlugin(f"{fact} must be a tuple of non-empty str, not {value!r}")
    return found


def _provider_class(record: LoadedPlugin) -> type | None:
    declared: object = record.provider_class
    if declared is None:
        connect: Callable[..., Any] = record.connect
        return provider_class_of(connect)
    if not isinstance(declared, type):
        raise MalformedPlugin(f"provider_class must be a class, not {declared!r}")
    return declared


def _needs_key(declared: object, provider_class: type | None) -> bool:
    if not isinstance(declared, bool):
        raise MalformedPlugin(f"needs_ssh_key must be True or False, not {declared!r}")
    return declared or getattr(provider_class, "needs_ssh_key", False) is True
