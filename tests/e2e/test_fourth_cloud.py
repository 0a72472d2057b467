"""A fourth cloud, added without touching vm-core: the example provider package (tests/example_provider).

Everything vm knows of it comes from the package's `vm_core.providers` entry point: its settings, the GPU type it
sells that vm-core does not know (RTX4090), its shapes in the GPU catalog, the pattern of its instance ids, how
many creates a fleet sends it at once. No file of vm-core names it (test_no_core_file_knows_the_fourth_cloud), yet
the real `vm` offers, creates, lists, gets and destroys its VMs, refuses a size and an id it does not have before
any call, and runs a fleet on it, alone and together with a built-in cloud; the README's "Try it" runs as written.
A plugin whose GPU declaration is malformed, or that misspells a fact, is reported, with the reason and no
traceback, and the others keep working.
"""

from __future__ import annotations

import json
import re
import shlex
from importlib import metadata, resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import VmHome


@pytest.fixture
def home(fresh_home: VmHome) -> VmHome:
    """Profile `p`: only the example cloud (no mock clouds); profile `mixed`: the embedded clouds and it."""
    fresh_home.path.mkdir(parents=True)
    fresh_home.config(f"""
default_profile = "p"
[profiles.p.example]
path = "{cloud(fresh_home)}"
seconds = 0.05
[profiles.mixed]
embedded = true
[profiles.mixed.example]
path = "{cloud(fresh_home)}"
seconds = 0.05
""")
    return fresh_home


def cloud(home: VmHome) -> Path:
    return home.path / "example-cloud.json"


def live_in_cloud(home: VmHome) -> list[dict[str, Any]]:
    """The example cloud's own record of its VMs (the ground truth), those not terminated."""
    if not cloud(home).exists():
        return []
    return [v for v in json.loads(cloud(home).read_text())["vms"].values() if v["state"] != "terminated"]


def test_no_core_file_knows_the_fourth_cloud() -> None:
    """The example cloud is an installed distribution of its own; vm-core's files never name it."""
    entry = metadata.entry_points(group="vm_core.providers")["example"]
    assert entry.dist is not None and entry.dist.name == "vm-example-provider"
    assert entry.value == "vm_example_provider:plugin"
    core = resources.files("vm_core")
    texts = [p.read_text() for p in Path(str(core)).rglob("*") if p.suffix in (".py", ".toml")]
    assert texts and not [t for t in texts if "vm_example_provider" in t or "ex-h100" in t or '"example"' in t]
    assert not [t for t in texts if "RTX4090" in t.upper().replace(" ", "")]  # nor the GPU type only it sells


def test_catalog_shapes_and_id_pattern_come_from_the_plugin(home: VmHome) -> None:
    refused = home("create", "-p", "example", "--gpu", "H100:2", "--name", "too-big")
    assert refused.code == 2 and "example sells H100 only as H100:1" in refused.err  # the plugin's shapes
    fleet = home("fleet", "create", "--gpu", "H100:2", "--count", "2", "--name", "too-big")
    assert fleet.code == 2 and "example sells H100 only as H100:1" in fleet.err
    malformed = home("get", "i-123", "-p", "example")
    assert malformed.code == 2
    assert "malformed example instance id 'i-123'; example instance ids look like ex-0123abcd" in malformed.err
    assert not cloud(home).exists()  # both refused before any call to the cloud
    offers = home.ok("offers", "--gpu", "A10", "-o", "json").json()
    assert [(o["provider"], o["shape"], o["price_per_hour"]) for o in offers] == [("example", "ex-a10.1x", 0.45)]


def test_single_vm_lifecycle(home: VmHome) -> None:
    made = home.ok("create", "-p", "example", "--gpu", "A10", "--name", "fourth", "-o", "json").json()
    assert (made["provider"], made["gpu"], made["state"]) == ("example", "A10", "running")
    assert [v["shape"] for v in live_in_cloud(home)] == ["ex-a10.1x"]
    assert [row[:5] for row in home.ok("list").rows()[1:]] == [["example", made["id"], "fourth", "running", "A10x1"]]
    assert home.ok("get", made["id"], "-p", "example", "-o", "json").json()["name"] == "fourth"
    assert home.ok("destroy", made["id"], "-p", "example", "-o", "json").json()["state"] == "terminated"
    assert home.ok("list", "-o", "json").json() == [] and live_in_cloud(home) == []
    assert not home.mock_dir.exists()  # profile p needs no mock clouds


