"""The README's "Writing a provider" is true of the example package (tests/example_provider): each code block that
names a file of it is an excerpt of that file, and the block registering a LoadedPlugin makes a valid record."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import vm_core
from vm_core.catalog import GpuType, ShapeEntry
from vm_core.kit import setting
from vm_core.plugins import LoadedPlugin

PACKAGE = Path(vm_core.__file__).parents[2]  # packages/vm-core
REPO = PACKAGE.parents[1]
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def section() -> str:
    text = (PACKAGE / "README.md").read_text()
    return text[text.index("## Writing a provider"):text.index("## Start-up")]


def blocks(kind: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(section()) if lang == kind]


def code_lines(text: str) -> list[str]:
    """The lines of code, comments and blank lines left out, whitespace normalised."""
    lines = [" ".join(line.split("#", 1)[0].split()) for line in text.splitlines()]
    return [line for line in lines if line]


def is_excerpt(block: str, source: str) -> bool:
    """Whether the block's code lines occur in `source`'s code lines, in order."""
    remaining = iter(code_lines(source))
    return all(line in remaining for line in code_lines(block))


def test_each_block_naming_a_file_of_the_example_is_an_excerpt_of_it() -> None:
    named = [(body.splitlines()[0][2:].strip(), body) for kind in ("python", "toml") for body in blocks(kind)
             if body.startswith("# tests/example_provider/")]
    assert {path for path, _ in named} == {"tests/example_provider/pyproject.toml",
                                           "tests/example_provider/src/vm_example_provider/__init__.py"}
    for path, body in named:
        assert is_excerpt(body, (REPO / path).read_text()), f"the README's block of {path} is not in that file"
    gpu_block = next(body for path, body in named if path.endswith("__init__.py"))
    assert 'GpuType("RTX4090"' in gpu_block and '"RTX4090", "ex-rtx4090.1x"' in gpu_block  # its own GPU type


def test_the_excerpt_check_sees_a_changed_line() -> None:
    source = "a = 1\nb = 2  # two\n\nc = 3\n"
    assert is_excerpt("a = 1\nc = 3\n", source) and is_excerpt("b   = 2\n", source)
    assert not is_excerpt("c = 3\na = 1\n", source) and not is_excerpt("b = 20\n", source)


@dataclass(frozen=True, kw_only=True)
class ExampleSettings:
    path: str = setting(env="VM_EXAMPLE_PATH", help="the JSON file that is the cloud")
    token: str | None = setting(env="VM_EXAMPLE_TOKEN", secret=True, default=None)


def test_the_loaded_plugin_block_makes_a_record() -> None:
    [block] = [body for body in blocks("python") if "LoadedPlugin(" in body]
    gpus = (GpuType("RTX4090", ("RTX-4090",), 24),)
    names = {"ExampleSettings": ExampleSettings, "connect": lambda settings: settings, "GPUS": gpus,
             "SHAPES": (ShapeEntry("example", "RTX4090", "ex-rtx4090.1x", 1),)}
    exec(block, names)  # noqa: S102 - the README's own code, run as written
    plugin = names["plugin"]
    assert isinstance(plugin, LoadedPlugin) and (plugin.name, plugin.create_concurrency, plugin.gpus) == (
        "example", 2, gpus)
    assert [(s.key, s.env, s.secret, s.required) for s in plugin.settings] == [
        ("path", "VM_EXAMPLE_PATH", False, True), ("token", "VM_EXAMPLE_TOKEN", True, False)]
