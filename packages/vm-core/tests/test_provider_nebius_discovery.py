"""The Nebius adapter finds what a real profile does not say, over the wire against the Nebius mock: each region's
project (IAM ProjectService) and a project's subnet (VPC SubnetService), once per provider and only when needed;
the `projects` and `subnet_id` settings stay overrides."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import pytest
from mock_clouds.core.models import Faults, Project, Provider
from vm_core.errors import AuthError, ConfigError, UsageError
from vm_core.model import CreateSpec, ReservationMode, ReservationRequest
from vm_core.providers.nebius import NebiusProvider, plugin

WAIT = 60.0
NEBIUS = Provider.NEBIUS
TENANT = "tenant-e00a1b2c3d4e5f6g7h"
EU_NORTH1 = "project-e00z6b02t8ddk96c49"
EU_WEST1 = "project-e01k7q4m2w9x5v3c8b"
US_CENTRAL1 = "project-u00p3r8t5y1u7i4o2a"
ON_DEMAND = ReservationRequest(ReservationMode.NONE)


PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHZtLWNvcmUtcGxhY2Vob2xkZXIta2V5LW5vdC1yZWFs alice@laptop"


def spec(name: str, gpu: str = "H100", **kwargs: Any) -> CreateSpec:
    return CreateSpec(name=name, gpu=gpu, reservation=ON_DEMAND, ssh_public_key=PUBLIC_KEY, **kwargs)


def only_credentials(clouds: Any, **settings: Any) -> NebiusProvider:
    """A provider of a real-looking profile: a token, the API domain and the default project, nothing else."""
    endpoint = clouds.endpoints["nebius"]
    return plugin.connect({"token": endpoint["token"], "endpoint": endpoint["target"],
                           "project_id": endpoint["project_id"], "time_scale": 0.002, **settings})


def calls_during(clouds: Any, action: Callable[[], Any]) -> int:
    """How many calls the Nebius mock answered while `action` ran (each call counts one injected 1 ms latency)."""
    clouds.world.configure_faults(NEBIUS, Faults(latency_ms=1))
    before = clouds.world.faults[NEBIUS].counts["latency"]
    try:
        action()
    finally:
        clouds.world.configure_faults(NEBIUS, Faults())
    return clouds.world.faults[NEBIUS].counts["latency"] - before


# ------------------------------------------------------------------------------------------------ regions
def test_a_profile_with_only_credentials_and_project_id_knows_its_regions(mock_clouds: Any) -> None:
    """A tenant's projects and their regions are in IAM (`ProjectService.List(parent_id=tenant)`, Container
    `status.region`), as dstack `get_region_to_project_id_map` reads them; the default project's region first."""
    nebius = only_credentials(mock_clouds)
    assert {(o.region, o.shape) for o in nebius.offers("H100")} == {
        ("eu-north1", "gpu-h100-sxm/1gpu-16vcpu-200gb"), ("eu-north1", "gpu-h100-sxm/8gpu-128vcpu-1600gb"),
        ("eu-west1", "gpu-h100-sxm/1gpu-16vcpu-200gb")}
    assert {o.region for o in nebius.offers("B200")} == {"us-central1"}
    vm = nebius.begin_create(spec("west", gpu="H200", region="eu-west1")).wait(WAIT)
    assert (vm.region, vm.native.metadata.parent_id) == ("eu-west1", EU_WEST1)
    assert {(i.name, i.region) for i in nebius.list_instances()} == {("west", "eu-west1")}
    assert nebius.get_instance(vm.id).region == "eu-west1"
    assert nebius.find_instance("west").id == vm.id
    without_region = nebius.begin_create(spec("first-seller", gpu="B200")).wait(WAIT)  # only us-central1 sells it
    assert (without_region.region, without_region.native.metadata.parent_id) == ("us-central1", US_CENTRAL1)
    with pytest.raises(UsageError, match="'us-east1' has no project of this tenant; its regions: eu-north1, "
                                         "eu-west1, us-central1"):
        nebius.begin_create(spec("nowhere", region="us-east1"))
    assert nebius.account() == f"projects {EU_NORTH1}"  # no network call: the configured project only


