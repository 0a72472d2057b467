"""The main job until the `vm` CLI lands: one GPU VM through its life on each of the three clouds.

Starts the embedded mock clouds (in this process, on free ports), then with the three standalone SDKs creates an
H100 VM on Crusoe, Lambda and Nebius at the same time, waits for each to run, shows them, deletes them, and
checks the clouds' own inventory to prove that nothing leaked.

    hatch run demo [--time-scale 0.05] [--state-dir DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDemoKeyForTheMockCloudsOnly000000000000000 demo@vm"


@dataclass
class Row:
    cloud: str
    id: str
    name: str
    state: str
    shape: str
    region: str
    reservation: str


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def crusoe_vm(endpoint: dict) -> tuple[Row, object]:
    from crusoe_sdk import CrusoeClient

    client = CrusoeClient(endpoint["access_key_id"], endpoint["secret_key"], base_url=endpoint["url"],
                          project_id=endpoint["project_id"])
    op = client.begin_create_instance(name="demo-crusoe", type="h100-80gb-sxm-ib.8x", location="us-east1-a",
                                      ssh_public_key=SSH_KEY, image="ubuntu22.04:latest")
    say(f"crusoe: create accepted, operation {op.id}, VM {op.resource_id}")
    vm = op.result(timeout=600)
    row = Row("crusoe", vm.id, vm.name, vm.state.value, vm.type, vm.location, vm.reservation_id or "-")
    return row, lambda: client.begin_delete_instance(vm.id).wait(timeout=600)


def lambda_vm(endpoint: dict, time_scale: float) -> tuple[Row, object]:
    from lambda_sdk import LambdaClient, RateLimit

    limits = RateLimit(request_interval=1.0 * time_scale, launch_interval=12.0 * time_scale)
    client = LambdaClient(endpoint["api_key"], base_url=endpoint["url"], rate_limit=limits)
    op = client.launch_instance(region_name="us-south-2", instance_type_name="gpu_1x_h100_sxm5",
                                ssh_key_names=["default"], name="demo-lambda")
    say(f"lambda: launched {op.id} (booting)")
    vm = op.wait(timeout=600)
    row = Row("lambda", vm.id, vm.name or "", vm.status.value, vm.instance_type.name, vm.region.name,
              "reserved" if vm.is_reserved else "-")
    return row, lambda: client.terminate_instance(vm.id)


def nebius_vm(endpoint: dict) -> tuple[Row, object]:
    from nebius_sdk import NebiusClient
    from nebius_sdk.models import instance_state

    client = NebiusClient(endpoint["token"], target=endpoint["target"], parent_id=endpoint["project_id"],
                          subnet_id=endpoint["subnet_id"])
    op = client.begin_create_instance("demo-nebius", "gpu-h100-sxm", "1gpu-16vcpu-200gb")
    say(f"nebius: create accepted, operation {op.id}, instance {op.resource_id}")
    vm = op.result(timeout=600)
    shape = f"{vm.spec.resources.platform}/{vm.spec.resources.preset}"
    row = Row("nebius", vm.metadata.id, vm.metadata.name, instance_state(vm).name, shape, "eu-north1",
              vm.status.reservation_id or "-")
    return row, lambda: client.begin_delete_instance(vm.metadata.id).wait(timeout=600)


def print_table(rows: list[Row]) -> None:
    header = Row("CLOUD", "ID", "NAME", "STATE", "SHAPE", "REGION", "RESERVATION")
    table = [header, *rows]
    widths = [max(len(getattr(r, f)) for r in table) for f in Row.__dataclass_fields__]
    for r in table:
        cells = (getattr(r, f).ljust(w) for f, w in zip(Row.__dataclass_fields__, widths, strict=True))
        print("  ".join(cells).rstrip())


def run(state_dir: str, time_scale: float) -> int:
    from mock_clouds.admin import inventory
    from mock_clouds.runner import MockClouds

    with MockClouds(state_dir, time_scale=time_scale) as clouds:
        ep = clouds.endpoints
        say(f"mock clouds up: crusoe {ep['crusoe']['url']}, lambda {ep['lambda']['url']}, "
            f"nebius {ep['nebius']['target']} (time scale {time_scale})")
        with ThreadPoolExecutor(max_workers=3) as pool:
            futures = [pool.submit(crusoe_vm, ep["crusoe"]), pool.submit(lambda_vm, ep["lambda"], time_scale),
                       pool.submit(nebius_vm, ep["nebius"])]
            created = [f.result() for f in futures]
        say("all three VMs are running:")
        print_table([row for row, _ in created])
        with ThreadPoolExecutor(max_workers=3) as pool:
            list(pool.map(lambda item: item[1](), created))
        say("deleted all three")
        leftovers = [r for r in inventory(clouds) if r["state"] not in ("deleting",)]
        if leftovers:
            say(f"LEAK: {leftovers}")
            return 1
        say("the clouds' inventory has no VM left running: nothing leaked")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-scale", type=float, default=0.05,
                        help="multiply simulated durations (0.05: a 180 s Lambda boot takes 9 s)")
    parser.add_argument("--state-dir", help="keep the mock clouds' state here (default: a temporary dir)")
    args = parser.parse_args()
    if args.time_scale <= 0:
        parser.error("--time-scale must be positive")
    if args.state_dir:
        return run(args.state_dir, args.time_scale)
    with tempfile.TemporaryDirectory(prefix="vm-demo-") as tmp:
        return run(tmp, args.time_scale)


if __name__ == "__main__":
    sys.exit(main())
