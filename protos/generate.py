#!/usr/bin/env python3
"""Generate betterproto2 Python code from the .proto files in this folder.

Usage (from the repo root, with the venv that has grpcio-tools, betterproto2-compiler
and ruff installed; the venv does not need to be activated):

    hatch run protos                                    # regenerate every target
    hatch run protos --check                            # exit 1 and list stale files if a
                                                        # committed copy is out of date
    hatch run protos --target packages/nebius-sdk/src/nebius_sdk/_pb

What it does:
  1. Collects every *.proto under protos/ (except google/protobuf/**, which comes from
     grpc_tools' bundled includes) in sorted order.
  2. Runs, once, into a fresh temporary directory:
         python -m grpc_tools.protoc -I protos -I <grpc_tools>/_proto \
             --python_betterproto2_out=<tmp> \
             --python_betterproto2_opt=client_generation=sync <protos...>
     The plugin (protoc-gen-python_betterproto2) and `ruff` (which the plugin runs on its
     output) are looked up on PATH, so the directory of sys.executable is prepended to PATH.
  3. Moves a few module-level imports into the methods that need them (DEFERRED_IMPORTS).
  4. Copies the result into each target package and swaps it in place of the old directory
     (rename old away, rename new in, delete old; rolled back if the second rename fails).
     A target directory is entirely generated: anything else in it is removed.

Determinism: the output depends only on the .proto files and the versions of
betterproto2-compiler and ruff. Two things would otherwise leak the environment into it,
so the plugin runs with its working directory set to an empty temp directory:
  - the plugin only emits an `__init__.py` for a package directory if that file does not
    already exist relative to its *current working directory*;
  - ruff formats stdin using the configuration found from the working directory upwards;
    an empty ruff.toml in the temp directory pins ruff's defaults.

The generated code is identical for every target (it only uses relative imports). Each copy
has its own message_pool, so google.protobuf.Any.pack/unpack only work with messages of the
same copy.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PROTO_ROOT = Path(__file__).resolve().parent
REPO_ROOT = PROTO_ROOT.parent

# Output packages (relative to the repo root). Each receives an identical copy.
TARGETS = [
    "mock-clouds/src/mock_clouds/nebius/_pb",  # the mock server's copy
    "packages/nebius-sdk/src/nebius_sdk/_pb",  # the SDK's copy
]

PLUGIN_OPTS = "client_generation=sync"

# Never compared or copied.
IGNORED_NAMES = {"__pycache__"}

# Imports the plugin puts at module level that only one rarely used method needs: (file, import line, the line
# that uses it). The import moves into that method, so importing the generated package stays cheap (dateutil
# alone costs about 5 ms, on every `vm` command that talks to Nebius). `_defer_imports` fails loudly if a
# newer plugin changes either line.
DEFERRED_IMPORTS = [
    (
        "google/protobuf/__init__.py",
        "import dateutil.parser\n",
        "            dt = dateutil.parser.isoparse(value)\n",
    ),
]


def _grpc_tools_include() -> Path:
    import grpc_tools  # imported lazily so `--help` works without it

    return Path(grpc_tools.__file__).resolve().parent / "_proto"


def _proto_files() -> list[str]:
    files = []
    for path in PROTO_ROOT.rglob("*.proto"):
        rel = path.relative_to(PROTO_ROOT).as_posix()
        if rel.startswith("google/protobuf/"):
            continue
        files.append(rel)
    if not files:
        sys.exit(f"error: no .proto files found under {PROTO_ROOT}")
    return sorted(files)


def _generate(out_dir: Path, work_dir: Path) -> None:
    """Run protoc + the betterproto2 plugin into out_dir (must exist and be empty)."""
    bin_dir = os.path.dirname(sys.executable)
    env = dict(os.environ)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    for tool in ("protoc-gen-python_betterproto2", "ruff"):
        if shutil.which(tool, path=env["PATH"]) is None:
            sys.exit(
                f"error: `{tool}` not found on PATH (looked in {bin_dir} first); "
                "run this script with the venv that has betterproto2-compiler and ruff"
            )

    # An empty ruff.toml pins ruff to its defaults regardless of configs further up.
    (work_dir / "ruff.toml").write_text("")

    cmd = [
        sys.executable,
        "-m",
        "grpc_tools.protoc",
        f"-I{PROTO_ROOT}",
        f"-I{_grpc_tools_include()}",
        f"--python_betterproto2_out={out_dir}",
        f"--python_betterproto2_opt={PLUGIN_OPTS}",
        *[str(PROTO_ROOT / rel) for rel in _proto_files()],
    ]
    proc = subprocess.run(cmd, cwd=work_dir, env=env, capture_output=True, text=True)
    # The plugin prints "Writing <file>" for every file; only show anything else.
    noise = [ln for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith("Writing ")]
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        sys.exit(f"error: protoc failed with exit code {proc.returncode}")
    if noise:
        sys.stderr.write("\n".join(noise) + "\n")


def _defer_imports(out_dir: Path) -> None:
    """Move each DEFERRED_IMPORTS import from module level into the one method that uses it."""
    for rel, import_line, use_line in DEFERRED_IMPORTS:
        path = out_dir / rel
        text = path.read_text()
        if text.count(import_line) != 1 or text.count(use_line) != 1:
            sys.exit(f"error: {rel}: expected one {import_line.strip()!r} and one {use_line.strip()!r}; "
                     "update DEFERRED_IMPORTS in protos/generate.py for this plugin version")
        indent = use_line[: len(use_line) - len(use_line.lstrip())]
        text = text.replace(import_line, "").replace(use_line, indent + import_line + use_line)
        path.write_text(text)


def _tree(root: Path) -> set[str]:
    """Relative posix paths of all files under root, skipping __pycache__."""
    files = set()
    if not root.is_dir():
        return files
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_NAMES)
        for name in filenames:
            if name.endswith(".pyc"):
                continue
            files.add((Path(dirpath) / name).relative_to(root).as_posix())
    return files


def _diff(generated: Path, target: Path) -> list[str]:
    """Return human-readable differences between a fresh tree and a committed one."""
    new, old = _tree(generated), _tree(target)
    problems = []
    for rel in sorted(new | old):
        if rel not in old:
            problems.append(f"missing: {rel}")
        elif rel not in new:
            problems.append(f"extra:   {rel}")
        elif not filecmp.cmp(generated / rel, target / rel, shallow=False):
            problems.append(f"stale:   {rel}")
    return problems


def _install(generated: Path, target: Path) -> None:
    """Replace target with a copy of generated, swapping directories by rename."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.new-", dir=target.parent))
    backup = None
    try:
        shutil.copytree(generated, staging, ignore=shutil.ignore_patterns(*IGNORED_NAMES), dirs_exist_ok=True)
        if target.exists():
            backup = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            backup.rmdir()
            os.rename(target, backup)
        try:
            os.rename(staging, target)
        except OSError:
            if backup is not None:
                os.rename(backup, target)  # roll back
                backup = None
            raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
        if backup is not None and backup.exists():
            shutil.rmtree(backup, ignore_errors=True)


