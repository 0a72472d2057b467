"""GPU types in the catalog: the shared ones (catalog.toml), those the built-in clouds alone sell (the [[gpu]] tables
of providers/<cloud>_shapes.toml) and those a provider plugin declares in its `gpus`, checked once when loaded."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from vm_core.catalog import (
    GpuType,
    MalformedDeclaration,
    ShapeEntry,
    check_gpus,
    default_catalog,
    merged_gpus,
    read_gpus,
    shared_gpus,
)
from vm_core.cli import validate
from vm_core.errors import UsageError
from vm_core.plugins import LoadedPlugin, MalformedPlugin, ProviderSet, discover_providers

RTX4090 = GpuType("RTX4090", ("RTX-4090",), 24)


def test_the_clouds_current_gpus_are_in_the_catalog_from_their_plugins() -> None:
    """Crusoe MI300X/GB200 (research crusoe.md §3), Lambda GH200 and 1x/2x B200 (lambda.md §9), Nebius B300 and
    gpu-b200-sxm-a (nebius.md §6); each GPU only one cloud sells is declared by that cloud's plugin, not by
    catalog.toml."""
    catalog = default_catalog()
    shared = {g.name for g in shared_gpus()}
    assert {"MI300X", "GB200", "GH200", "B300", "RTX4090"}.isdisjoint(shared)
    assert catalog.gpu("mi300x-192gb") == GpuType("MI300X", ("MI300X-192GB",), 192, "AMD")
    assert [(s.shape, s.gpu_count) for s in catalog.shapes_for("crusoe", "GB200")] == [("gb200-186gb-nvl-ib.4x", 4)]
    assert [s.shape for s in catalog.shapes_for("lambda", "GH200")] == ["gpu_1x_gh200"]
    assert catalog.sizes("lambda", "B200") == [1, 2, 8]
    assert [s.shape for s in catalog.shapes_for("nebius", "B300")] == [
        "gpu-b300-sxm/1gpu-24vcpu-346gb", "gpu-b300-sxm/8gpu-192vcpu-2768gb"]
    assert {s.shape for s in catalog.shapes_for("nebius", "B200", 8)} == {
        "gpu-b200-sxm/8gpu-160vcpu-1792gb", "gpu-b200-sxm-a/8gpu-160vcpu-1792gb"}


@pytest.mark.parametrize(("text", "gpu", "count"), [
    ("gh200", "GH200", 1), ("GH200-96GB:1", "GH200", 1), ("b300:8", "B300", 8), ("B300-SXM", "B300", 1),
    ("Mi300X:8", "MI300X", 8), ("gb200-nvl:4", "GB200", 4), ("rtx-4090", "RTX4090", 1),
])
def test_gpu_parsing_takes_the_new_types_names_and_aliases_in_any_case(text: str, gpu: str, count: int) -> None:
    request = default_catalog().parse(text)
    assert (request.gpu, request.gpu_count) == (gpu, count)


def test_a_provider_is_refused_a_gpu_type_only_another_sells() -> None:
    with pytest.raises(UsageError, match="crusoe does not sell RTX4090; providers that do: example"):
        validate.gpu(default_catalog(), "crusoe", "RTX4090")
    with pytest.raises(UsageError, match="lambda sells GH200 only as GH200:1"):
        validate.gpu(default_catalog(), "lambda", "GH200:8")


@pytest.mark.parametrize(("declared", "says"), [
    ([RTX4090, "RTX 5090"], r"gpus\[1\] is a str, not a GpuType"),
    ("RTX4090", "gpus must be a tuple of GpuType, not str"),
    ((GpuType("RTX 4090", (), 24),), r"gpus\[0\] \('RTX 4090'\): the name and each alias .*no spaces, no ':'"),
    ((GpuType("RTX4090:1", (), 24),), "no spaces, no ':'"),
    ((GpuType("RTX4090", ["RTX-4090"], 24),), "each alias \\(a tuple\\)"),  # type: ignore[arg-type]
    ((GpuType("RTX4090", (), 0),), r"RTX4090\): memory_gb must be a whole number of GB above 0, not 0"),
    ((GpuType("RTX4090", (), "24"),), "memory_gb must be a whole number"),  # type: ignore[arg-type]
    ((GpuType("RTX4090", (), True),), "memory_gb must be a whole number"),
    ((GpuType("RTX4090", (), 24, " "),), "vendor must be a name such as NVIDIA or AMD"),
    ((RTX4090, GpuType("RTX-4090", (), 24)), r"gpus\[1\] \(RTX-4090\): 'RTX-4090' already names .* RTX4090"),
    ((GpuType("H100-NEW", ("h100-sxm",), 80),), "'h100-sxm' already names the catalog's GPU type H100"),
])
def test_a_malformed_declaration_says_which_entry_and_why(declared: object, says: str) -> None:
    with pytest.raises(MalformedDeclaration, match=says):
        check_gpus(declared, shared_gpus())


class _RaisingGpus:
    name, title, settings = "odd", "Odd", ()

    def connect(self, settings: object) -> None:
        raise AssertionError("not reached")

    @property
    def gpus(self) -> tuple[GpuType, ...]:
        raise RuntimeError("bug in a plugin")


def _plugin(**facts: object) -> SimpleNamespace:
    return SimpleNamespace(title="Odd", settings=(), connect=lambda settings: None, **{"name": "odd", **facts})


def test_a_plugins_gpu_declaration_is_checked_when_its_record_is_made() -> None:
    """A good or no declaration makes a record; a malformed one, or one that fails to be read, says why."""
    assert LoadedPlugin.of(_plugin(gpus=[RTX4090])).gpus == (RTX4090,)
    assert LoadedPlugin.of(_plugin()).gpus == ()
    with pytest.raises(MalformedPlugin, match=r"^malformed GPU types: gpus\[0\] \('RTX 4090'\): the name"):
        LoadedPlugin.of(_plugin(gpus=(GpuType("RTX 4090", (), 24),)))
    with pytest.raises(MalformedPlugin, match="^malformed GPU types: reading gpus failed: RuntimeError: bug in a "
                                              "plugin$"):
        LoadedPlugin.of(_RaisingGpus())


def test_a_plugins_shapes_are_of_its_own_and_of_gpu_types_it_sells() -> None:
    """A shape row must be the plugin's own ShapeEntry of a catalog.toml GPU type or of one in its gpus."""
    own = ShapeEntry("odd", "RTX4090", "o.1x", 1)
    assert LoadedPlugin.of(_plugin(gpus=(RTX4090,), shapes=[own])).shapes == (own,)
    for shapes, says in [
        ((own,), r"shapes\[0\] \(o.1x\): GPU type 'RTX4090' is neither in vm's catalog nor in its gpus"),
        ((ShapeEntry("other", "H100", "x.1x", 1),), r"shapes\[0\] \(x.1x\) is a shape of 'other', not of 'odd'"),
        (("not a shape",), r"shapes\[0\] is a str, not a ShapeEntry"),
        ((ShapeEntry("odd", "H100", "h.0x", 0),), r"shapes\[0\] \(h.0x\): gpu_count must be a whole number"),
        (ShapeEntry("odd", "H100", "h.1x", 1), "shapes must be a tuple of ShapeEntry, not ShapeEntry"),
    ]:
        with pytest.raises(MalformedPlugin, match=says):
            LoadedPlugin.of(_plugin(shapes=shapes))


