"""Nebius mock: IAM ProjectService and VPC SubnetService, what a client reads to find the tenant's region -> project
map and a project's subnet (real shapes: nebius/api `nebius/iam/v1/{project_service,container}.proto`,
`nebius/vpc/v1/{subnet_service,subnet}.proto`)."""

from __future__ import annotations

import grpc
import pytest
from mock_clouds.core.models import Provider
from mock_clouds.nebius import testkit
from mock_clouds.nebius._pb.nebius.iam import v1 as iam
from mock_clouds.nebius._pb.nebius.vpc import v1 as vpc

TENANT = "tenant-e00a1b2c3d4e5f6g7h"
OTHER_TENANT = "tenant-e00zz9yy8xx7ww6vv5"
OTHER_PROJECT = "project-e00othertenant0001"
DEFAULT_SUBNET = "vpcsubnet-e00defaultsubnet01"


def _projects(client: testkit.Client, tenant: str = TENANT, **fields) -> iam.ListProjectsResponse:
    return client.projects.list(iam.ListProjectsRequest(parent_id=tenant, **fields))


def _denied(method, request) -> testkit.Failure:
    failed = testkit.failure(method, request)
    assert failed.code == grpc.StatusCode.PERMISSION_DENIED, failed
    return failed


# ------------------------------------------------------------------------------------------------ projects
def test_a_tenants_projects_are_containers_with_their_region(nebius):
    """dstack `get_region_to_project_id_map` and SkyPilot `get_project_by_region` list the tenant's projects
    (`ProjectService.List(parent_id=tenant)`) and read `status.region` (container.proto: ContainerStatus.region)."""
    listed = _projects(nebius.client)
    assert listed.next_page_token == ""
    by_region = {p.status.region: p for p in listed.items}
    assert {r: p.metadata.id for r, p in by_region.items()} == nebius.projects
    assert set(by_region) == {"eu-north1", "eu-west1", "us-central1"}
    north = by_region["eu-north1"]
    assert (north.metadata.id, north.metadata.parent_id, north.metadata.name) == (
        nebius.project, TENANT, "default-project-eu-north1")
    assert north.spec.region == "eu-north1"
    assert north.status.container_state == iam.State.ACTIVE
    assert north.status.suspension_state == iam.SuspensionState.NONE
    assert OTHER_PROJECT not in {p.metadata.id for p in listed.items}


def test_projects_page(nebius):
    """ListProjectsRequest pages with page_size/page_token and next_page_token ("" on the last page), as every
    Nebius List (project_service.proto)."""
    first = _projects(nebius.client, page_size=2)
    assert len(first.items) == 2 and first.next_page_token
    second = _projects(nebius.client, page_size=2, page_token=first.next_page_token)
    assert len(second.items) == 1 and second.next_page_token == ""
    ids = [p.metadata.id for p in first.items + second.items]
    assert sorted(ids) == sorted(nebius.projects.values()) and len(set(ids)) == 3


def test_a_project_is_read_by_id_and_by_name(nebius):
    """ProjectService.Get(id) and GetByName(parent_id = tenant, name) return the same Container
    (project_service.proto)."""
    by_id = nebius.client.projects.get(iam.GetProjectRequest(id=nebius.projects["eu-west1"]))
    assert (by_id.metadata.parent_id, by_id.status.region) == (TENANT, "eu-west1")
    by_name = nebius.client.projects.get_by_name(
        iam.GetProjectByNameRequest(parent_id=TENANT, name="default-project-eu-west1"))
    assert by_name == by_id
    missing = testkit.failure(nebius.client.projects.get_by_name,
                              iam.GetProjectByNameRequest(parent_id=TENANT, name="no-such-project"))
    assert missing.code == grpc.StatusCode.NOT_FOUND


