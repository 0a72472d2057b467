"""Typed provider settings, declared once: a frozen dataclass whose fields carry `setting(...)` metadata.

    @dataclass(frozen=True, kw_only=True)  # kw_only: required and optional settings in any order
    class MySettings:
        api_key: str = setting(env="MY_API_KEY", secret=True, help="API key")
        time_scale: float = setting(default=1.0, parse=positive_number, help="multiplies poll intervals")

`settings_of(MySettings)` is the plugin's `settings` tuple (key, env var, secret, required, help), and
`parse_settings(MySettings, values, title=..., provider=...)` its `connect`'s validation: each value comes from
`values`, else from the field's env var in the `environ` given (the session's: no other reader of the environment);
a field without a default is required. A missing required value or one its parser refuses is a ConfigError
(exit 4) naming the key and its env var, never echoing the value of a secret.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ..errors import ConfigError
from ..provider import Setting

S = TypeVar("S")
V = TypeVar("V")
Parser = Callable[[Any], Any]  # raises ValueError (its message says what is wanted) for a bad value

_META = "vm_core.setting"


def text(raw: Any) -> str:
    """A setting as stripped text ("" when unset)."""
    return "" if raw is None else str(raw).strip()


def optional_text(raw: Any) -> str | None:
    """Stripped text, None when unset or blank."""
    return text(raw) or None


def number(raw: Any, *, minimum: float = 0.0, strict: bool = False) -> float:
    """A finite float from a number or numeric string (not a bool) >= `minimum` (> with `strict`)."""
    value = math.nan if isinstance(raw, bool) else raw
    try:
        result = float(value)
    except (TypeError, ValueError):
        result = math.nan
    if not math.isfinite(result) or result < minimum or (strict and result == minimum):
        raise ValueError("a positive number" if strict else "a number of seconds (0 or more)")
    return result


def positive_number(raw: Any) -> float:
    return number(raw, strict=True)


def whole_number(raw: Any) -> int:
    """An integer of 1 or more, from a number or numeric string (not a bool, not a fraction)."""
    try:
        value = number(raw, minimum=1.0)  # refuses bools
    except ValueError:
        raise ValueError("a whole number of 1 or more") from None
    if not value.is_integer():
        raise ValueError("a whole number of 1 or more")
    return int(value)


def seconds(raw: Any) -> float:
    return number(raw)


def table(wanted: str, value: Callable[[str, Any], V]) -> Callable[[Any], dict[str, V]]:
    """A parser of a table setting (a TOML table): its keys as text, each value `value(key, raw)` (which raises
    ValueError for a bad one); anything but a table is a ValueError saying `wanted`."""
    def parse(raw: Any) -> dict[str, V]:
        if not isinstance(raw, Mapping):
            raise ValueError(wanted)
        return {str(key): value(str(key), item) for key, item in raw.items()}
    return parse


def texts(wanted: str, *, blank: bool = False) -> Callable[[Any], dict[str, str]]:
    """A parser of a table of texts (region -> project id...), each non-empty unless `blank`; else ValueError
    saying `wanted`."""
    def text_value(_key: str, item: Any) -> str:
        if not isinstance(item, str) or not (item or blank):
            raise ValueError(wanted)
        return item
    return table(wanted, text_value)


def setting(*, env: str = "", secret: bool = False, help: str = "", default: Any = dataclasses.MISSING,
            default_factory: Any = dataclasses.MISSING, parse: Parser = text, missing_hint: str | None = None) -> Any:
    """A dataclass field that is a provider setting. A value that is unset (None or blank) takes `default` (or
    `default_factory()`), without parsing; without either the setting is required (`missing_hint`: the error's
    suggestion)."""
    meta = {_META: (env, secret, help, parse, missing_hint)}
    return dataclasses.field(default=default, default_factory=default_factory, metadata=meta, repr=not secret)


def _has_default(field: dataclasses.Field[Any]) -> bool:
    return field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING


def _fields(cls: type) -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(cls) if _META in f.metadata]


def settings_of(cls: type) -> tuple[Setting, ...]:
    """The plugin's `settings` declaration, in field order."""
    return tuple(Setting(f.name, env=f.metadata[_META][0], secret=f.metadata[_META][1],
                         required=not _has_default(f),
                         help=f.metadata[_META][2]) for f in _fields(cls))


def parse_settings(cls: type[S], values: Mapping[str, Any] | S, *, title: str, provider: str,
                   environ: Mapping[str, str] | None = None) -> S:
    """An instance of the settings dataclass `cls` from `values` (profile and session layers), each unset key
    falling back to its env var in `environ` (default: none; the session is the one reader of the environment and
    passes what it read, so a plugin's `connect` given a mapping never reads the process's environment). Raises
    ConfigError naming the first key missing or malformed. `values` that already are a `cls` (the session parsed
    them: provider.DeclaresSettingsType) are returned as they are."""
    if isinstance(values, cls):
        return values
    assert isinstance(values, Mapping)
    variables: Mapping[str, str] = {} if environ is None else environ
    parsed: dict[str, Any] = {}
    for field in _fields(cls):
        env, secret, _help, parse, hint = field.metadata[_META]
        raw = values.get(field.name)
        if (raw is None or raw == "") and env:
            raw = variables.get(env)
        unset = raw is None or (isinstance(raw, str) and not raw.strip())
        if unset and _has_default(field):
            continue
        if unset:
            where = f" or export {env}" if env else ""
            raise ConfigError(f"{title} setting {field.name!r} is missing: set it in the profile{where}",
                              provider=provider, suggestion=hint)
        try:
            parsed[field.name] = parse(raw)
        except ValueError as exc:
            shown = "" if secret else f", not {raw!r}"
            via = f" (or {env})" if env else ""
            raise ConfigError(f"{title} setting {field.name!r}{via} must be {exc}{shown}", provider=provider) from None
    return cls(**parsed)