def test_fleet_on_the_fourth_cloud(home: VmHome) -> None:
    made = home.ok("fleet", "create", "--gpu", "H100", "--count", "3", "--name", "four", "-o", "json").json()
    assert made["state"] == "active" and [m["provider"] for m in made["members"]] == ["example"] * 3
    assert sorted(v["name"] for v in live_in_cloud(home)) == [f"four--{made['id']}-{i}" for i in range(3)]
    status = home.ok("fleet", "status", "four", "-o", "json").json()
    assert sorted(m["id"] for m in status["members"]) == sorted(v["id"] for v in live_in_cloud(home))
    gone = home.ok("fleet", "destroy", "four", "-o", "json").json()
    assert gone["destroyed"] == 3 and gone["failed"] == 0 and live_in_cloud(home) == []


def test_fleet_across_the_fourth_cloud_and_a_built_in_one(home: VmHome) -> None:
    mixed = ("--profile", "mixed")
    offers = home.ok("offers", "--gpu", "H100:1", *mixed, "-o", "json").json()
    assert {"example", "lambda", "nebius"} <= {o["provider"] for o in offers}
    made = home.ok("fleet", "create", "--gpu", "H100", "--count", "4", "--name", "mix", "--providers",
                   "example,lambda", *mixed, "-o", "json").json()
    providers = [m["provider"] for m in made["members"]]
    assert made["state"] == "active" and set(providers) == {"example", "lambda"}
    assert providers.count("example") == len(live_in_cloud(home))
    assert providers.count("lambda") == len([i for i in home.inventory() if i["name"].startswith("mix--")
                                             and i["state"] != "terminated"])
    gone = home.ok("fleet", "destroy", "mix", *mixed, "-o", "json").json()
    assert gone["destroyed"] == 4 and live_in_cloud(home) == []


def test_a_gpu_type_only_the_plugin_declares(home: VmHome) -> None:
    """The example's `gpus` adds RTX4090 (alias RTX-4090, any case) to the catalog: offers, a create, a fleet
    plan; a built-in cloud is refused it before any call, naming the provider that sells it."""
    offers = home.ok("offers", "--gpu", "rtx-4090", "-o", "json").json()
    assert [(o["provider"], o["gpu"], o["shape"], o["price_per_hour"]) for o in offers] == [
        ("example", "RTX4090", "ex-rtx4090.1x", 0.35)]
    made = home.ok("create", "-p", "example", "--gpu", "RTX4090", "--name", "ada", "-o", "json").json()
    assert (made["gpu"], made["state"]) == ("RTX4090", "running")
    assert [v["shape"] for v in live_in_cloud(home)] == ["ex-rtx4090.1x"]
    assert [row[4] for row in home.ok("list").rows()[1:]] == ["RTX4090x1"]
    plan = home.ok("fleet", "create", "--gpu", "Rtx4090", "--count", "2", "--name", "adas", "--dry-run",
                   "-o", "json").json()
    assert [(p["provider"], p["shape"]) for p in plan["placements"]] == [("example", "ex-rtx4090.1x")] * 2
    refused = home("create", "-p", "lambda", "--gpu", "RTX4090", "--name", "no", "--profile", "mixed")
    assert refused.code == 2 and "lambda does not sell RTX4090; providers that do: example" in refused.err
    home.ok("destroy", made["id"], "-p", "example")
    assert live_in_cloud(home) == []


def malformed_plugin_site(site: Path) -> Path:
    """An installed distribution (on PYTHONPATH) whose `vm_core.providers` entry point `badgpus` declares a GPU
    type named with a space."""
    info = site / "vm_badgpus-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vm-badgpus\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[vm_core.providers]\nbadgpus = vm_badgpus:plugin\n")
    (site / "vm_badgpus.py").write_text(
        "from vm_core.catalog import GpuType\n"
        "class Plugin:\n"
        "    name, title, settings = 'badgpus', 'Bad GPUs', ()\n"
        "    gpus = (GpuType('RTX 5090', (), 32),)\n"
        "    def connect(self, settings):\n"
        "        raise RuntimeError('not reached')\n"
        "plugin = Plugin()\n")
    return site


