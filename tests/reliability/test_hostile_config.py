"""Hostile config files, property-based: random text, random TOML documents of the right and wrong shapes, and
every file mode. `vm` reads them and refuses cleanly (exit 4 for configuration, 2 for an unknown provider or
profile given as input) without a traceback, without touching the file, the store or the clouds; a config that
group or others may access is always refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from reliability_kit import sizes
from reliability_kit.home import VmHome
from reliability_kit.hostile import TEXT, examples
from reliability_kit.inprocess import State, assert_clean_failure, vm

COMMANDS = (["config", "show", "-o", "json"], ["fleet", "list", "-o", "json"], ["providers", "-o", "json"])
KEYS = st.one_of(st.sampled_from(["default_profile", "profiles", "embedded", "local", "work", "crusoe", "lambda",
                                  "nebius", "aws", "access_key_id", "secret_key", "project_id", "api_endpoint",
                                  "api_key", "token", "endpoint", "projects", "subnet_id", "time_scale",
                                  "request_interval", "launch_interval"]), TEXT)
SCALARS = st.one_of(TEXT, st.integers(-(2**63), 2**63 - 1), st.booleans(),
                    st.floats(allow_nan=False, allow_infinity=False),
                    st.sampled_from(["http://127.0.0.1:9/v1alpha5", "127.0.0.1:9", "local", "work", ""]))
VALUES = st.recursive(st.one_of(SCALARS, st.lists(SCALARS, max_size=3)),
                      lambda inner: st.dictionaries(KEYS, inner, max_size=4), max_leaves=12)
SETTINGS = st.dictionaries(KEYS, VALUES, max_size=5)
PROFILES = st.dictionaries(KEYS, st.dictionaries(KEYS, st.one_of(SETTINGS, VALUES), max_size=4), max_size=3)
DOCUMENTS = st.one_of(
    st.dictionaries(KEYS, VALUES, max_size=4),
    st.fixed_dictionaries({"profiles": PROFILES}, optional={"default_profile": st.one_of(KEYS, SCALARS)}),
)
TOML_FRAGMENTS = st.sampled_from(["[profiles.local]\n", "embedded = true\n", "[profiles.x.crusoe]\n", "a = 1\n",
                                  "[[profiles]]\n", "default_profile = 'x'\n", "= \n", "[", '"\\u0000"', "\n"])
RAW = st.lists(st.one_of(TEXT, TOML_FRAGMENTS), max_size=12).map("".join)
VALID = '[profiles.local]\nembedded = true\n'


def toml(document: dict[str, Any]) -> str:
    """A TOML rendering of `document` (quoted keys, JSON-style strings): valid TOML or, for the odd character
    JSON does not escape, a file TOML refuses, which is just as good a test."""
    lines: list[str] = []
    _table(lines, [], document)
    return "\n".join(lines) + "\n"


def _table(lines: list[str], path: list[str], table: dict[str, Any]) -> None:
    scalars = {k: v for k, v in table.items() if not isinstance(v, dict)}
    tables = {k: v for k, v in table.items() if isinstance(v, dict)}
    if path and (scalars or not tables):
        lines.append("[" + ".".join(json.dumps(k, ensure_ascii=False) for k in path) + "]")
    lines += [f"{json.dumps(k, ensure_ascii=False)} = {_value(v)}" for k, v in scalars.items()]
    for key, value in tables.items():
        _table(lines, [*path, key], value)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


@pytest.fixture(scope="module")
def config_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VmHome]:
    home = VmHome(tmp_path_factory.mktemp("hostile-config") / "home")
    home.start()
    home.ok("fleet", "list")
    yield home
    home.stop()


def write_config(home: VmHome, text: str, mode: int = 0o600) -> None:
    path = home.path / "config.toml"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    path.chmod(mode)


def run_commands(home: VmHome, codes: set[int]) -> None:
    before = State.of(home)
    for command in COMMANDS:
        assert_clean_failure(vm(home, command), codes)
    assert State.of(home) == before


def check_contents(home: VmHome, count: int) -> None:
    @examples(count)
    @given(st.one_of(RAW, DOCUMENTS.map(toml)))
    def check(text: str) -> None:
        write_config(home, text)
        run_commands(home, {0, 2, 4})

    check()


def check_modes(home: VmHome, count: int) -> None:
    @examples(count)
    @given(st.integers(0, 0o777))
    def check(mode: int) -> None:
        write_config(home, VALID, mode)
        before = State.of(home)
        for command in COMMANDS:
            result = vm(home, command)
            if mode & 0o077:
                assert_clean_failure(result, {4})
                assert "accessible to group or others" in result.err and "chmod 600" in result.err
            else:
                assert_clean_failure(result, {0})
        assert State.of(home) == before

    check()


def test_hostile_config_files_fast(config_home: VmHome, figures) -> None:
    try:
        check_contents(config_home, sizes.FAST.cli_examples)
        check_modes(config_home, sizes.FAST.cli_examples)
    finally:
        (config_home.path / "config.toml").unlink(missing_ok=True)
    figures.add("hostile config files", 2 * sizes.FAST.cli_examples)


@pytest.mark.soak
def test_hostile_config_files_soak(config_home: VmHome, figures) -> None:
    try:
        check_contents(config_home, sizes.SOAK.cli_examples)
        check_modes(config_home, sizes.SOAK.cli_examples)
    finally:
        (config_home.path / "config.toml").unlink(missing_ok=True)
    figures.add("hostile config files", 2 * sizes.SOAK.cli_examples)
