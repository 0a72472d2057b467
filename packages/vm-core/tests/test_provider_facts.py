"""Cloud-specific facts come from the provider plugins (provider.py, "Optional attributes"), loaded defensively.

The core (everything in vm_core but providers/) names no built-in cloud and imports neither an SDK nor
mock_clouds: the instance-id patterns, catalog shapes, create concurrency, debug loggers and embedded settings of
crusoe, lambda and nebius are their plugins' attributes, read the same way as a third-party plugin's.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import vm_core
from vm_core.catalog import ShapeEntry, default_catalog, plugin_shapes
from vm_core.cli import validate
from vm_core.embedded import embedded_plugins, plugin_settings, serving
from vm_core.errors import UsageError
from vm_core.plugins import DEFAULT_CREATE_CONCURRENCY, create_concurrency, optional, provider_plugins

CORE = Path(vm_core.__file__).parent
BUILT_IN = ("crusoe", "lambda", "nebius")


def core_files() -> list[Path]:
    return [p for p in CORE.rglob("*.py") if "providers" not in p.relative_to(CORE).parts]


def test_the_core_names_no_built_in_cloud() -> None:
    """No string in the core equals a built-in cloud's name (no table keyed by it, no comparison with it)."""
    found = [(p.name, node.value) for p in core_files() for node in ast.walk(ast.parse(p.read_text()))
             if isinstance(node, ast.Constant) and node.value in BUILT_IN]
    assert found == []


def test_the_core_imports_no_sdk_and_not_mock_clouds() -> None:
    imported = {(p.name, name) for p in core_files() for node in ast.walk(ast.parse(p.read_text()))
                for name in _imported(node)}
    assert {(f, n) for f, n in imported if n.split(".")[0] in ("mock_clouds", *(f"{c}_sdk" for c in BUILT_IN))} \
        == set()


def _imported(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module]
    return []


def test_vm_core_does_not_depend_on_mock_clouds() -> None:
    text = (CORE.parents[1] / "pyproject.toml").read_text()
    dependencies = text.split("dependencies = [", 1)[1].split("]", 1)[0]
    assert "mock-clouds" not in dependencies


@pytest.mark.parametrize(("name", "good", "bad"), [
    ("crusoe", "3f0c6a1e-2b4d-4c8e-9a7f-1d2e3f4a5b6c", "3f0c6a1e"),
    ("lambda", "0920582c7ff041399e34823a0be62549", "0920582c"),
    ("nebius", "computeinstance-e00hf93cfnsgaxygn3", "instance-e00hf93"),
    ("example", "ex-0123abcd", "ex-1"),
])
def test_instance_id_patterns_are_the_plugins(name: str, good: str, bad: str) -> None:
    plugin = provider_plugins().get(name)
    assert re.fullmatch(plugin.instance_id_pattern, good)
    assert validate.instance_id(plugin, name, f" {good} ") == good
    with pytest.raises(UsageError, match=f"malformed {name} instance id '{bad}'; {name} instance ids look like"):
        validate.instance_id(plugin, name, bad)


def test_catalog_shapes_are_the_plugins() -> None:
    catalog, plugins = default_catalog(), provider_plugins()
    for name in (*BUILT_IN, "example"):
        declared = {s for s in plugins.get(name).shapes if s.gpu == "H100"}
        assert declared and set(catalog.shapes_for(name, "H100")) == declared
    assert {s.provider for s in catalog.shapes} == {*BUILT_IN, "example"}
    assert catalog.size_note("crusoe", "H100", 1) == "crusoe sells H100 only as H100:8"
    assert catalog.size_note("example", "H100", 2) == "example sells H100 only as H100:1"


def test_create_concurrency_is_the_plugins() -> None:
    assert create_concurrency(["crusoe", "lambda", "nebius", "example", "not-installed"]) == {
        "crusoe": 32, "lambda": 4, "nebius": 32, "example": 2, "not-installed": DEFAULT_CREATE_CONCURRENCY}


def test_embedded_settings_come_from_each_plugin() -> None:
    """The mock clouds' entry point serves the three built-in clouds; each plugin turns its endpoint record into
    settings; the example plugin declares no embedded_settings, so no embedded clouds serve it."""
    clouds, plugins = embedded_plugins(), provider_plugins()
    assert [serving(clouds, plugins.get(n)).name for n in BUILT_IN] == ["mock-clouds"] * 3
    assert serving(clouds, plugins.get("example")) is None
    endpoints = {"time_scale": 0.5, "lambda": {"api_key": "k", "url": "http://127.0.0.1:1/api/v1"}}
    assert plugin_settings(plugins.get("lambda"), endpoints) == {
        "api_key": "k", "api_endpoint": "http://127.0.0.1:1/api/v1", "time_scale": 0.5, "request_interval": 0.5,
        "launch_interval": 6.0}
    assert plugin_settings(plugins.get("crusoe"), endpoints) == {}  # not among these endpoints


class _Raising:
    name = "odd"

    @property
    def shapes(self) -> tuple[ShapeEntry, ...]:
        raise RuntimeError("bug in a plugin")


def test_optional_attributes_load_defensively() -> None:
    """A plugin without an optional attribute, with one of the wrong type, or whose attribute raises, gets the
    default; a row of its shapes that is not its own ShapeEntry of a catalog GPU is left out."""
    bare = SimpleNamespace(name="bare")
    assert optional(bare, "create_concurrency", 4) == 4 and optional(bare, "embedded_settings", None) is None
    wrong = SimpleNamespace(name="wrong", create_concurrency=True, instance_id_pattern=3, shapes=["x"],
                            embedded_settings="not callable")
    assert optional(wrong, "create_concurrency", 4) == 4 and optional(wrong, "instance_id_pattern", "") == ""
    assert optional(wrong, "shapes", ()) == () and optional(wrong, "embedded_settings", None) is None
    assert optional(_Raising(), "shapes", ()) == ()
    mixed = SimpleNamespace(name="mixed", shapes=(
        ShapeEntry("mixed", "H100", "m.1x", 1), ShapeEntry("other", "H100", "o.1x", 1),
        ShapeEntry("mixed", "TPU-v9", "t.1x", 1), "not a shape"))
    assert plugin_shapes(mixed, ["H100"]) == [ShapeEntry("mixed", "H100", "m.1x", 1)]
    assert create_concurrency([]) == {}


def test_a_plugin_with_a_bad_id_pattern_checks_nothing() -> None:
    plugin = SimpleNamespace(name="odd", instance_id_pattern="([unclosed")
    assert validate.instance_id(plugin, "odd", "anything") == "anything"
