"""`vm fleet create --placement cluster` on Nebius 8-GPU VMs puts them in one GPU cluster on the InfiniBand fabric of
their platform and region (docs.nebius.com/compute/clusters/gpu#fabrics, the table SkyPilot's
`sky/provision/nebius/constants.py` and gpuhunt's INFINIBAND_FABRICS keep: fabric-2 serves gpu-h100-sxm in
eu-north1), as SkyPilot makes one GpuCluster per cluster; the fleet's destroy deletes that cluster and never one
that does not carry the fleet's id (real-clouds.md Part 2, D4 and section 4)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from nebius_sdk import NebiusClient

from .conftest import VmHome


@contextmanager
def _client(vm: VmHome) -> Iterator[NebiusClient]:
    endpoint = vm.endpoints()["nebius"]
    with NebiusClient(endpoint["token"], target=endpoint["target"], parent_id=endpoint["project_id"]) as client:
        yield client


def test_a_cluster_fleet_joins_its_own_gpu_cluster_which_its_destroy_deletes(fresh_home: VmHome) -> None:
    vm = fresh_home
    vm.ok("providers")  # starts the mock clouds
    with _client(vm) as client:
        other = client.begin_create_gpu_cluster("someone-elses", "fabric-2",
                                                labels={"vm-fleet": "ib"}).result(timeout=30)
    assert other.metadata is not None
    made = vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "2", "--placement", "cluster",
                 "--providers", "nebius", "--name", "ib", "-o", "json").json()
    members = sorted(m["id"] for m in made["members"])
    with _client(vm) as client:
        clusters = [c for c in client.list_gpu_clusters() if c.metadata and c.metadata.id != other.metadata.id]
    assert len(clusters) == 1, clusters
    [mine] = clusters
    assert mine.metadata is not None and mine.spec is not None and mine.status is not None
    assert mine.spec.infiniband_fabric == "fabric-2"
    assert mine.metadata.labels == {"vm-fleet": "ib", "vm-fleet-id": made["id"]}
    assert sorted(mine.status.instances) == members

    vm.ok("fleet", "destroy", "ib")
    with _client(vm) as client:
        left = [c.metadata.id for c in client.list_gpu_clusters() if c.metadata]
    assert left == [other.metadata.id]  # same fleet name, no fleet id: not the fleet's
