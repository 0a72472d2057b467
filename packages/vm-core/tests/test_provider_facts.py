"""Cloud-specific facts come from the provider plugins, read once into typed records (plugins.LoadedPlugin).

The core (everything in vm_core but providers/) names no built-in cloud and imports neither an SDK nor
mock_clouds: the instance-id patterns, catalog shapes, create concurrency, debug loggers and embedded settings of
crusoe, lambda and nebius are their plugins' attributes, read the same way as a third-party plugin's.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
import vm_core
from vm_core.catalog import GpuType, ShapeEntry, default_catalog, plugin_shapes
from vm_core.cli import validate
from vm_core.embedded import embedded_plugins, plugin_settings, serving
from vm_core.errors import UsageError
from vm_core.kit import setting, settings_of
from vm_core.plugins import (
    DEFAULT_CREATE_CONCURRENCY,
    LoadedPlugin,
    MalformedPlugin,
    create_concurrency,
    installed_providers,
    provider_plugins,
    provider_set,
)
from vm_core.provider import Setting

CORE = Path(vm_core.__file__).parent
BUILT_IN = ("crusoe", "lambda", "nebius")


@dataclass(frozen=True, kw_only=True)
class _Typed:
    token: str = setting(env="ODD_TOKEN", secret=True)
    scale: float = setting(default=1.0)


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


def test_the_records_are_the_plugins_facts_typed() -> None:
    """Every fact a built-in plugin declares is a typed field of its record; settings come from settings_type;
    the provider class is connect's return annotation; Lambda needs an SSH key per create (its provider says so)."""
    plugins = provider_plugins()
    for name in BUILT_IN:
        record = plugins.get(name)
        assert isinstance(record, LoadedPlugin) and record.name == name and record.source is not None
        assert record.settings_type is not None and record.settings == settings_of(record.settings_type)
        assert record.debug_loggers == (f"{name}_sdk",) and record.native_credentials is not None
        assert record.embedded_settings is not None and record.takes_ssh_keys
        assert record.provider_class is not None and record.provider_class.__name__.endswith("Provider")
        assert record.needs_ssh_key is (name == "lambda")
    example = plugins.get("example")
    assert example is not None and (example.settings_type, example.native_credentials) == (None, None)
    assert example.provider_class is not None and example.provider_class.__name__ == "ExampleProvider"
    assert [g.name for g in example.gpus] == ["RTX4090"] and not example.takes_ssh_keys


def test_the_process_reads_its_plugins_once() -> None:
    """Sessions, the catalog and the fleet engine's create concurrency read one registry: the same records."""
    first, second = provider_plugins().get("example"), provider_plugins().get("example")
    assert first is not None and first is second and first is installed_providers().get("example")
    assert provider_set({"example"}).get("example") is None and "example" not in provider_set({"example"}).names()
    assert set(first.shapes) <= set(default_catalog().shapes)
    hidden = provider_plugins({"VM_DISABLE_PROVIDERS": " example, lambda "})
    assert hidden.names() == ["crusoe", "nebius"] and hidden.get("lambda") is None
    assert hidden.registry is installed_providers() and set(hidden.load_all()) == {"crusoe", "nebius"}


