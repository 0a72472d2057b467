"""Fleet create and destroy against the mock clouds, next to the lower bound the clouds themselves impose.

Each run gets a fresh world (worlds.fleet_world: the default scenario's latencies and rate limits, room for
1,200 H100 VMs per provider) served by a separate `mock-clouds serve` process, a fresh fleet store, and
freshly connected providers; the fleet manager (vm_core.fleet) runs in this process.

The bound of a placement (`k[p]` VMs on provider p), in scaled seconds:
    create: max over p of  create[p] + max(0, k[p] - burst) * spacing[p]
    destroy: max over p of delete[p] + max(0, k[p] - burst) * request_interval[p]
where spacing is the slowest token bucket a create must pass (Lambda: 1 launch per 12 s, 1 request per 1 s) and
destroy assumes one terminate call per VM (the Provider interface's `begin_destroy(id)`). Every other call the
tool makes (offers, polls, lookups) and its own concurrency limits are what the ratio wall/bound exposes.
The best placement is the one minimising that bound over every split the capacity allows.
The sequential baseline is a naive tool: one VM at a time, create then wait.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import worlds
from common import (
    Context,
    Figure,
    connect_providers,
    fmt,
    inventory,
    median,
    mock_server,
    prepare_world,
    profiling,
    spread_note,
)

RATIO_TARGET = 1.2
# (N, time scale, strategy): a run takes tens of seconds. `spread` is the default of `vm fleet create`; the
# `packed` case puts all VMs on one provider without a rate limit, so only the tool's own limits show.
FULL_CASES = ((30, 0.05, "spread"), (300, 0.02, "spread"), (300, 0.02, "packed"))
SMOKE_CASES = ((6, 0.002, "spread"),)


# ------------------------------------------------------------------------------------------------ bounds
def _bucket_delay(count: int, buckets: list[tuple[float, int]]) -> float:
    """Seconds until the `count`-th call may be sent, with every bucket (interval, burst) starting full."""
    return max([max(0, count - burst) * interval for interval, burst in buckets if interval > 0], default=0.0)


def create_path(times: worlds.CloudTimes, k: int) -> float:
    """Real-world seconds until the k-th VM of one provider runs (0 for none)."""
    if k <= 0:
        return 0.0
    buckets = [(times.create_interval, times.create_burst), (times.request_interval, times.request_burst)]
    return times.create + _bucket_delay(k, buckets)


def destroy_path(times: worlds.CloudTimes, k: int) -> float:
    if k <= 0:
        return 0.0
    return times.delete + _bucket_delay(k, [(times.request_interval, times.request_burst)])


def bound(counts: dict[str, int], scale: float, path=create_path) -> float:
    return scale * max((path(worlds.SCENARIO_TIMES[p], k) for p, k in counts.items()), default=0.0)


def best_placement(n: int, scale: float, room: int = worlds.ROOM, path=create_path) -> tuple[float, dict[str, int]]:
    """The split of n VMs over the providers (each up to `room`) with the smallest bound."""
    candidates = sorted({path(t, k) for t in worlds.SCENARIO_TIMES.values() for k in range(1, min(n, room) + 1)})
    for limit in candidates:  # the smallest makespan at which the providers can absorb n VMs
        counts = {p: _most_within(t, limit, min(n, room), path) for p, t in worlds.SCENARIO_TIMES.items()}
        if sum(counts.values()) >= n:
            return limit * scale, _trim(counts, n)
    raise ValueError(f"{n} VMs do not fit")


def _most_within(times: worlds.CloudTimes, limit: float, cap: int, path) -> int:
    return max((k for k in range(cap + 1) if path(times, k) <= limit), default=0)


def _trim(counts: dict[str, int], n: int) -> dict[str, int]:
    result, left = {}, n
    for p, k in sorted(counts.items(), key=lambda item: -item[1]):
        result[p] = min(k, left)
        left -= result[p]
    return {p: k for p, k in result.items() if k}


def sequential(counts: dict[str, int], scale: float) -> float:
    """A naive tool's time: every VM created and awaited one after another."""
    return scale * sum(worlds.SCENARIO_TIMES[p].create * k for p, k in counts.items())


# ------------------------------------------------------------------------------------------------ probes
@dataclass
class LambdaCalls:
    """Every HTTP call the Lambda SDK sent (time, method, path); installed on the client's transport."""

    calls: list[tuple[float, str, str, int]] = field(default_factory=list)  # (time, method, path, status)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def install(self, provider: Any) -> None:
        transport = getattr(getattr(provider, "_client", None), "_transport", None)
        if transport is None:
            return
        send = transport._send

        def counted(method, url, *args, **kwargs):
            sent = time.monotonic()
            response = send(method, url, *args, **kwargs)
            with self.lock:
                self.calls.append((sent, method, url.rsplit("/api/v1", 1)[-1], response.status_code))
            return response

        transport._send = counted

    def summary(self, since: float, until: float) -> dict[str, Any]:
        window = sorted(c for c in self.calls if since <= c[0] <= until)
        launches = [t for t, m, p, s in window if p.startswith("/instance-operations/launch") and s < 400]
        kinds = Counter(_kind(m, p) for _, m, p, _ in window)
        refused = Counter(_kind(m, p) for _, m, p, s in window if s == 429)
        spacing = (launches[-1] - launches[0]) / (len(launches) - 1) if len(launches) > 1 else float("nan")
        return {"calls": len(window), "kinds": dict(kinds), "429": dict(refused), "launches": len(launches),
                "launch_spacing": spacing}