def _resolve_target(raw: str) -> Path:
    path = Path(raw)
    return path if path.is_absolute() else REPO_ROOT / path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Generate betterproto2 code from protos/ into the _pb target packages."
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="generate to a temp dir and compare byte-for-byte with the targets; "
        "exit 1 and list stale files if they differ",
    )
    parser.add_argument(
        "--target",
        metavar="PATH",
        help="only this output package (relative to the repo root or absolute); "
        f"default: all of {', '.join(TARGETS)}",
    )
    args = parser.parse_args(argv)

    targets = [_resolve_target(args.target)] if args.target else [REPO_ROOT / t for t in TARGETS]

    with tempfile.TemporaryDirectory(prefix="protos-generate-") as tmp:
        out_dir = Path(tmp) / "out"
        work_dir = Path(tmp) / "work"
        out_dir.mkdir()
        work_dir.mkdir()
        _generate(out_dir, work_dir)
        _defer_imports(out_dir)

        if args.check:
            stale = False
            for target in targets:
                problems = _diff(out_dir, target)
                shown = os.path.relpath(target, REPO_ROOT)
                if problems:
                    stale = True
                    print(f"{shown}: out of date")
                    for problem in problems:
                        print(f"  {problem}")
                else:
                    print(f"{shown}: up to date")
            if stale:
                print("run: python protos/generate.py", file=sys.stderr)
                return 1
            return 0

        for target in targets:
            _install(out_dir, target)
            print(f"generated {os.path.relpath(target, REPO_ROOT)} ({len(_tree(target))} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
