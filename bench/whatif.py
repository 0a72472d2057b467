"""What-if runs behind bench/findings.md: one fleet case with a suspected limit lifted, in this process only.

    python bench/whatif.py N TIME_SCALE STRATEGY [--unbounded-threads] [--no-lambda-request-limit]

--unbounded-threads        FleetCreator runs every slot of a batch in its own thread (instead of at most 64)
                           and FleetDestroyer destroys every member at once (instead of 16 at a time).
--no-lambda-request-limit  Lambda's 1 request/s bucket is switched off in the mock and in the client (the 1
                           launch per 12 s bucket stays), to show what the per-instance polls cost.
Nothing outside this process changes; these are diagnostics, not proposed code.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import fleet
import worlds
from common import Context, fmt


def unbounded_threads() -> None:
    from vm_core.fleet import create, destroy

    def run_batch(self, spec, batch):
        with ThreadPoolExecutor(max_workers=len(batch)) as pool:
            return list(pool.map(lambda item: self._attempt(spec, *item), batch))

    create.FleetCreator._run_batch = run_batch
    destroy.PARALLEL = 10_000


def no_lambda_request_limit() -> None:
    base_world = worlds.fleet_world

    def world(state):
        base_world(state)
        state.providers["lambda"].rate_limit.request_interval = 0.0

    def connect(endpoints, names=worlds.PROVIDERS):
        from vm_core.embedded import settings_from_endpoints
        from vm_core.plugins import provider_plugins

        plugins = provider_plugins()
        settings = {n: settings_from_endpoints(dict(endpoints), n) for n in names}
        settings["lambda"]["request_interval"] = 0.0
        return {n: plugins.get(n).connect(settings[n]) for n in names}

    worlds.fleet_world, fleet.connect_providers = world, connect


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("n", type=int)
    parser.add_argument("time_scale", type=float)
    parser.add_argument("strategy", choices=("spread", "packed", "cheapest", "reserved_first"))
    parser.add_argument("--unbounded-threads", action="store_true")
    parser.add_argument("--no-lambda-request-limit", action="store_true")
    args = parser.parse_args()
    if args.unbounded_threads:
        unbounded_threads()
    if args.no_lambda_request_limit:
        no_lambda_request_limit()
    ctx = Context(smoke=False, workdir=Path(tempfile.mkdtemp(prefix="vm-whatif-")))
    r = fleet.one_run(ctx, args.n, args.time_scale, args.strategy, "whatif")
    create_bound = fleet.bound(r.counts, args.time_scale)
    destroy_bound = fleet.bound(r.counts, args.time_scale, fleet.destroy_path)
    print(f"placement {r.counts}; last running per provider { {p: fmt(t) for p, t in r.finish.items()} }")
    print(f"create {fmt(r.create)} s, bound {fmt(create_bound)} s, ratio {fmt(r.create / create_bound)} x")
    print(f"destroy {fmt(r.destroy)} s, bound {fmt(destroy_bound)} s, ratio {fmt(r.destroy / destroy_bound)} x")
    print(f"lambda calls during create: {r.lambda_create}")
    print(f"lambda calls during destroy: {r.lambda_destroy}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