def test_loading_every_record_and_the_catalog_imports_no_sdk() -> None:
    """Reading the plugins' facts (shapes and GPU types included) imports none of the clouds' SDKs or their
    transports: only `connect` does."""
    code = ("import sys\n"
            "from vm_core.plugins import provider_plugins\n"
            "from vm_core.catalog import default_catalog\n"
            "assert len(provider_plugins().load_all()) >= 4 and default_catalog().shapes\n"
            "heavy = ('crusoe_sdk', 'lambda_sdk', 'nebius_sdk', 'grpc', 'requests', 'msgspec', 'betterproto2')\n"
            "print(sorted(m for m in heavy if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def _plugin(**facts: object) -> SimpleNamespace:
    return SimpleNamespace(**{"name": "odd", "title": "Odd", "settings": (), "connect": lambda settings: None,
                              **facts})


@pytest.mark.parametrize(("facts", "says"), [
    ({"create_concurrency": True}, "create_concurrency must be a whole number of 1 or more, not True"),
    ({"create_concurrency": "8"}, "create_concurrency must be a whole number of 1 or more, not '8'"),
    ({"create_concurrency": 0}, "create_concurrency must be a whole number of 1 or more, not 0"),
    ({"instance_id_pattern": 3}, "instance_id_pattern must be a str, not int"),
    ({"instance_id_pattern": "([unclosed"}, "instance_id_pattern '\\(\\[unclosed' is not a regular expression"),
    ({"instance_id_example": b"x"}, "instance_id_example must be a str, not bytes"),
    ({"shapes": ["x"]}, r"shapes\[0\] is a str, not a ShapeEntry"),
    ({"debug_loggers": "odd_sdk"}, "debug_loggers must be a tuple of str, not str"),
    ({"debug_loggers": ("",)}, "debug_loggers must be a tuple of non-empty str"),
    ({"embedded_settings": "not callable"}, "embedded_settings must be callable, not str"),
    ({"native_credentials": {}}, "native_credentials must be callable, not dict"),
    ({"provider_class": "OddProvider"}, "provider_class must be a class, not 'OddProvider'"),
    ({"needs_ssh_key": "yes"}, "needs_ssh_key must be True or False, not 'yes'"),
    ({"settings": [("key",)]}, r"settings\[0\] is a tuple, not a Setting"),
    ({"settings": (Setting("a"), Setting("a"))}, "settings name a more than once"),
    ({"settings_type": dict}, "settings_type must be a dataclass of vm_core.kit.setting fields"),
    ({"settings_type": _Typed, "settings": (Setting("other"),)}, "settings differ from settings_of"),
    ({"title": ""}, "title must be a non-empty str, not ''"),
    ({"connect": "connect"}, "connect must be callable, not str"),
    ({"create_concurency": 8}, "'create_concurency', which is no fact vm knows: is it a misspelt "
                               "'create_concurrency'?"),
    ({"instance_id_patern": "x"}, "is it a misspelt 'instance_id_pattern'"),
    ({"shape": ()}, "is it a misspelt 'shapes'"),
    ({"debug_logger": ("x",)}, "is it a misspelt 'debug_loggers'"),
])
def test_a_wrong_fact_is_a_load_error_not_a_default(facts: dict[str, object], says: str) -> None:
    with pytest.raises(MalformedPlugin, match=says):
        LoadedPlugin.of(_plugin(**facts))


class _Raising:
    name, title, settings = "odd", "Odd", ()

    def connect(self, settings: object) -> None:
        raise AssertionError("not reached")

    @property
    def shapes(self) -> tuple[ShapeEntry, ...]:
        raise RuntimeError("bug in a plugin")


def test_a_fact_whose_reading_raises_is_a_load_error() -> None:
    with pytest.raises(MalformedPlugin, match="^shapes: reading it failed: RuntimeError: bug in a plugin$"):
        LoadedPlugin.of(_Raising())
    with pytest.raises(MalformedPlugin, match="no settings .* and no settings_type"):
        LoadedPlugin.of(SimpleNamespace(name="odd", title="Odd", connect=print))
    with pytest.raises(MalformedPlugin, match="^no title, connect$"):
        LoadedPlugin.of(SimpleNamespace(name="odd", settings=()))


def test_absent_facts_get_their_defaults_and_a_record_may_be_the_plugin() -> None:
    """Unset (or None) optional facts take the defaults; a LoadedPlugin made directly is its own record, its
    settings derived from its settings_type."""
    bare = LoadedPlugin.of(_plugin(shapes=None, unrelated_helper=42))
    assert (bare.create_concurrency, bare.instance_id_pattern, bare.shapes, bare.gpus) == (
        DEFAULT_CREATE_CONCURRENCY, "", (), ())
    assert (bare.embedded_settings, bare.native_credentials, bare.provider_class, bare.needs_ssh_key) == (
        None, None, None, False)
    direct = LoadedPlugin(name="typed", title="Typed", connect=lambda settings: None, settings_type=_Typed,
                          create_concurrency=3)
    assert LoadedPlugin.of(direct) is direct and [s.key for s in direct.settings] == ["token", "scale"]
    assert direct.secret_keys == {"token"} and direct.source is None
    with pytest.raises(MalformedPlugin, match="create_concurrency must be a whole number"):
        LoadedPlugin(name="typed", title="Typed", connect=print, settings_type=_Typed, create_concurrency=-1)


def test_the_catalog_keeps_the_shapes_of_gpu_types_it_has() -> None:
    mixed = LoadedPlugin.of(_plugin(name="mixed", gpus=(GpuType("TPU-v9", (), 16),), shapes=(
        ShapeEntry("mixed", "H100", "m.1x", 1), ShapeEntry("mixed", "TPU-v9", "t.1x", 1))))
    assert plugin_shapes(mixed, ["H100"]) == [ShapeEntry("mixed", "H100", "m.1x", 1)]
    assert create_concurrency([]) == {}
