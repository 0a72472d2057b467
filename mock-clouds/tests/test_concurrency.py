"""200 concurrent requests across the three mocks: no errors, and every VM accounted for exactly once."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import grpc
from mock_clouds.core.models import Capacity, Provider, RateLimit, WorldState
from mock_clouds.crusoe.testing import CrusoeClient, create_body, instances_path
from mock_clouds.lambda_cloud.testing import LambdaApi, launch_body
from mock_clouds.nebius._pb.nebius.compute import v1 as compute
from mock_clouds.nebius.testkit import Harness, create_request, instance_spec
from mock_clouds.runner import MockClouds

PER_CLOUD_CREATES = 40
READS = 200 - 3 * PER_CLOUD_CREATES


def roomy(state: WorldState) -> None:
    """Plenty of capacity and no rate limits, so every request is expected to succeed."""
    for provider in state.providers.values():
        provider.rate_limit = RateLimit()
    state.providers["crusoe"].capacity.append(Capacity(region="eu-iceland1-a", shape="l40s-48gb.1x", quantity=500))
    state.providers["lambda"].capacity.append(Capacity(region="us-east-1", shape="gpu_1x_a10", quantity=500))
    state.providers["nebius"].capacity.append(Capacity(region="eu-north1", shape="cpu-d3/4vcpu-16gb", quantity=500))


def test_two_hundred_concurrent_requests(mock_clouds_factory, tmp_path) -> None:
    clouds: MockClouds = mock_clouds_factory(tmp_path, configure=roomy)
    crusoe_ep = clouds.endpoints["crusoe"]
    crusoe = CrusoeClient(crusoe_ep["url"].removesuffix("/v1alpha5"), crusoe_ep["access_key_id"],
                          crusoe_ep["secret_key"])
    project = crusoe_ep["project_id"]
    lam = LambdaApi(clouds)
    nebius = Harness(clouds)
    start = threading.Barrier(200)

    def crusoe_create(i: int) -> bool:
        start.wait()
        return crusoe.post(instances_path(project), create_body(f"c-{i}")).status_code == 200

    def lambda_launch(i: int) -> bool:
        start.wait()
        body = launch_body(name=f"l-{i}")
        return lam.call("POST", "/instance-operations/launch", json=body, retry_429=False).status_code == 200

    def nebius_create(i: int) -> bool:
        start.wait()
        spec = instance_spec("cpu-d3", "4vcpu-16gb")
        return bool(nebius.client.instances.create(create_request(nebius.project, f"n-{i}", spec)).resource_id)

    def read(i: int) -> bool:
        start.wait()
        if i % 3 == 0:
            return crusoe.get(instances_path(project)).status_code == 200
        if i % 3 == 1:
            return lam.call("GET", "/instances", retry_429=False).status_code == 200
        try:
            nebius.client.instances.list(compute.ListInstancesRequest(parent_id=nebius.project))
        except grpc.RpcError:
            return False
        return True

    jobs = [(crusoe_create, i) for i in range(PER_CLOUD_CREATES)]
    jobs += [(lambda_launch, i) for i in range(PER_CLOUD_CREATES)]
    jobs += [(nebius_create, i) for i in range(PER_CLOUD_CREATES)]
    jobs += [(read, i) for i in range(READS)]
    with ThreadPoolExecutor(max_workers=200) as pool:
        results = list(pool.map(lambda job: job[0](job[1]), jobs))
    nebius.close()

    assert results.count(True) == 200
    with clouds.world.tx() as world:
        names = sorted(vm.name for p in Provider for vm in world.vms(p))
    expected = sorted(f"{prefix}-{i}" for prefix in "cln" for i in range(PER_CLOUD_CREATES))
    assert names == expected

    clouds.stop()
    restarted = mock_clouds_factory(tmp_path)
    with restarted.world.tx() as world:
        assert sorted(vm.name for p in Provider for vm in world.vms(p)) == expected
