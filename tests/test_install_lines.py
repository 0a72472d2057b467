"""Every `pip install` line of the documentation works from a checkout: the workspace packages are not on PyPI, so a
line names each of them by its path (never by its name, which an index would not find or, worse, would find as
someone else's package), together with every workspace package it depends on, extras included. The lines were run
in throwaway virtual environments when they were written; this keeps them honest without a network."""

from __future__ import annotations

import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
INLINE = re.compile(r"`([^`]+)`")


@dataclass(frozen=True)
class Package:
    name: str
    path: Path
    requires: frozenset[str]  # names of the distributions it depends on
    extras: dict[str, frozenset[str]]


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~; ]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def workspace() -> dict[str, Package]:
    """The workspace members by distribution name."""
    found = {}
    for pyproject in [*ROOT.glob("packages/*/pyproject.toml"), ROOT / "mock-clouds/pyproject.toml",
                      ROOT / "tests/example_provider/pyproject.toml"]:
        project = tomllib.loads(pyproject.read_text())["project"]
        extras = {k: frozenset(map(_name, v)) for k, v in project.get("optional-dependencies", {}).items()}
        found[project["name"]] = Package(project["name"], pyproject.parent.resolve(),
                                         frozenset(map(_name, project.get("dependencies", []))), extras)
    return found


def commands(text: str) -> list[str]:
    """The `pip install` commands of a Markdown text: in fenced blocks (a line, with its `\\` continuations) and
    in inline code (which may wrap)."""
    found = []
    for block in FENCE.findall(text):
        joined = block.replace("\\\n", " ")
        found += [line[line.index("pip install"):] for line in joined.splitlines() if "pip install" in line]
    for span in INLINE.findall(FENCE.sub("", text)):
        span = " ".join(span.split())
        if "pip install" in span:
            found.append(span[span.index("pip install"):])
    return found


def documented() -> list[tuple[str, str]]:
    docs = [p for p in ROOT.rglob("*.md") if not any(part.startswith(".") for part in p.relative_to(ROOT).parts)]
    return [(str(p.relative_to(ROOT)), c) for p in sorted(docs) for c in commands(p.read_text())]


def installed_by(command: str, packages: dict[str, Package]) -> tuple[set[str], set[str], list[str]]:
    """(workspace packages the command installs, workspace packages they need, names it asks an index for)."""
    by_path = {p.path: p for p in packages.values()}
    given, needed, named = set(), set(), []
    tokens = shlex.split(command, comments=True)[2:]
    for before, token in zip(["", *tokens], tokens, strict=False):
        if token.startswith("-"):
            continue
        if before != "-e" and "/" not in token and not token.startswith("."):  # -e takes a path
            named.append(_name(token))
            continue
        path, _, extras = token.partition("[")
        package = by_path.get((ROOT / path).resolve())
        assert package is not None, f"{token!r} is not a workspace package"
        given.add(package.name)
        needed |= package.requires
        for extra in filter(None, extras.rstrip("]").split(",")):
            needed |= package.extras[extra.strip()]
    return given, needed & set(packages), named


@pytest.mark.parametrize(("doc", "command"), documented())
def test_each_install_line_works_from_a_checkout(doc: str, command: str) -> None:
    packages = workspace()
    given, needed, named = installed_by(command, packages)
    assert not set(named) & set(packages), f"{doc}: {command!r} asks an index for a workspace package"
    assert needed <= given, f"{doc}: {command!r} misses {sorted(needed - given)}"


def test_the_install_lines_are_found() -> None:
    """The parser sees the lines the READMEs are known to have (the team store's, vm-core's, each SDK's)."""
    found = documented()
    assert {doc for doc, _ in found} >= {"README.md", "packages/vm-core/README.md", "docs/fleets.md",
                                         "packages/crusoe-sdk/README.md", "packages/lambda-sdk/README.md",
                                         "packages/nebius-sdk/README.md"}
    assert any("'./packages/vm-core[postgres]'" in c for _, c in found)
