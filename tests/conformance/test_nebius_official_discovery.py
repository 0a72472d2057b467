"""Nebius' own Python SDK (`nebius` on PyPI) reads the mock's IAM projects and VPC subnets the way dstack does
(`backends/nebius/resources.py`: `get_region_to_project_id_map`, `get_default_subnet`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mock_clouds.runner import MockClouds
from nebius.aio.service_error import RequestError
from nebius.aio.token.static import Bearer
from nebius.aio.token.token import Token
from nebius.api.nebius.iam.v1 import GetProjectRequest, ListProjectsRequest, ProjectServiceClient
from nebius.api.nebius.vpc.v1 import ListSubnetsRequest, SubnetServiceClient, SubnetStatus
from nebius.base.options import INSECURE
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