def test_a_caller_sees_only_its_own_tenant(nebius):
    """Nebius authorizes every call against the IAM hierarchy of its parent: another tenant's projects, or an unknown
    id, are refused alike (PERMISSION_DENIED with a PermissionDenied detail, nebius/common/v1/error.proto), so the
    API is no oracle for other tenants' ids."""
    failed = _denied(nebius.client.projects.list, iam.ListProjectsRequest(parent_id=OTHER_TENANT))
    assert failed.error.code == "PermissionDenied" and failed.error.service == "iam"
    assert failed.error.permission_denied.resource_id == OTHER_TENANT
    _denied(nebius.client.projects.get, iam.GetProjectRequest(id=OTHER_PROJECT))
    _denied(nebius.client.projects.get, iam.GetProjectRequest(id="project-e00doesnotexist00"))
    _denied(nebius.client.projects.get_by_name,
            iam.GetProjectByNameRequest(parent_id=OTHER_TENANT, name="other-tenant-project"))
    other = nebius.connect(nebius.token_of(OTHER_TENANT))
    assert [p.metadata.id for p in _projects(other, OTHER_TENANT).items] == [OTHER_PROJECT]
    _denied(other.projects.get, iam.GetProjectRequest(id=nebius.project))


def test_project_requests_need_their_fields(nebius):
    """`GetProjectByNameRequest.parent_id` and `name` are `required` (buf.validate in project_service.proto): a
    missing one is INVALID_ARGUMENT naming the field."""
    for method, request, field in (
        (nebius.client.projects.get, iam.GetProjectRequest(), "id"),
        (nebius.client.projects.list, iam.ListProjectsRequest(), "parent_id"),
        (nebius.client.projects.get_by_name, iam.GetProjectByNameRequest(parent_id=TENANT), "name"),
    ):
        failed = testkit.failure(method, request)
        assert failed.code == grpc.StatusCode.INVALID_ARGUMENT
        assert [v.field for v in failed.error.bad_request.violations] == [field]


# ------------------------------------------------------------------------------------------------ subnets
def test_each_project_has_its_default_subnet(nebius):
    """A new project comes with its network resources ("When you create a project, Virtual Networks automatically
    provides you with the required networking resources", docs.nebius.com/vpc/overview), the subnet named
    `default-subnet...` that dstack `get_default_subnet` picks from `SubnetService.List(parent_id=project)`."""
    [north] = nebius.client.subnets.list(vpc.ListSubnetsRequest(parent_id=nebius.projects["eu-north1"])).items
    assert (north.metadata.id, north.metadata.name, north.metadata.parent_id) == (
        DEFAULT_SUBNET, "default-subnet-eu-north1", nebius.projects["eu-north1"])
    assert north.spec.network_id.startswith("vpcnetwork-e00")
    assert north.status.state == vpc.SubnetStatusState.READY
    listed = nebius.client.subnets.list(vpc.ListSubnetsRequest(parent_id=nebius.projects["eu-west1"]))
    [west] = listed.items
    assert listed.next_page_token == ""
    assert west.metadata.id.startswith("vpcsubnet-e01") and west.metadata.name.startswith("default-subnet-")
    assert west.metadata.parent_id == nebius.projects["eu-west1"] and west.spec.network_id.startswith("vpcnetwork-e01")
    assert west.status.state == vpc.SubnetStatusState.READY
    again = nebius.client.subnets.list(vpc.ListSubnetsRequest(parent_id=nebius.projects["eu-west1"]))
    assert again.items == [west]  # the same subnet every time


def test_a_subnet_is_read_by_id_and_by_name(nebius):
    """SubnetService.Get(id) and GetByName(parent_id = project, name) (subnet_service.proto); an unknown id is
    NOT_FOUND."""
    by_id = nebius.client.subnets.get(vpc.GetSubnetRequest(id=DEFAULT_SUBNET))
    by_name = nebius.client.subnets.get_by_name(
        vpc.GetSubnetByNameRequest(parent_id=nebius.project, name="default-subnet-eu-north1"))
    assert by_id == by_name and by_id.metadata.parent_id == nebius.project
    missing = testkit.failure(nebius.client.subnets.get, vpc.GetSubnetRequest(id="vpcsubnet-e00nosuchsubnet0"))
    assert missing.code == grpc.StatusCode.NOT_FOUND and missing.error.service == "vpc"


