"""What every benchmark shares: figures, statistics, timed child processes, mock-cloud servers, the machine.

A benchmark module exposes `run(ctx: Context) -> list[Figure]`. Figures print as one line each,
`name: value unit (target/bound: ...)`, and become rows of bench/results.md.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent


@dataclass
class Figure:
    """One measured (or modelled) figure. `met` is None when the figure has no target."""

    name: str
    value: float
    unit: str
    reference: str = ""  # "target: <= 0.10 s", "bound: 14.4 s", "baseline: ..."
    met: bool | None = None
    note: str = ""  # how it was measured, runs, spread; shown in results.md

    def line(self) -> str:
        verdict = "" if self.met is None else ("; met" if self.met else "; MISSED")
        reference = f" ({self.reference}{verdict})" if self.reference or verdict else ""
        return f"{self.name}: {fmt(self.value)} {self.unit}{reference}"


def fmt(value: float) -> str:
    if value != value:  # NaN: not measured
        return "n/a"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def target(name: str, value: float, unit: str, limit: float, note: str = "") -> Figure:
    """A figure with an upper-limit target."""
    return Figure(name, value, unit, f"target: <= {fmt(limit)} {unit}", value <= limit, note)


@dataclass
class Context:
    """Options of one bench run. `workdir` is a scratch directory removed afterwards."""

    smoke: bool
    workdir: Path
    profile_dir: Path | None = None
    log: Callable[[str], None] = lambda text: print(text, file=sys.stderr, flush=True)
    extra: dict[str, Any] = field(default_factory=dict)

    def runs(self, full: int) -> int:
        """How many repetitions a measurement gets (1 in smoke mode)."""
        return 1 if self.smoke else full

    def note(self, benchmark: str, text: str) -> None:
        """A line for the benchmark's section of results.md (scenario, breakdowns, profiles)."""
        self.extra.setdefault("notes", {}).setdefault(benchmark, []).append(text)

    def scratch(self, name: str) -> Path:
        path = self.workdir / name
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        return path


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (pct in 0..100); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(pct / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def spread_note(values: Sequence[float], unit: str = "s") -> str:
    """'median of n (min .. max)' for a results.md note."""
    if len(values) == 1:
        return "1 run"
    return f"median of {len(values)} (min {fmt(min(values))}, max {fmt(max(values))} {unit})"


# ------------------------------------------------------------------------------------------ child processes
def child_env(ctx: Context, **overrides: str) -> dict[str, str]:
    """The environment of measured child processes.

    Bytecode is cached under the scratch dir (PYTHONPYCACHEPREFIX) and PYTHONDONTWRITEBYTECODE is dropped, so
    start-up is measured as after a wheel install (compiled .pyc present), not recompiling every run, and
    nothing is written into the source tree. Mock clouds are never autostarted by a measured command."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(ctx.scratch("pycache"))
    env["VM_NO_AUTOSTART"] = "1"
    env.update(overrides)
    return env


@dataclass(frozen=True)
class Timed:
    wall: float  # seconds
    max_rss: int  # bytes, peak resident set of the child (ru_maxrss)
    returncode: int


def run_timed(cmd: Sequence[str], env: Mapping[str, str], stdout: Path | None = None,
              timeout: float = 300.0) -> Timed:
    """Run `cmd` and measure its wall time and peak RSS (os.wait4 of that child only). Raises on failure."""
    with contextlib.ExitStack() as files:
        out = files.enter_context(open(stdout, "wb")) if stdout else subprocess.DEVNULL
        err = files.enter_context(tempfile.TemporaryFile())  # a file: a chatty child never blocks on a pipe
        started = time.perf_counter()
        proc = subprocess.Popen(list(cmd), env=dict(env), stdout=out, stderr=err)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > started + timeout:
                proc.kill()
                raise TimeoutError(f"{' '.join(cmd)} did not finish in {timeout:.0f} s")
            time.sleep(0.001)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {stderr.strip()[-800:]}")
    return Timed(wall, usage.ru_maxrss * 1024, proc.returncode)


def vm_command() -> list[str]:
    """The installed `vm` console script of this environment (what a user runs)."""
    script = Path(sys.executable).parent / "vm"
    if not script.exists():
        raise RuntimeError(f"no `vm` script next to {sys.executable}: run the bench in the bench env "
                           "(hatch run bench:all)")
    return [str(script)]


# ------------------------------------------------------------------------------------------ mock clouds
@contextlib.contextmanager
def mock_server(ctx: Context, state_dir: Path, *, time_scale: float | None = None) -> Iterator[dict[str, Any]]:
    """Serve the mock clouds of `state_dir` in a separate process (`mock-clouds serve --detach`, exactly what
    vm's autostart runs), so they do not share a GIL with the code measured. Yields the endpoints."""
    from mock_clouds import control

    cmd = [sys.executable, "-m", "mock_clouds", "serve", "--detach", "--state-dir", str(state_dir)]
    if time_scale is not None:
        cmd += ["--time-scale", repr(time_scale)]
    subprocess.run(cmd, check=True, capture_output=True, env=child_env(ctx), timeout=60)
    try:
        yield control.read_endpoints(state_dir)
    finally:
        control.stop_server(state_dir)


def prepare_world(state_dir: Path, configure: Callable[[Any], None] | None,
                  populate: Callable[[Any], None] | None = None, *, time_scale: float = 0.002) -> None:
    """Create a fresh persisted world in `state_dir`: the default scenario edited by `configure`, then
    `populate(clouds)` run against it in-process (at a fast time scale) before it is saved with the
    scenario's own time scale (a server started on it without --time-scale uses that)."""
    from mock_clouds.runner import MockClouds
    from mock_clouds.scenario import load_scenario

    clouds = MockClouds(state_dir, configure=configure, time_scale=time_scale).start()
    try:
        if populate is not None:
            populate(clouds)
    finally:
        with clouds.world.tx() as world:
            world.state.time_scale = load_scenario().time_scale
        clouds.stop()
        (state_dir / "endpoints.json").unlink(missing_ok=True)


def connect_providers(endpoints: Mapping[str, Any], names: Sequence[str] = ("crusoe", "lambda", "nebius")):
    """vm-core providers connected to the mock clouds of `endpoints` (as the embedded profile does)."""
    from vm_core.embedded import settings_from_endpoints
    from vm_core.plugins import provider_plugins

    plugins = provider_plugins()
    return {name: plugins.get(name).connect({**settings_from_endpoints(dict(endpoints), name),
                                             "ssh_public_key": BENCH_KEY}) for name in names}


# The public key new VMs get (they need one; nobody holds its private half): a well-formed ed25519 key.
BENCH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGgLAWC6bF3K8NqzCcSE0G4cqyBqV3zZkh9q6rUa0fB1 bench@vm"


def inventory(endpoints: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every instance in every mock cloud (admin API): the ground truth."""
    from mock_clouds import control

    return control.admin_call(dict(endpoints), "GET", "/inventory", timeout=60)["instances"]


def stop_child(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ------------------------------------------------------------------------------------------ the machine
def machine() -> dict[str, str]:
    """What results.md says about where it was measured."""
    def sh(*cmd: str) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return "?"

    cpu = next((line.split(":", 1)[1].strip() for line in _read("/proc/cpuinfo").splitlines()
                if line.startswith("model name")), platform.processor() or "?")
    mem = sh("free", "-h").splitlines()
    commit = sh("git", "-C", str(REPO), "rev-parse", "--short", "HEAD")
    dirty = sh("git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no")
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpus (nproc)": sh("nproc"),
        "cpu": cpu,
        "memory (free -h)": _memory(mem),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "os": f"{platform.system()} {platform.release()}",
        "commit": commit + (" (with uncommitted changes)" if dirty else ""),
    }


def _memory(free_h: list[str]) -> str:
    """'23Gi total, 23Gi available, swap 0B' from the lines of `free -h`."""
    if len(free_h) < 2:
        return "?"
    header, rows = free_h[0].split(), {line.split(":")[0]: line.split(":")[1].split() for line in free_h[1:]}
    mem = dict(zip(header, rows.get("Mem", []), strict=False))
    swap = rows.get("Swap", ["?"])[0]
    return f"{mem.get('total', '?')} total, {mem.get('available', '?')} available, swap {swap}"


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def dump_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, default=str))


# ------------------------------------------------------------------------------------------ profiles
def py_spy() -> str | None:
    script = Path(sys.executable).parent / "py-spy"
    return str(script) if script.exists() else None


@contextlib.contextmanager
def profiling(path: Path | None, *, pid: int | None = None) -> Iterator[None]:
    """Sample every thread of this process (or `pid`) with py-spy while the block runs, then write a text
    summary to `path` (and the raw stacks next to it). Does nothing when `path` is None or py-spy is missing."""
    spy = py_spy()
    if path is None or spy is None:
        yield
        return
    raw = path.with_suffix(".raw")
    cmd = [spy, "record", "--pid", str(pid or os.getpid()), "--threads", "--idle", "-r", "200", "-f", "raw",
           "-o", str(raw), "--nonblocking"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)  # py-spy attaches
    try:
        yield
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
        if raw.exists():
            path.write_text(summarize_stacks(raw))


def profile_command(cmd: Sequence[str], env: Mapping[str, str], path: Path) -> None:
    """Run `cmd` under py-spy (all threads, idle included) and write a text summary to `path`."""
    spy = py_spy()
    if spy is None:
        return
    raw = path.with_suffix(".raw")
    subprocess.run([spy, "record", "--threads", "--idle", "-r", "500", "-f", "raw", "-o", str(raw), "--", *cmd],
                   env=dict(env), check=True, capture_output=True, timeout=600)
    path.write_text(summarize_stacks(raw))


def summarize_stacks(raw: Path, top: int = 30) -> str:
    """The busiest functions of a py-spy raw profile: inclusive share of samples (idle waits included, so
    a thread blocked on a lock or a socket shows where it waits), and self share of the non-idle samples."""
    from collections import Counter

    inclusive: Counter[str] = Counter()
    leaf: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [f.split(" (")[0] + _where(f) for f in stack.split(";")[1:]]  # drop the thread frame
        n = int(count)
        total += n
        for frame in set(frames):
            inclusive[frame] += n
        if frames:
            leaf[frames[-1]] += n
    lines = [f"py-spy samples (all threads, idle included): {total}", "", "inclusive % | function"]
    lines += [f"{100 * v / max(total, 1):10.1f}% | {k}" for k, v in inclusive.most_common(top)]
    lines += ["", "self % | function (where threads are, idle waits included)"]
    lines += [f"{100 * v / max(total, 1):6.1f}% | {k}" for k, v in leaf.most_common(top)]
    return "\n".join(lines) + "\n"


def _where(frame: str) -> str:
    """' (module/file.py)' of a py-spy frame 'func (path/file.py:123)', without the line."""
    if " (" not in frame:
        return ""
    location = frame.split(" (", 1)[1].rstrip(")").rsplit(":", 1)[0]
    return f" ({'/'.join(location.split('/')[-2:])})"
