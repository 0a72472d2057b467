"""One fleet create or destroy (the fleet library, vm_core.fleet) against running mock clouds, as a process of
its own, so that its peak RSS and thread count are those of the create or destroy alone.

    python bench/_fleet_run.py create --endpoints FILE --store-dir DIR [--store-url URL] --name NAME --count N
                                      --strategy NAME [--providers a,b]
    python bench/_fleet_run.py destroy --endpoints FILE --store-dir DIR [--store-url URL] --name NAME

Prints one JSON object on stdout: `wall` (seconds of the create or destroy call alone: providers are connected
and the store opened before the clock starts), `started_epoch` (when the clock started, epoch seconds: the mock's
records of the same run are timed on that clock), `cpu` (user + system seconds of this process during it),
`mock_cpu` (the same for the mock-clouds server process), `threads_peak` (the most OS threads this process
had, sampled every 5 ms from /proc/self/status), `rss_peak` (bytes, VmHWM at the end), and for a create the
placement (`counts`), `finish` (seconds from the start to each provider's last member running) and the fleet's
`state`; `lambda` counts the Lambda API calls sent (by kind, and those refused with 429).
The fleet is H100:8 per VM (worlds.GPU, worlds.GPU_COUNT), the size all three clouds sell.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import worlds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("create", "destroy"))
    parser.add_argument("--endpoints", type=Path, required=True)
    parser.add_argument("--store-dir", type=Path, required=True)
    parser.add_argument("--store-url")
    parser.add_argument("--name", required=True)
    parser.add_argument("--count", type=int, default=0)
    parser.add_argument("--strategy", default="spread")
    parser.add_argument("--providers", help="comma-separated (default: all three)")
    parser.add_argument("--timeout", type=float, default=900.0)
    args = parser.parse_args(argv)
    endpoints = json.loads(args.endpoints.read_text())
    providers = tuple(args.providers.split(",")) if args.providers else None
    if args.action == "create":
        result = create(endpoints, args.store_dir, args.store_url, args.name, args.count, args.strategy, providers,
                        args.timeout)
    else:
        result = destroy(endpoints, args.store_dir, args.store_url, args.name, args.timeout)
    json.dump(result, sys.stdout)
    return 0


# ------------------------------------------------------------------------------------------------ the two runs
def create(endpoints: dict[str, Any], store_dir: Path, store_url: str | None, name: str, count: int,
           strategy: str, providers: tuple[str, ...] | None, timeout: float) -> dict[str, Any]:
    """Create fleet `name` of `count` H100:8 VMs with `strategy` (an entry point of `vm_core.strategies`), with
    the concurrent create calls each provider's plugin declares, as `vm fleet create` sends them."""
    from common import connect_providers
    from vm_core.fleet.create import FleetCreator, FleetSpec
    from vm_core.fleet.location import store_at
    from vm_core.fleet.store import MemberState
    from vm_core.plugins import create_concurrency

    connected = connect_providers(endpoints, providers or worlds.PROVIDERS)
    probe = LambdaCalls.installed(connected)
    store = store_at(store_url, store_dir)
    creator = FleetCreator(store, connected, load_strategy(strategy), timeout=timeout,
                           concurrency=create_concurrency(connected))
    spec = FleetSpec(name=name, gpu=worlds.GPU, gpu_count=worlds.GPU_COUNT, count=count, min_count=count,
                     strategy=strategy, providers=providers)
    with Measured(endpoints) as measured:
        report = creator.create(spec)
    members = [m for m in store.members(name) if m.state is MemberState.RUNNING]
    counts = dict(Counter(m.provider for m in members))
    finish = {p: max(m.updated_at for m in members if m.provider == p) - measured.started_epoch for p in counts}
    store.close()
    return {**measured.result(), "state": report.fleet.state.value, "running": len(members), "counts": counts,
            "finish": finish, "notes": [str(n) for n in report.notes[:5]], "lambda": probe.summary()}


def destroy(endpoints: dict[str, Any], store_dir: Path, store_url: str | None, name: str,
            timeout: float) -> dict[str, Any]:
    """Destroy fleet `name` (every provider it uses)."""
    from common import connect_providers
    from vm_core.fleet.destroy import FleetDestroyer
    from vm_core.fleet.location import store_at

    store = store_at(store_url, store_dir)
    used = sorted({m.provider for m in store.members(name)})
    connected = connect_providers(endpoints, used)
    probe = LambdaCalls.installed(connected)
    with Measured(endpoints) as measured:
        report = FleetDestroyer(store, connected, timeout=timeout).destroy(name)
    store.close()
    return {**measured.result(), "destroyed": report.destroyed, "failures": report.failures[:5],
            "lambda": probe.summary()}


