"""Mock server throughput: requests/s each mock cloud sustains with 32 concurrent clients, and p99 latency.

The clouds run as `mock-clouds serve` (one process, the three servers plus the shared world lock); the load comes
from bench/_load.py in another process: 32 clients with a connection each, reading one of 30 seeded instances
after another (GET instance / gRPC InstanceService.Get: the call every poll makes). Lambda's rate limit is
switched off for this (worlds.unlimited_world), so the server is measured, not its token bucket. Both processes
share the machine's cores, so the figures are a floor of what the server alone could do.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import worlds
from common import Context, Figure, child_env, fmt, median, mock_server, percentile, prepare_world, spread_note

CLIENTS = 32


def run(ctx: Context) -> list[Figure]:
    home = ctx.scratch("mockserver-home")
    state = home / "mock-clouds"
    ids: dict[str, dict[str, str]] = {}
    prepare_world(state, worlds.unlimited_world, lambda clouds: ids.update(worlds.seed(clouds, 30)))
    seconds = 0.5 if ctx.smoke else 3.0
    figures: list[Figure] = []
    with mock_server(ctx, state, time_scale=0.05):
        for provider in worlds.PROVIDERS:
            runs = [_load(ctx, state / "endpoints.json", provider, list(ids[provider].values()), seconds)
                    for _ in range(ctx.runs(3))]
            rps = [r["requests"] / r["seconds"] for r in runs]
            p99 = [percentile(r["latencies_ms"], 99) for r in runs]
            p50 = [percentile(r["latencies_ms"], 50) for r in runs]
            errors = sum(r["errors"] for r in runs)
            ctx.log(f"  {provider}: {', '.join(fmt(x) for x in rps)} req/s, p99 {', '.join(fmt(x) for x in p99)} ms")
            if errors:
                raise RuntimeError(f"{provider}: {errors} requests failed under load")
            how = f"{spread_note(rps, 'req/s')}; {CLIENTS} clients, {fmt(seconds)} s per run"
            figures += [
                Figure(f"mock_{provider}_throughput", median(rps), "req/s", "reference: no target", note=how),
                Figure(f"mock_{provider}_p99_latency", median(p99), "ms", f"p50: {fmt(median(p50))} ms",
                       note=f"{spread_note(p99, 'ms')}; per-run p99 over every request"),
            ]
    return figures


def _load(ctx: Context, endpoints: Path, provider: str, ids: list[str], seconds: float) -> dict:
    script = Path(__file__).with_name("_load.py")
    cmd = [sys.executable, str(script), "--endpoints", str(endpoints), "--provider", provider, "--ids", ",".join(ids),
           "--clients", str(CLIENTS), "--seconds", str(seconds)]
    done = subprocess.run(cmd, env=child_env(ctx), capture_output=True, text=True, timeout=120 + seconds)
    if done.returncode != 0:
        raise RuntimeError(f"load generator for {provider} failed: {done.stderr.strip()[-800:]}")
    return json.loads(done.stdout)


if __name__ == "__main__":
    from run import main

    sys.exit(main(["--only", Path(__file__).stem, *sys.argv[1:]]))
