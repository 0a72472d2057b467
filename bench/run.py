"""The benchmark runner: `hatch run bench:all` (full, writes bench/results.md) or `hatch run bench:smoke`.

    python bench/run.py [--smoke] [--only NAME ...] [--out FILE] [--profile DIR] [--keep]

Prints one line per figure (`name: value unit (target/bound: ...)`) on stdout and progress on stderr.
A full run writes the markdown table to bench/results.md (or --out); a smoke run (tiny sizes, one repetition)
writes nothing unless --out is given. See bench/README.md.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from common import BENCH_DIR, Context, Figure, fmt, machine

BENCHMARKS = ("startup", "fleet", "listing", "mockserver", "teamstore", "cost")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    only = [name for item in args.only for name in item.split(",")] or list(BENCHMARKS)
    unknown = sorted(set(only) - set(BENCHMARKS))
    if unknown:
        print(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}", file=sys.stderr)
        return 2
    out = args.out or (None if args.smoke else BENCH_DIR / "results.md")
    workdir = Path(tempfile.mkdtemp(prefix="vm-bench-"))
    ctx = Context(smoke=args.smoke, workdir=workdir, profile_dir=args.profile)
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    results: dict[str, list[Figure]] = {}
    ctx.extra["load_start"] = os.getloadavg()
    started = time.monotonic()
    try:
        for name in [b for b in BENCHMARKS if b in only]:
            results[name] = _run_one(ctx, name)
    finally:
        if args.keep:
            ctx.log(f"scratch directory kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    elapsed = time.monotonic() - started
    ctx.log(f"bench finished in {elapsed:.0f} s")
    if out:
        Path(out).write_text(render(results, ctx, elapsed, only))
        ctx.log(f"results written to {out}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes and one repetition (keeps the bench working)")
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help=f"run only these benchmarks (repeatable or comma-separated): {', '.join(BENCHMARKS)}")
    parser.add_argument("--out", type=Path, help="results file (default bench/results.md; none in smoke mode)")
    parser.add_argument("--profile", type=Path, metavar="DIR",
                        help="also write py-spy profiles of the slow paths to DIR (extra runs, not counted)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory (mock worlds, stores)")
    return parser


def _run_one(ctx: Context, name: str) -> list[Figure]:
    ctx.log(f"== {name}")
    started = time.monotonic()
    figures = importlib.import_module(name).run(ctx)
    for figure in figures:
        print(figure.line(), flush=True)
    ctx.log(f"== {name}: {time.monotonic() - started:.0f} s")
    return figures


def render(results: dict[str, list[Figure]], ctx: Context, elapsed: float, only: list[str]) -> str:
    """results.md: the machine, then one table row per figure, then each benchmark's notes."""
    lines = ["# Benchmark results", "",
             "Written by `hatch run bench:all` (bench/run.py); see bench/README.md for what each figure measures.",
             "Timings are medians of the runs given under *how*; ratios compare figures measured in the same run.",
             "Why the missed targets are missed (profiles, causes, suggested fixes): bench/findings.md.",
             "", "| machine | |", "|---|---|"]
    lines += [f"| {key} | {value} |" for key, value in machine().items()]
    partial = "" if set(only) == set(BENCHMARKS) else f" (only {', '.join(only)})"
    load = "; ".join(f"{when} {' '.join(f'{x:.2f}' for x in avg)}" for when, avg in
                     (("start", ctx.extra.get("load_start", (0, 0, 0))), ("end", os.getloadavg())))
    lines += [f"| load average (1/5/15 min) | {load} (other work on the machine inflates timings) |"]
    lines += [f"| bench wall time | {elapsed:.0f} s{' (smoke)' if ctx.smoke else ''}{partial} |",
              ""]
    judged = [f for figures in results.values() for f in figures if f.met is not None]
    missed = [f"`{f.name}`" for f in judged if not f.met]
    lines += [f"Targets: {len(judged) - len(missed)} of {len(judged)} met"
              + (f"; missed: {', '.join(missed)}." if missed else "."), ""]
    lines += ["| figure | value | target / bound / reference | verdict | how |", "|---|---|---|---|---|"]
    for figures in results.values():
        for f in figures:
            verdict = "" if f.met is None else ("met" if f.met else "**missed**")
            lines.append(f"| `{f.name}` | {fmt(f.value)} {f.unit} | {f.reference} | {verdict} | {f.note} |")
    notes = ctx.extra.get("notes", {})
    for name in results:
        if notes.get(name):
            lines += ["", f"## {name}", "", *notes[name]]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.path.insert(0, str(BENCH_DIR))
    sys.exit(main())
