"""What `vm fleet status NAME -o json` does, as a process of its own (for a CLI without `vm fleet status`).

    python bench/_fleet_status.py --store FILE --endpoints FILE --name NAME [--refresh get|list]

`--refresh get` is vm_core's FleetDestroyer.view (one get_instance per live member, 16 at a time).
`--refresh list` is a bench-local prototype of the suggested fix: one paged list_instances per provider the
fleet uses (concurrently), members matched by instance id. Prints the fleet as JSON on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--endpoints", type=Path, required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--refresh", choices=("get", "list"), default="get")
    args = parser.parse_args()

    from vm_core.embedded import settings_from_endpoints
    from vm_core.fleet.store import SqliteFleetStore
    from vm_core.plugins import provider_plugins

    endpoints = json.loads(args.endpoints.read_text())
    store = SqliteFleetStore(args.store)
    plugins = provider_plugins()
    used = sorted({m.provider for m in store.members(args.name)})
    providers = {p: plugins.get(p).connect(settings_from_endpoints(endpoints, p)) for p in used}
    fleet, members = (by_get if args.refresh == "get" else by_list)(store, providers, args.name)
    json.dump({**fleet, "members": members}, sys.stdout)
    return 0


def by_get(store, providers, name):
    from vm_core.fleet.destroy import FleetDestroyer

    view = FleetDestroyer(store, providers).view(name)
    members = [v.instance.to_json() for v in view.members if v.instance is not None]
    return _fleet_json(view.fleet, view.price_per_hour), members


def by_list(store, providers, name):
    from vm_core.fleet.store import MAY_EXIST

    record = store.get_fleet(name)
    live = [m for m in store.members(name) if m.state in MAY_EXIST]
    with ThreadPoolExecutor(max_workers=len(providers) or 1) as pool:
        listed = dict(zip(providers, pool.map(lambda p: {i.id: i for i in p.list_instances()}, providers.values()),
                          strict=True))
    instances = [listed[m.provider].get(m.instance_id) for m in live]
    members = [i.to_json() for i in instances if i is not None]
    return _fleet_json(record, sum(i.price_per_hour or 0.0 for i in instances if i is not None)), members


def _fleet_json(record, price: float) -> dict:
    return {"name": record.name, "state": record.state.value, "gpu": record.gpu,
            "count": record.count, "price_per_hour": round(price, 4)}


if __name__ == "__main__":
    sys.exit(main())
