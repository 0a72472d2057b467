"""Nebius' own Python SDK (`nebius` on PyPI) reads the mock's IAM tenants and projects and VPC subnets the way dstack
and gpuhunt do (`backends/nebius/resources.py`: `get_region_to_project_id_map`, `get_default_subnet`; gpuhunt
`get_sample_projects`), makes and deletes a boot disk as dstack does (`resources.py:283`, `compute.py:334-336`), and
prices presets with the billing calculators as gpuhunt (`get_price`, v1alpha1 Estimate) and SkyPilot
(`fetch_nebius.py:281-283`, v1 EstimateBatch) do."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mock_clouds.runner import MockClouds
from nebius.aio.service_error import RequestError
from nebius.aio.token.static import Bearer
from nebius.aio.token.token import Token
from nebius.api.nebius.billing import v1 as billing_v1
from nebius.api.nebius.billing import v1alpha1 as billing_v1alpha1
from nebius.api.nebius.common.v1 import ResourceMetadata
from nebius.api.nebius.compute.v1 import (
    CreateDiskRequest,
    CreateInstanceRequest,
    DeleteDiskRequest,
    DiskServiceClient,
    DiskSpec,
    GetDiskRequest,
    InstanceSpec,
    PreemptibleSpec,
    ResourcesSpec,
    SourceImageFamily,
)
from nebius.api.nebius.iam.v1 import (
    GetProjectRequest,
    ListProjectsRequest,
    ListTenantsRequest,
    ProjectServiceClient,
    TenantServiceClient,
)
from nebius.api.nebius.vpc.v1 import ListSubnetsRequest, SubnetServiceClient, SubnetStatus
from nebius.base.options import INSECURE
from nebius.base.protos.dynamic import REGISTRY
from nebius.base.resolver import Constant
from nebius.sdk import SDK

TENANT = "tenant-e00a1b2c3d4e5f6g7h"


class Nebius:
    """The official SDK pointed at the mock for every service (plaintext: the SDK's INSECURE address option)."""

    def __init__(self, clouds: MockClouds) -> None:
        endpoint = clouds.endpoints["nebius"]
        self.project = str(endpoint["project_id"])
        target = str(endpoint["target"])
        self.sdk = SDK(credentials=Bearer(Token(str(endpoint["token"]))), resolver=Constant(target),
                       address_options={target: [(INSECURE, True)]}, user_agent_prefix="vm-conformance/1.0")
        self.projects = ProjectServiceClient(self.sdk)
        self.subnets = SubnetServiceClient(self.sdk)
        self.tenants = TenantServiceClient(self.sdk)
        self.disks = DiskServiceClient(self.sdk)
        self.calculator_v1alpha1 = billing_v1alpha1.CalculatorServiceClient(self.sdk)
        self.calculator = billing_v1.CalculatorServiceClient(self.sdk)

    def close(self) -> None:
        self.sdk.sync_close()


@pytest.fixture
def nebius(mock_clouds_factory) -> Iterator[Nebius]:
    client = Nebius(mock_clouds_factory(providers=("nebius",)))
    yield client
    client.close()


def test_regions_of_the_tenants_projects(nebius: Nebius) -> None:
    """dstack: `ProjectServiceClient.list(ListProjectsRequest(parent_id=tenant_id, page_size=999))`, then each
    project's `status.region`."""
    default = nebius.projects.get(GetProjectRequest(id=nebius.project)).wait()
    assert default.metadata.parent_id == TENANT
    listed = nebius.projects.list(ListProjectsRequest(parent_id=default.metadata.parent_id, page_size=999)).wait()
    assert {p.status.region: p.metadata.id for p in listed.items}["eu-north1"] == nebius.project
    assert sorted(p.status.region for p in listed.items) == ["eu-north1", "eu-west1", "us-central1"]
    assert listed.next_page_token == ""


def test_the_default_subnet_of_a_project(nebius: Nebius) -> None:
    """dstack: `SubnetServiceClient.list(ListSubnetsRequest(parent_id=project_id, page_size=999))`, then the subnet
    whose name starts with `default-subnet`."""
    listed = nebius.subnets.list(ListSubnetsRequest(parent_id=nebius.project, page_size=999)).wait()
    [default] = [s for s in listed.items if s.metadata.name.startswith("default-subnet")]
    assert default.metadata.id.startswith("vpcsubnet-") and default.spec.network_id.startswith("vpcnetwork-")
    assert default.status.state == SubnetStatus.State.READY


def test_another_tenant_is_permission_denied(nebius: Nebius) -> None:
    """The SDK decodes the refusal as a RequestError with the gRPC code (pysdk `aio/service_error.py`)."""
    with pytest.raises(RequestError) as denied:
        nebius.projects.list(ListProjectsRequest(parent_id="tenant-e00zz9yy8xx7ww6vv5")).wait()
    assert denied.value.status.code.name == "PERMISSION_DENIED"


def test_one_tenant_then_its_projects_as_gpuhunt(nebius: Nebius) -> None:
    """gpuhunt `get_sample_projects`: `TenantServiceClient.list(ListTenantsRequest())` must give exactly one tenant,
    whose projects map each `status.region` to a project."""
    tenants = nebius.tenants.list(ListTenantsRequest()).wait()
    assert [t.metadata.id for t in tenants.items] == [TENANT]
    projects = nebius.projects.list(ListProjectsRequest(parent_id=tenants.items[0].metadata.id)).wait()
    assert {p.status.region for p in projects.items} == {"eu-north1", "eu-west1", "us-central1"}


def test_a_boot_disk_is_created_and_deleted_as_dstack_does(nebius: Nebius) -> None:
    """dstack `create_disk` (`resources.py:283`): DiskService.Create with a size, a type and an image family, waited
    for; after the VM, `delete_disk` (`compute.py:334-336`), after which the disk is NOT_FOUND."""
    request = CreateDiskRequest(
        metadata=ResourceMetadata(parent_id=nebius.project, name="dstack-boot-1"),
        spec=DiskSpec(size_gibibytes=100, type=DiskSpec.DiskType.NETWORK_SSD,
                      source_image_family=SourceImageFamily(image_family="ubuntu22.04-cuda12")))
    operation = nebius.disks.create(request).wait()
    operation.sync_wait()
    assert operation.successful()
    disk = nebius.disks.get(GetDiskRequest(id=operation.resource_id)).wait()
    assert disk.status.size_bytes == 100 << 30 and disk.metadata.name == "dstack-boot-1"
    nebius.disks.delete(DeleteDiskRequest(id=disk.metadata.id)).wait().sync_wait()
    with pytest.raises(RequestError) as gone:
        nebius.disks.get(GetDiskRequest(id=disk.metadata.id)).wait()
    assert gone.value.status.code.name == "NOT_FOUND"


def _instance(project: str, preset: str, spot: bool) -> CreateInstanceRequest:
    return CreateInstanceRequest(
        metadata=ResourceMetadata(parent_id=project),
        spec=InstanceSpec(resources=ResourcesSpec(platform="gpu-h100-sxm", preset=preset),
                          preemptible=PreemptibleSpec() if spot else None))


def test_prices_as_gpuhunt_and_skypilot_ask_for_them(nebius: Nebius) -> None:
    """gpuhunt: `Estimate(EstimateRequest(resource_spec=ResourceSpec(compute_instance_spec=...)))` and
    `float(estimate.hourly_cost.general.total.cost)`, once more with `preemptible=PreemptibleSpec()` for spot;
    SkyPilot: `billing.v1` EstimateBatch with the specs packed in Any, one ResourceCost each."""
    def estimate(spot: bool) -> float:
        spec = billing_v1alpha1.ResourceSpec(compute_instance_spec=_instance(nebius.project, "1gpu-16vcpu-200gb", spot))
        answer = nebius.calculator_v1alpha1.estimate(billing_v1alpha1.EstimateRequest(resource_spec=spec)).wait()
        return float(answer.hourly_cost.general.total.cost)

    assert (estimate(False), estimate(True)) == (2.95, 1.25)
    packed = [billing_v1.ResourceSpec(spec=REGISTRY.pack_any(_instance(nebius.project, preset, False)))
              for preset in ("1gpu-16vcpu-200gb", "8gpu-128vcpu-1600gb")]
    batch = nebius.calculator.estimate_batch(billing_v1.EstimateBatchRequest(resource_specs=packed)).wait()
    assert [float(c.general.total.cost) for c in batch.resource_costs] == [2.95, 23.6]
    assert batch.currency == "USD"