def _two_regions(state: Any) -> None:
    state.providers[NEBIUS].projects = [p for p in state.providers[NEBIUS].projects if p.id != US_CENTRAL1]


def test_two_projects_in_two_regions(mock_clouds_factory: Callable[..., Any]) -> None:
    """Each project belongs to one region (docs.nebius.com/iam/overview); a tenant with two projects has two regions,
    and the default project's (CLI profile `parent-id`) is tried first."""
    clouds = mock_clouds_factory(configure=_two_regions, providers=("nebius",))
    nebius = only_credentials(clouds)
    assert [o.region for o in nebius.offers("H200", 1)] == ["eu-north1", "eu-west1"]
    from_paris = only_credentials(clouds, project_id=EU_WEST1)
    assert [o.region for o in from_paris.offers("H200", 1)] == ["eu-west1", "eu-north1"]
    vm = from_paris.begin_create(spec("paris-first", gpu="H200", gpu_count=1)).wait(WAIT)  # both sell it
    assert vm.region == "eu-west1"


def _second_north_project(state: Any) -> None:
    state.providers[NEBIUS].projects.append(
        Project(id="project-e00aaasecondnorth01", name="aaa-research", owner=TENANT, region="eu-north1"))


def test_several_projects_in_one_region(mock_clouds_factory: Callable[..., Any],
                                        caplog: pytest.LogCaptureFixture) -> None:
    """A tenant may have several projects in a region (projects isolate environments, docs.nebius.com/iam/overview):
    the default project is used there if it is one of them, else the first by name; the others are named under
    --debug (vm-core's loggers)."""
    caplog.set_level(logging.DEBUG, logger="vm_core")
    clouds = mock_clouds_factory(configure=_second_north_project, providers=("nebius",))
    north = only_credentials(clouds)
    vm = north.begin_create(spec("in-default", region="eu-north1")).wait(WAIT)
    assert vm.native.metadata.parent_id == EU_NORTH1
    assert "project-e00aaasecondnorth01 (aaa-research) is not used: project-e00z6b02t8ddk96c49 is the project " \
           "of eu-north1" in caplog.text
    caplog.clear()
    west = only_credentials(clouds, project_id=EU_WEST1)
    other = west.begin_create(spec("first-by-name", region="eu-north1")).wait(WAIT)
    assert other.native.metadata.parent_id == "project-e00aaasecondnorth01"  # "aaa-research" < "default-project-..."
    assert f"{EU_NORTH1} (default-project-eu-north1) is not used" in caplog.text


def test_the_projects_setting_replaces_discovery(mock_clouds: Any) -> None:
    """The `projects` table is the user's own region -> project map (kept from before IAM was read), so no IAM call
    is made and only its regions are used."""
    nebius = only_credentials(mock_clouds, projects={"eu-north1": EU_NORTH1})
    assert calls_during(mock_clouds, lambda: list(nebius.list_instances())) == 1  # InstanceService.List only
    with pytest.raises(UsageError, match="'eu-west1' is not configured; configured regions: eu-north1"):
        nebius.begin_create(spec("paris", gpu="H200", region="eu-west1"))


def test_a_default_project_of_another_tenant_is_an_auth_error(mock_clouds: Any) -> None:
    """IAM answers PERMISSION_DENIED for a project the credentials may not read (nebius/common/v1/error.proto
    PermissionDenied); the error names it, as for every call."""
    nebius = only_credentials(mock_clouds, project_id="project-e00othertenant0001")
    with pytest.raises(AuthError, match="project-e00othertenant0001"):
        nebius.offers("H100")


