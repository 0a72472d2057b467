"""Where to create: a tenant's projects and their regions (IAM ProjectService) and a project's subnets (VPC
SubnetService), against the Nebius mock over the wire, each at its own service address."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from nebius_sdk import NebiusClient, PermissionDenied, Unreachable
from nebius_sdk.models import Project, Subnet, SubnetState

TENANT = "tenant-e00a1b2c3d4e5f6g7h"
OTHER_TENANT = "tenant-e00zz9yy8xx7ww6vv5"
OTHER_PROJECT = "project-e00othertenant0001"
SUBNET = "vpcsubnet-e00defaultsubnet01"


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("grpc_proxy", "https_proxy", "HTTPS_PROXY", "http_proxy", "no_grpc_proxy", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)


def test_a_project_says_its_tenant_and_region(client: NebiusClient, nebius_endpoint: dict[str, Any]) -> None:
    """ProjectService.Get returns the project's Container: metadata.parent_id is its tenant and status.region its
    region (nebius/api iam/v1/container.proto; dstack reads `status.region`)."""
    project = client.get_project(nebius_endpoint["project_id"])
    assert isinstance(project, Project)
    assert (project.id, project.name, project.tenant_id, project.region) == (
        nebius_endpoint["project_id"], "default-project-eu-north1", TENANT, "eu-north1")
    assert project.raw.metadata.id == project.id


def test_a_tenants_projects_are_listed_across_pages(client: NebiusClient) -> None:
    """ProjectService.List(parent_id=tenant) pages with next_page_token (project_service.proto), which dstack's
    `get_region_to_project_id_map` walks."""
    pager = client.list_projects(TENANT, page_size=2)
    pages = list(pager.by_page())
    assert [len(page.items) for page in pages] == [2, 1]
    projects = pager.to_list()
    assert {p.region: p.name for p in projects} == {
        "eu-north1": "default-project-eu-north1", "eu-west1": "default-project-eu-west1",
        "us-central1": "default-project-us-central1"}
    assert {p.tenant_id for p in projects} == {TENANT}


def test_another_tenant_is_permission_denied(client: NebiusClient) -> None:
    """Nebius authorizes against the IAM hierarchy: another tenant's projects are PERMISSION_DENIED
    (nebius/common/v1/error.proto PermissionDenied)."""
    with pytest.raises(PermissionDenied):
        client.list_projects(OTHER_TENANT).to_list()
    with pytest.raises(PermissionDenied):
        client.get_project(OTHER_PROJECT)
    with pytest.raises(PermissionDenied):
        client.list_subnets(OTHER_PROJECT).to_list()


def test_a_projects_subnets(client: NebiusClient, nebius_endpoint: dict[str, Any]) -> None:
    """SubnetService.List(parent_id=project) (vpc/v1/subnet_service.proto); the subnet a project is created with is
    named `default-subnet...` (dstack `get_default_subnet`), READY, in a `vpcnetwork-` network (subnet.proto)."""
    [subnet] = client.list_subnets().to_list()  # the client's default project
    assert isinstance(subnet, Subnet)
    assert (subnet.id, subnet.name, subnet.project_id, subnet.state) == (
        SUBNET, "default-subnet-eu-north1", nebius_endpoint["project_id"], SubnetState.READY)
    assert subnet.network_id.startswith("vpcnetwork-")
    west = client.get_project("project-e01k7q4m2w9x5v3c8b")
    [other] = client.list_subnets(west.id).to_list()
    assert other.project_id == west.id and other.name.startswith("default-subnet-") and other.id != SUBNET


def test_the_tls_mock_serves_projects_under_its_ca(start_mock: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `localhost` domain serves every service (pysdk's resolver is bypassed for a local server) over TLS,
    verified against SSL_CERT_FILE as every channel of the client is."""
    clouds = start_mock(tls=True)
    monkeypatch.delenv("GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", raising=False)  # it would come first
    monkeypatch.setenv("SSL_CERT_FILE", clouds.endpoints["ca_file"])
    endpoint = clouds.endpoints["nebius"]
    with NebiusClient(endpoint["token"], domain=endpoint["target"], parent_id=endpoint["project_id"]) as client:
        assert client.get_project(endpoint["project_id"]).region == "eu-north1"
        assert [s.id for s in client.list_subnets()] == [SUBNET]


@pytest.mark.parametrize(("read", "address"), [
    (lambda c: c.list_projects(TENANT).to_list(), "cpl.iam.nowhere.invalid:443"),
    (lambda c: c.get_project("project-e00a"), "cpl.iam.nowhere.invalid:443"),
    (lambda c: c.list_subnets("project-e00a").to_list(), "vpc.nowhere.invalid:443"),
])
def test_each_service_has_its_own_address(read: Any, address: str) -> None:
    """pysdk resolves `<api_service_name>.<domain>`: ProjectService's option is `cpl.iam`, SubnetService's
    package gives `vpc` (project_service.proto, subnet_service.proto; nebius/api endpoints.md)."""
    with NebiusClient("t", domain="nowhere.invalid:443") as client, pytest.raises(Unreachable) as info:
        read(client)
    assert info.value.target == address and client.target == "compute.nowhere.invalid:443"


def test_every_services_channel_has_the_same_keepalive_and_proxy(monkeypatch: pytest.MonkeyPatch,
                                                                closed_port: int) -> None:
    """pysdk opens each service's channel with the same options (aio/keepalive.py), and HTTPS_PROXY is honoured for
    every host, as requests reads it: the IAM and VPC channels are opened like compute's, on their first call."""
    opened: dict[str, dict[str, Any]] = {}
    real = grpc.secure_channel

    def recording(target: str, credentials: Any, options: Any = None, **kwargs: Any) -> Any:
        opened[target] = dict(options or ())
        return real(target, credentials, options=options, **kwargs)

    monkeypatch.setattr(grpc, "secure_channel", recording)
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{closed_port}")
    with NebiusClient("t", domain="api.example.invalid:443") as client:
        assert list(opened) == ["compute.api.example.invalid:443"]  # nothing else before a call needs it
        for read in (lambda: client.list_projects(TENANT).to_list(), lambda: client.list_subnets("project-e00a")
                     .to_list()):
            with pytest.raises(Unreachable):
                read()
    assert list(opened) == ["compute.api.example.invalid:443", "cpl.iam.api.example.invalid:443",
                            "vpc.api.example.invalid:443"]
    first, *others = opened.values()
    assert first["grpc.http_proxy"] == f"http://127.0.0.1:{closed_port}" and first["grpc.keepalive_time_ms"] == 20_000
    assert all(options == first for options in others)