def test_a_malformed_gpu_declaration_is_reported_without_a_traceback(home: VmHome, tmp_path: Path) -> None:
    env = {"PYTHONPATH": str(malformed_plugin_site(tmp_path / "site"))}
    reason = ("vm_badgpus:plugin declares malformed GPU types: gpus[0] ('RTX 5090'): the name and each alias (a "
              "tuple) must be 1 to 40 letters, digits, '.', '+', '_' or '-' (no spaces, no ':'), e.g. A100-80GB")
    table = home("providers", env=env)
    assert table.code == 0 and f"vm: warning: provider badgpus: broken: {reason}" in table.err
    assert next(r for r in table.rows() if r[0] == "badgpus")[:3] == ["badgpus", "-", "broken"]
    asked = home("offers", "--gpu", "RTX4090", "-p", "badgpus", env=env)
    assert asked.code == 2 and f"provider 'badgpus' is installed but broken: {reason}" in asked.err
    unknown = home("offers", "--gpu", "RTX 5090", env=env)
    assert unknown.code == 2 and "unknown GPU type 'RTX 5090'" in unknown.err
    assert "Traceback" not in table.err + asked.err + unknown.err
    offers = home.ok("offers", "--gpu", "rtx4090", "-o", "json", env=env).json()  # the other plugins still work
    assert [o["shape"] for o in offers] == ["ex-rtx4090.1x"]


def try_it() -> tuple[str, list[list[str]]]:
    """The config and the commands of "6. Try it" in vm-core's README ("Writing a provider")."""
    readme = (Path(str(resources.files("vm_core"))).parents[1] / "README.md").read_text()
    part = readme[readme.index("**6. Try it**"):readme.index("**7. Tests**")]
    config, commands = re.findall(r"^```\w*\n(.*?)^```", part, re.S | re.M)
    return config, [shlex.split(line) for line in commands.splitlines() if line.strip()]


def test_the_readmes_try_it_runs_as_written(fresh_home: VmHome) -> None:
    """Its config (the cloud's file moved into the test's home) and its commands: the RTX4090 offered, a VM and a
    fleet of three made of it, all listed."""
    config, commands = try_it()
    assert '"/tmp/example-cloud.json"' in config and [c[:2] for c in commands] == [
        ["vm", "offers"], ["vm", "create"], ["vm", "fleet"], ["vm", "list"]]
    fresh_home.path.mkdir(parents=True)
    fresh_home.config(config.replace("/tmp/example-cloud.json", str(cloud(fresh_home))))
    offered, created, fleet, listed = (fresh_home.ok(*command[1:]) for command in commands)
    assert [row[:3] for row in offered.rows()[1:]] == [["example", "local", "ex-rtx4090.1x"]]
    assert created.rows()[1][2:4] == ["demo", "running"]
    assert "active" in fleet.out and len(live_in_cloud(fresh_home)) == 4
    assert sorted(row[2] for row in listed.rows()[1:]) == ["demo", *sorted(f"four--{n}" for n in _members(fresh_home))]
    assert {v["shape"] for v in live_in_cloud(fresh_home)} == {"ex-rtx4090.1x"}


def _members(home: VmHome) -> list[str]:
    """The suffixes (<fleet id>-<i>) of the fleet members' names in the example cloud."""
    return [v["name"].split("--", 1)[1] for v in live_in_cloud(home) if v["name"].startswith("four--")]


def misspelt_plugin_site(site: Path) -> Path:
    """An installed distribution whose `vm_core.providers` entry point `typo` spells create_concurrency wrong."""
    info = site / "vm_typo-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vm-typo\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[vm_core.providers]\ntypo = vm_typo:plugin\n")
    (site / "vm_typo.py").write_text(
        "class Plugin:\n"
        "    name, title, settings = 'typo', 'Typo Cloud', ()\n"
        "    create_concurency = 8\n"
        "    def connect(self, settings):\n"
        "        raise RuntimeError('not reached')\n"
        "plugin = Plugin()\n")
    return site


def test_a_misspelt_fact_is_reported_without_a_traceback(home: VmHome, tmp_path: Path) -> None:
    env = {"PYTHONPATH": str(misspelt_plugin_site(tmp_path / "site"))}
    reason = "vm_typo:plugin declares 'create_concurency', which is no fact vm knows: is it a misspelt " \
             "'create_concurrency'?"
    table = home("providers", env=env)
    assert table.code == 0 and f"vm: warning: provider typo: broken: {reason}" in table.err
    asked = home("list", "-p", "typo", env=env)
    assert asked.code == 2 and f"provider 'typo' is installed but broken: {reason}" in asked.err
    assert "Traceback" not in table.err + asked.err
    assert home.ok("offers", "--gpu", "RTX4090", "-o", "json", env=env).json()[0]["provider"] == "example"