# ------------------------------------------------------------------------------------------------ once, when needed
def test_discovery_is_done_once_and_only_when_needed(mock_clouds: Any) -> None:
    """The project map costs ProjectService.Get + List once per provider, even for concurrent callers; a listing
    needs no subnet; a create needs its project's subnet (SubnetService.List) once."""
    nebius = only_credentials(mock_clouds, time_scale=1.0)  # PlatformService answers reused for 60 s
    # Get + List of the projects, then one InstanceService.List per region: no SubnetService call
    assert calls_during(mock_clouds, lambda: list(nebius.list_instances())) == 2 + 3
    again = only_credentials(mock_clouds, time_scale=1.0)

    def offers_in_threads() -> None:
        threads = [threading.Thread(target=again.offers, args=("H100",)) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    # once, plus one PlatformService.List per region and one price EstimateBatch per region selling an H100
    # (eu-north1, eu-west1): the billing calculator prices offers (real-clouds.md Part 2, D4)
    assert calls_during(mock_clouds, offers_in_threads) == 2 + 3 + 2
    first = calls_during(mock_clouds, lambda: again.begin_create(spec("once-1", region="eu-north1")))
    second = calls_during(mock_clouds, lambda: again.begin_create(spec("once-2", region="eu-north1")))
    assert (first, second) == (3, 1)  # SubnetService.List, ImageService.GetLatestByFamily, Create; then Create


# ------------------------------------------------------------------------------------------------ subnets
def test_a_create_uses_its_projects_default_subnet(mock_clouds: Any) -> None:
    """Each project is created with its network and its `default-subnet...` (docs.nebius.com/vpc/overview; dstack
    `get_default_subnet`), which SubnetService.List(parent_id=project) returns."""
    nebius = only_credentials(mock_clouds)
    north = nebius.begin_create(spec("north-subnet", region="eu-north1")).wait(WAIT)
    assert north.native.spec.network_interfaces[0].subnet_id == "vpcsubnet-e00defaultsubnet01"
    west = nebius.begin_create(spec("west-subnet", gpu="H200", region="eu-west1")).wait(WAIT)
    assert west.native.spec.network_interfaces[0].subnet_id.startswith("vpcsubnet-e01")


def _subnets(*entries: tuple[str, str]) -> Callable[[Any], None]:
    def configure(state: Any) -> None:
        state.providers[NEBIUS].extra["subnets"] = [{"id": i, "name": n, "project": EU_NORTH1} for i, n in entries]
    return configure


def test_two_subnets_and_no_default_is_a_config_error_naming_both(mock_clouds_factory: Callable[..., Any]) -> None:
    """A project's default subnet can be deleted and others made (SubnetService.Create/Delete); with several and
    none named default-subnet..., which one a VM belongs in is the user's choice (exit 4, naming them)."""
    clouds = mock_clouds_factory(providers=("nebius",), configure=_subnets(
        ("vpcsubnet-e00trainingsubnet1", "training"), ("vpcsubnet-e00inferencesubnt", "inference")))
    nebius = only_credentials(clouds)
    with pytest.raises(ConfigError) as err:
        nebius.begin_create(spec("which-subnet", region="eu-north1"))
    assert err.value.exit_code == 4
    assert ("Nebius project project-e00z6b02t8ddk96c49 (eu-north1) has 2 subnets and none is named default-subnet...: "
            "inference (vpcsubnet-e00inferencesubnt), training (vpcsubnet-e00trainingsubnet1); set the profile's "
            "subnet_id") in err.value.message
    assert clouds.world.vms(NEBIUS) == []
    chosen = only_credentials(clouds, subnet_id="vpcsubnet-e00trainingsubnet1")
    vm = chosen.begin_create(spec("training-vm", region="eu-north1")).wait(WAIT)
    assert vm.native.spec.network_interfaces[0].subnet_id == "vpcsubnet-e00trainingsubnet1"


def test_the_only_subnet_or_a_default_among_several_is_used(mock_clouds_factory: Callable[..., Any]) -> None:
    """SkyPilot takes the only subnet (`items[0]`), dstack the one named default-subnet... among several."""
    only = mock_clouds_factory(providers=("nebius",), configure=_subnets(("vpcsubnet-e00theonlysubnet01", "mine")))
    vm = only_credentials(only).begin_create(spec("the-only", region="eu-north1")).wait(WAIT)
    assert vm.native.spec.network_interfaces[0].subnet_id == "vpcsubnet-e00theonlysubnet01"
    several = mock_clouds_factory(providers=("nebius",), configure=_subnets(
        ("vpcsubnet-e00aaaaaaaaaaaaaa1", "apps"), ("vpcsubnet-e00defaultdefault1", "default-subnet-x7k2p9qa")))
    vm = only_credentials(several).begin_create(spec("the-default", region="eu-north1")).wait(WAIT)
    assert vm.native.spec.network_interfaces[0].subnet_id == "vpcsubnet-e00defaultdefault1"
