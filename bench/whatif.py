"""What-if runs behind bench/findings.md: one fleet case with a suspected limit lifted, in this process only.

    python bench/whatif.py N TIME_SCALE STRATEGY [--no-lambda-request-limit]

(The `--unbounded-threads` what-if of findings.md section 2 is gone with the engine it patched: creates now wait
without a thread per VM, and destroys are batched.)

--no-lambda-request-limit  Lambda's 1 request/s bucket is switched off in the mock and in the client (the 1
                           launch per 12 s bucket stays), to show what the per-instance polls cost.
The create and destroy run in this process (bench/_fleet_run.py's functions), so the changes apply to them.
Nothing outside this process changes; these are diagnostics, not proposed code (the patches follow the engine
of bench/findings.md).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import _fleet_run
import common
import fleet
import worlds
from common import fmt, mock_server, prepare_world


def no_lambda_request_limit() -> None:
    base_world = worlds.fleet_world

    def world(state):
        base_world(state)
        state.providers["lambda"].rate_limit.request_interval = 0.0

    def connect(endpoints, names=worlds.PROVIDERS):
        from vm_core.embedded import settings_from_endpoints
        from vm_core.plugins import provider_plugins

        plugins = provider_plugins()
        settings = {n: {**settings_from_endpoints(dict(endpoints), n), "ssh_public_key": common.BENCH_KEY}
                    for n in names}
        if "lambda" in settings:
            settings["lambda"]["request_interval"] = 0.0
        return {n: plugins.get(n).connect(settings[n]) for n in names}

    worlds.fleet_world, common.connect_providers = world, connect


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("n", type=int)
    parser.add_argument("time_scale", type=float)
    parser.add_argument("strategy", choices=fleet.strategy_names())
    parser.add_argument("--no-lambda-request-limit", action="store_true")
    args = parser.parse_args()
    if args.no_lambda_request_limit:
        no_lambda_request_limit()
    base = Path(tempfile.mkdtemp(prefix="vm-whatif-"))
    prepare_world(base / "mock-clouds", worlds.fleet_world)
    ctx = common.Context(smoke=False, workdir=base)
    with mock_server(ctx, base / "mock-clouds", time_scale=args.time_scale) as endpoints:
        made = _fleet_run.create(endpoints, base, None, "whatif", args.n, args.strategy, None, 900.0)
        gone = _fleet_run.destroy(endpoints, base, None, "whatif", 900.0)
    counts = made["counts"]
    create_bound = fleet.bound(counts, args.time_scale)
    destroy_bound = fleet.bound(counts, args.time_scale, "destroy")
    print(f"placement {counts}; last running per provider { {p: fmt(t) for p, t in made['finish'].items()} }")
    print(f"create {fmt(made['wall'])} s, bound {fmt(create_bound)} s, ratio {fmt(made['wall'] / create_bound)} x")
    print(f"destroy {fmt(gone['wall'])} s, bound {fmt(destroy_bound)} s, ratio {fmt(gone['wall'] / destroy_bound)} x")
    print(f"lambda calls during create: {made['lambda']}")
    print(f"lambda calls during destroy: {gone['lambda']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
