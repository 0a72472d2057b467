"""The floor under `vm list` on idle mocks, as a process of its own: what no `vm list` can avoid.

    python bench/_list_floor.py --record-modules FILE           # run `vm list` and record every module it loaded
    python bench/_list_floor.py --modules FILE [--endpoints FILE]

With `--modules` it imports exactly the modules a `vm list` process had loaded (recorded before, in their order),
and with `--endpoints` then makes one round trip per provider, concurrently as `vm list` does: the first page
of the instance listing through each SDK's client (Crusoe GET instances, Lambda GET /instances, Nebius
InstanceService.List of the default project). No configuration is read, nothing is mapped or printed. It ends
as `vm` does (vm_core/cli/exiting.py: exit handlers, then no interpreter teardown). Its wall time is the floor;
without `--endpoints`, interpreter start plus the imports.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SKIP = {"__main__", "__mp_main__"}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--record-modules", type=Path, metavar="FILE")
    parser.add_argument("--modules", type=Path, metavar="FILE")
    parser.add_argument("--endpoints", type=Path, metavar="FILE")
    args, rest = parser.parse_known_args()
    if args.record_modules:
        return record(args.record_modules, rest)
    for name in args.modules.read_text().split():
        if name not in SKIP:
            with contextlib.suppress(ImportError):  # an alias only its parent can load: loaded with the parent
                importlib.import_module(name)
    if args.endpoints:
        round_trips(json.loads(args.endpoints.read_text()))
    return 0


def record(path: Path, rest: list[str]) -> int:
    """Run `vm list REST...` in this process and write the names of every module loaded by its end."""
    import atexit

    atexit.register(lambda: path.write_text("\n".join(list(sys.modules))))
    from vm_core.cli.main import main as vm

    sys.argv = ["vm", "list", *rest]
    return vm()


def round_trips(endpoints: dict) -> None:
    """One listing call per provider, concurrently; raises if any fails."""
    from vm_core.embedded import settings_from_endpoints
    from vm_core.plugins import provider_plugins

    plugins = provider_plugins()
    names = ("crusoe", "lambda", "nebius")

    def one(name: str) -> None:
        client = plugins.get(name).connect(settings_from_endpoints(endpoints, name))._client
        next(iter(client.list_instances()), None)  # every SDK's listing is a lazy pager: this fetches page one

    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        list(pool.map(one, names))


if __name__ == "__main__":
    from vm_core.cli.exiting import exit_process

    exit_process(main())