def plan(endpoints: dict[str, Any], count: int, strategy: str,
         providers: tuple[str, ...] | None) -> dict[str, int]:
    """VMs per provider the strategy would place now (the dry run of `vm fleet create`); changes nothing."""
    from common import connect_providers
    from vm_core.fleet.create import FleetCreator, FleetSpec
    from vm_core.fleet.location import store_at

    connected = connect_providers(endpoints, providers or worlds.PROVIDERS)
    with tempfile.TemporaryDirectory() as scratch:
        store = store_at(None, Path(scratch))
        spec = FleetSpec(name="plan", gpu=worlds.GPU, gpu_count=worlds.GPU_COUNT, count=count, min_count=count,
                         strategy=strategy, providers=providers)
        placements, _ = FleetCreator(store, connected, load_strategy(strategy)).plan(spec)
        store.close()
    return dict(Counter(o.provider for o in placements))


def load_strategy(name: str) -> Any:
    """The strategy registered under `name` in the entry-point group `vm_core.strategies`."""
    from importlib.metadata import entry_points

    found = [ep for ep in entry_points(group="vm_core.strategies") if ep.name == name]
    if not found:
        raise SystemExit(f"no strategy {name!r} in the entry-point group vm_core.strategies")
    return found[0].load()


# ------------------------------------------------------------------------------------------------ measuring
class Measured:
    """Wall time, CPU time (this process and the mock server), peak threads and peak RSS of a block."""

    def __init__(self, endpoints: dict[str, Any]) -> None:
        self.mock_pid = int(endpoints.get("pid", 0))
        self.threads_peak = 0
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> Measured:
        self._sampler.start()
        self.mock_cpu0, self.cpu0 = _proc_cpu(self.mock_pid), _own_cpu()
        self.started_epoch, self.started = time.time(), time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.monotonic() - self.started
        self.cpu, self.mock_cpu = _own_cpu() - self.cpu0, _proc_cpu(self.mock_pid) - self.mock_cpu0
        self._stop.set()
        self._sampler.join()

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.threads_peak = max(self.threads_peak, int(_status("Threads")))
            self._stop.wait(0.005)

    def result(self) -> dict[str, Any]:
        return {"started_epoch": self.started_epoch, "wall": self.wall, "cpu": self.cpu, "mock_cpu": self.mock_cpu,
                "threads_peak": self.threads_peak,
                "rss_peak": int(_status("VmHWM").split()[0]) * 1024}


def _status(key: str) -> str:
    """A field of /proc/self/status ('Threads', 'VmHWM')."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return line.split(":", 1)[1].strip()
    raise RuntimeError(f"no {key} in /proc/self/status")


def _own_cpu() -> float:
    t = os.times()
    return t.user + t.system


def _proc_cpu(pid: int) -> float:
    """User + system seconds of process `pid` (all its threads); NaN when unreadable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class LambdaCalls:
    """Every HTTP call the Lambda SDK sent (time, method, path, status), counted on the client's transport."""

    calls: list[tuple[float, str, str, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def installed(cls, providers: dict[str, Any]) -> LambdaCalls:
        probe = cls()
        transport = getattr(getattr(providers.get("lambda"), "_client", None), "_transport", None)
        send = getattr(transport, "_send", None)
        if send is None:
            return probe  # no Lambda in this run, or an SDK without this seam: no counts

        def counted(method, url, *args, **kwargs):
            sent = time.monotonic()
            response = send(method, url, *args, **kwargs)
            with probe.lock:
                probe.calls.append((sent, method, url.rsplit("/api/v1", 1)[-1], response.status_code))
            return response

        transport._send = counted
        return probe

    def summary(self) -> dict[str, Any]:
        window = sorted(self.calls)
        launches = [t for t, m, p, s in window if p.startswith("/instance-operations/launch") and s < 400]
        spacing = (launches[-1] - launches[0]) / (len(launches) - 1) if len(launches) > 1 else float("nan")
        return {"calls": len(window), "kinds": dict(Counter(_kind(m, p) for _, m, p, _ in window)),
                "429": dict(Counter(_kind(m, p) for _, m, p, s in window if s == 429)), "launches": len(launches),
                "launch_spacing": spacing}


def _kind(method: str, path: str) -> str:
    if path.startswith("/instances/") and method == "GET":
        return "GET /instances/{id}"
    return f"{method} {path.split('?')[0]}"


if __name__ == "__main__":
    sys.exit(main())