def test_read_gpus_needs_name_and_memory(tmp_path: Path) -> None:
    good = tmp_path / "good.toml"
    good.write_text('[[gpu]]\nname = "RTX4090"\naliases = ["RTX-4090"]\nmemory_gb = 24\n')
    assert read_gpus(good) == (RTX4090,)
    bad = tmp_path / "bad.toml"
    bad.write_text('[[gpu]]\nname = "RTX4090"\nmemory = 24\n')
    with pytest.raises(MalformedDeclaration, match=r"bad.toml: \[\[gpu\]\] #1 needs name and memory_gb .*unknown: "
                                                   "memory"):
        read_gpus(bad)
    assert read_gpus(_empty(tmp_path)) == ()  # a file of shapes only declares no GPU type


def _empty(tmp_path: Path) -> Path:
    path = tmp_path / "shapes_only.toml"
    path.write_text('[[shape]]\ngpu = "H100"\nshape = "x"\ngpu_count = 1\n')
    return path


def test_two_plugins_may_declare_a_gpu_alike_but_not_otherwise() -> None:
    other = GpuType("RTX4090", (), 48)  # the same name, another GPU
    merged = merged_gpus(shared_gpus(), {"a": (RTX4090,), "b": (RTX4090,), "c": (other,)})
    assert [g for g in merged if g.name == "RTX4090"] == [RTX4090]
    assert len(merged) == len(shared_gpus()) + 1


def _site(site: Path, module: str) -> Path:
    """An installed distribution (a directory for sys.path) whose `vm_core.providers` entry point `badgpus` is
    `module`'s source."""
    info = site / "vm_badgpus-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vm-badgpus\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[vm_core.providers]\nbadgpus = vm_badgpus:plugin\n")
    (site / "vm_badgpus.py").write_text(module)
    return site


BAD_PLUGIN = '''
from vm_core.catalog import GpuType, ShapeEntry

class Plugin:
    name, title, settings = "badgpus", "Bad GPUs", ()
    gpus = (GpuType("RTX 5090", (), 32),)
    shapes = (ShapeEntry("badgpus", "RTX 5090", "b.1x", 1),)

    def connect(self, settings):
        raise RuntimeError("not reached")

plugin = Plugin()
'''


def test_a_plugin_with_a_malformed_declaration_is_broken_and_adds_nothing(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader checks `gpus` once and reports the plugin as broken, with the reason; the catalog built from the
    same plugins holds nothing of it and the other plugins' GPU types."""
    monkeypatch.syspath_prepend(str(_site(tmp_path / "site", BAD_PLUGIN)))
    monkeypatch.delitem(sys.modules, "vm_badgpus", raising=False)
    plugins = ProviderSet(discover_providers())  # a new registry: the process's was found before this site existed
    assert "badgpus" in plugins.names() and plugins.get("badgpus") is None
    [problem] = [p for p in plugins.problems if p.name == "badgpus"]
    assert problem.reason == ("vm_badgpus:plugin declares malformed GPU types: gpus[0] ('RTX 5090'): the name and "
                              "each alias (a tuple) must be 1 to 40 letters, digits, '.', '+', '_' or '-' (no spaces,"
                              " no ':'), e.g. A100-80GB")
    assert plugins.get("example") is not None