def _kind(method: str, path: str) -> str:
    if path.startswith("/instances/") and method == "GET":
        return "GET /instances/{id}"
    return f"{method} {path.split('?')[0]}"


# ------------------------------------------------------------------------------------------------ one run
@dataclass
class RunResult:
    create: float
    destroy: float
    counts: dict[str, int]
    finish: dict[str, float]  # seconds from the start of create to the provider's last member running
    lambda_create: dict[str, Any]
    lambda_destroy: dict[str, Any]


def one_run(ctx: Context, n: int, scale: float, strategy: str, tag: str, profile: Path | None = None,
            store_url: str | None = None) -> RunResult:
    """One create and destroy on a fresh world; the fleet store is SQLite in the scratch dir, or `store_url`."""
    from vm_core.fleet import strategies
    from vm_core.fleet.create import FleetCreator, FleetSpec
    from vm_core.fleet.destroy import FleetDestroyer
    from vm_core.fleet.location import store_at
    from vm_core.fleet.store import FleetState, MemberState

    base = ctx.scratch(tag)
    prepare_world(base / "mock-clouds", worlds.fleet_world)
    with mock_server(ctx, base / "mock-clouds", time_scale=scale) as endpoints:
        providers = connect_providers(endpoints)
        probe = LambdaCalls()
        probe.install(providers["lambda"])
        store = store_at(store_url, base)
        name = f"bench{n}"
        timeout = 600.0
        started_wall, started = time.time(), time.monotonic()
        with profiling(profile):
            report = FleetCreator(store, providers, getattr(strategies, strategy), timeout=timeout).create(
                FleetSpec(name=name, gpu="H100", count=n, min_count=n, strategy=strategy))
        created = time.monotonic()
        if report.fleet.state is not FleetState.ACTIVE:
            raise RuntimeError(f"fleet {name} ended {report.fleet.state}: {report.notes[:5]}")
        live = [i for i in inventory(endpoints) if i["name"].startswith(name + "-")]
        if len(live) != n:
            raise RuntimeError(f"the clouds hold {len(live)} VMs of {name}, expected {n}")
        members = [m for m in store.members(name) if m.state is MemberState.RUNNING]
        counts = dict(Counter(m.provider for m in members))
        finish = {p: max(m.updated_at for m in members if m.provider == p) - started_wall for p in counts}
        destroy_started = time.monotonic()
        result = FleetDestroyer(store, providers, timeout=timeout).destroy(name)
        destroyed = time.monotonic()
        left = [i for i in inventory(endpoints) if i["name"].startswith(name + "-")]
        if result.failures or left:
            raise RuntimeError(f"destroy of {name} left {len(left)} VMs: {result.failures[:5]}")
        store.close()
    return RunResult(created - started, destroyed - destroy_started, counts, finish,
                     probe.summary(started, created), probe.summary(destroy_started, destroyed))


# ------------------------------------------------------------------------------------------------ figures
def run(ctx: Context) -> list[Figure]:
    figures: list[Figure] = []
    cases = SMOKE_CASES if ctx.smoke else FULL_CASES
    for n, scale, strategy in cases:
        results = []
        tag = f"n{n}" if strategy == "spread" else f"n{n}_{strategy}"
        for attempt in range(ctx.runs(3)):
            ctx.log(f"  fleet N={n} {strategy} (time scale {scale}) run {attempt + 1}")
            results.append(one_run(ctx, n, scale, strategy, f"fleet-{tag}-{attempt}"))
            r = results[-1]
            ctx.log(f"    create {fmt(r.create)} s, destroy {fmt(r.destroy)} s, placement {r.counts}, "
                    f"last running per provider {_rounded(r.finish)}; lambda create calls {r.lambda_create}; "
                    f"lambda destroy calls {r.lambda_destroy}")
        if ctx.profile_dir:  # an extra run under py-spy, not counted (sampling 64+ threads costs CPU)
            ctx.log(f"  fleet N={n} {strategy}: profiled run")
            one_run(ctx, n, scale, strategy, f"fleet-{tag}-profiled", ctx.profile_dir / f"fleet_create_{tag}.txt")
        figures += _size_figures(ctx, n, scale, strategy, tag, results)
    figures += _sequential(ctx, cases[-1][1])
    return figures