def test_another_tenants_subnets_are_refused(nebius):
    """Reads under a project of another tenant are PERMISSION_DENIED, as every project-scoped call (auth)."""
    failed = _denied(nebius.client.subnets.list, vpc.ListSubnetsRequest(parent_id=OTHER_PROJECT))
    assert failed.error.service == "vpc" and failed.error.permission_denied.resource_id == OTHER_PROJECT
    [theirs] = nebius.connect(nebius.token_of(OTHER_TENANT)).subnets.list(
        vpc.ListSubnetsRequest(parent_id=OTHER_PROJECT)).items
    _denied(nebius.client.subnets.get, vpc.GetSubnetRequest(id=theirs.metadata.id))
    _denied(nebius.client.subnets.get_by_name, vpc.GetSubnetByNameRequest(parent_id=OTHER_PROJECT, name="x"))


def _two_subnets_no_default(state) -> None:
    state.providers[Provider.NEBIUS].extra["subnets"] = [
        {"id": "vpcsubnet-e00trainingsubnet1", "name": "training", "project": "project-e00z6b02t8ddk96c49"},
        {"id": "vpcsubnet-e00inferencesubnt", "name": "inference", "project": "project-e00z6b02t8ddk96c49",
         "network": "vpcnetwork-e00inferencenet01"},
        {"id": "vpcsubnet-e01unnamedsubnet01", "project": "project-e01k7q4m2w9x5v3c8b"},
    ]


@pytest.fixture
def custom(mock_clouds_factory):
    harness = testkit.Harness(mock_clouds_factory(providers=("nebius",), configure=_two_subnets_no_default))
    yield harness
    harness.close()


def test_a_world_may_give_a_project_its_own_subnets(custom):
    """Subnets can be created and the default one deleted (SubnetService.Create/Delete): a project may have several
    subnets and none named default-subnet... . A scenario that names a project's subnets replaces its default one;
    a subnet given without a name is named as the cloud names the one it creates."""
    listed = custom.client.subnets.list(vpc.ListSubnetsRequest(parent_id=custom.projects["eu-north1"]))
    assert {(s.metadata.id, s.metadata.name) for s in listed.items} == {
        ("vpcsubnet-e00trainingsubnet1", "training"), ("vpcsubnet-e00inferencesubnt", "inference")}
    assert {s.spec.network_id for s in listed.items if s.metadata.name == "inference"} == {
        "vpcnetwork-e00inferencenet01"}
    [unnamed] = custom.client.subnets.list(vpc.ListSubnetsRequest(parent_id=custom.projects["eu-west1"])).items
    assert unnamed.metadata.id == "vpcsubnet-e01unnamedsubnet01"
    assert unnamed.metadata.name.startswith("default-subnet-") and len(unnamed.metadata.name) > len("default-subnet-")
    [us] = custom.client.subnets.list(vpc.ListSubnetsRequest(parent_id=custom.projects["us-central1"])).items
    assert us.metadata.name.startswith("default-subnet-")  # a project the scenario does not name keeps its default


def test_subnets_page(custom):
    """ListSubnetsRequest pages with page_size/page_token (subnet_service.proto), like every Nebius List."""
    first = custom.client.subnets.list(vpc.ListSubnetsRequest(parent_id=custom.project, page_size=1))
    second = custom.client.subnets.list(
        vpc.ListSubnetsRequest(parent_id=custom.project, page_size=1, page_token=first.next_page_token))
    assert first.next_page_token and second.next_page_token == ""
    assert {first.items[0].metadata.name, second.items[0].metadata.name} == {"training", "inference"}