def _size_figures(ctx: Context, n: int, scale: float, strategy: str, tag: str,
                  results: list[RunResult]) -> list[Figure]:
    counts = results[0].counts
    if any(r.counts != counts for r in results):
        ctx.note("fleet", f"- N={n}: the placement differed between runs: {[r.counts for r in results]}")
    create_bound, destroy_bound = bound(counts, scale), bound(counts, scale, destroy_path)
    best_create, best_counts = best_placement(n, scale)
    best_destroy, best_destroy_counts = best_placement(n, scale, path=destroy_path)
    create = median([r.create for r in results])
    destroy = median([r.destroy for r in results])
    seq = sequential(counts, scale)
    placement = _split(counts)
    figures = [
        Figure(f"fleet_create_{tag}_wall", create, "s",
               f"bound: {fmt(create_bound)} s for the placement chosen ({placement}); best placement "
               f"{fmt(best_create)} s ({_split(best_counts)})",
               note=f"{spread_note([r.create for r in results])}; time scale {scale}; strategy {strategy}"),
        Figure(f"fleet_create_{tag}_ratio", create / create_bound, "x",
               f"target: <= {RATIO_TARGET} x the bound", create / create_bound <= RATIO_TARGET,
               note=f"wall/bound of the placement chosen; vs best placement: {fmt(create / best_create)} x"),
        Figure(f"fleet_destroy_{tag}_wall", destroy, "s",
               f"bound: {fmt(destroy_bound)} s for the placement chosen; best placement {fmt(best_destroy)} s "
               f"({_split(best_destroy_counts)})", note=spread_note([r.destroy for r in results])),
        Figure(f"fleet_destroy_{tag}_ratio", destroy / destroy_bound, "x",
               f"target: <= {RATIO_TARGET} x the bound", destroy / destroy_bound <= RATIO_TARGET,
               note="wall/bound of the placement chosen"),
        Figure(f"fleet_create_{tag}_sequential_baseline", seq, "s",
               f"baseline: one VM at a time (model, sum of create latencies); {fmt(seq / create)} x the measured wall",
               note="see fleet_sequential_n3_* for the model against a measured naive run"),
    ]
    ctx.note("fleet", f"- N={n}, {strategy}, time scale {scale}: placement {placement}; per provider, median "
                      f"seconds from the start to its last member running vs its own bound: "
                      + ", ".join(f"{p} {fmt(median([r.finish[p] for r in results]))} s vs "
                                  f"{fmt(scale * create_path(worlds.SCENARIO_TIMES[p], k))} s"
                                  for p, k in sorted(counts.items())))
    lc = results[0].lambda_create
    ld = results[0].lambda_destroy
    if lc["calls"]:
        ctx.note("fleet", f"  - Lambda calls during create (run 1): {lc['calls']} {lc['kinds']}, refused with 429: "
                          f"{lc['429'] or 'none'}; mean spacing of accepted launches {fmt(lc['launch_spacing'])} s "
                          f"(the limit: {fmt(12.0 * scale)} s)")
    if ld["calls"]:
        ctx.note("fleet", f"  - Lambda calls during destroy (run 1): {ld['calls']} {ld['kinds']}, refused with 429: "
                          f"{ld['429'] or 'none'}; the limit is one call per {fmt(1.0 * scale)} s")
    return figures


def _sequential(ctx: Context, scale: float) -> list[Figure]:
    """A naive tool, measured: one VM per provider, each created and awaited before the next."""
    from vm_core.model import CreateSpec

    measured = []
    for attempt in range(ctx.runs(3)):
        base = ctx.scratch(f"fleet-seq-{attempt}")
        prepare_world(base / "mock-clouds", worlds.fleet_world)
        with mock_server(ctx, base / "mock-clouds", time_scale=scale) as endpoints:
            providers = connect_providers(endpoints)
            started = time.monotonic()
            for name, provider in providers.items():
                region, shape = worlds.H100[name]
                provider.begin_create(CreateSpec(name=f"seq-{name}", gpu="H100", region=region,
                                                 shape=shape)).wait(600)
            measured.append(time.monotonic() - started)
    model = sequential({p: 1 for p in worlds.SCENARIO_TIMES}, scale)
    wall = median(measured)
    return [
        Figure("fleet_sequential_n3_measured", wall, "s", f"model: {fmt(model)} s (sum of create latencies)",
               note=f"{spread_note(measured)}; one VM per provider, time scale {scale}"),
        Figure("fleet_sequential_n3_vs_model", wall / model, "x", "how far a naive run is above the model",
               note="poll intervals and request time add to the latencies"),
    ]


def _rounded(values: dict[str, float]) -> dict[str, str]:
    return {k: fmt(v) for k, v in values.items()}


def _split(counts: dict[str, int]) -> str:
    return "/".join(f"{p} {k}" for p, k in sorted(counts.items()))


if __name__ == "__main__":
    from run import main

    sys.exit(main(["--only", Path(__file__).stem, *sys.argv[1:]]))
