"""Crusoe IB partitions as the placement group of `--placement cluster` fleets, over the wire against the mock.

Source of the real behaviour: dstack's Crusoe cluster placement (backends/crusoe/compute.py
create_placement_group: the location's IB network whose `capacities[].slice_type` is the type, a partition on it,
then `host_channel_adapters: [{ib_partition_id}]` at create; research real-clouds.md D8, crusoe.md section 6).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from vm_core.errors import VmError
from vm_core.model import CreateSpec
from vm_core.provider import SupportsPlacementGroups
from vm_core.providers.crusoe import CrusoeProvider

WAIT = 60.0
EAST = "us-east1-a"
H100_8X = "h100-80gb-sxm-ib.8x"
LABELS = {"vm-fleet": "ring", "vm-fleet-id": "abcdefgh"}


@pytest.fixture
def clouds(mock_clouds_factory: Callable[..., Any]) -> Any:
    return mock_clouds_factory(providers=("crusoe",))


@pytest.fixture
def crusoe(clouds: Any, connect: Callable[..., Any]) -> CrusoeProvider:
    return connect(clouds, "crusoe")


def partitions(crusoe: CrusoeProvider) -> dict[str, str]:
    """The project's IB partitions, name -> id (what the cloud says, through the SDK)."""
    return {p.name: p.id for p in crusoe._client.list_ib_partitions()}


def test_a_cluster_fleet_gets_one_partition_named_after_its_id_per_location(crusoe: CrusoeProvider) -> None:
    """The fleet's partition is made on the location's IB network for the type, and found again by its name
    (which carries the fleet's id) rather than made twice."""
    assert isinstance(crusoe, SupportsPlacementGroups)
    first = crusoe.placement_group(LABELS, EAST, H100_8X)
    assert first is not None and partitions(crusoe) == {f"ring--abcdefgh-ib-{EAST}": first}
    assert crusoe.placement_group(LABELS, EAST, H100_8X) == first
    [network] = [n for n in crusoe._client.list_ib_networks() if n.location == EAST]
    assert crusoe._client.get_ib_partition(first).ib_network_id == network.id


def test_types_outside_infiniband_clusters_need_no_partition(crusoe: CrusoeProvider) -> None:
    """Only 8-GPU `-ib` types join a fabric: an L40S or the 4-GPU GB200 NVL type get none, nor does a fleet
    recorded without an id (its name proves nothing)."""
    assert crusoe.placement_group(LABELS, "eu-iceland1-a", "l40s-48gb.8x") is None
    assert crusoe.placement_group(LABELS, "us-southcentral1-a", "gb200-186gb-nvl-ib.4x") is None
    assert crusoe.placement_group({"vm-fleet": "old"}, EAST, H100_8X) is None
    assert partitions(crusoe) == {}


def test_members_are_created_on_the_partition_and_it_goes_with_the_fleet(crusoe: CrusoeProvider,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    """`CreateSpec.placement_group` becomes the create's host channel adapter; the fleet's partitions are deleted
    once its VMs are gone (a partition in use is refused by the cloud), never one without the fleet's id."""
    partition = crusoe.placement_group(LABELS, EAST, H100_8X)
    assert partition is not None
    network = next(n for n in crusoe._client.list_ib_networks() if n.location == EAST)
    foreign = crusoe._client.create_ib_partition(name="ring-by-hand", ib_network_id=network.id).id
    vm = crusoe.begin_create(CreateSpec(name="ring--abcdefgh-0", gpu="H100", gpu_count=8, region=EAST,
                                        placement_group=partition)).wait(WAIT)
    assert [h.ib_partition_id for h in vm.native.host_channel_adapters] == [partition]
    with pytest.raises(VmError, match="in use"):
        crusoe.delete_placement_groups(LABELS)
    crusoe.begin_destroy(vm.id).wait(WAIT)
    assert crusoe.delete_placement_groups(LABELS) == [partition]
    assert partitions(crusoe) == {"ring-by-hand": foreign}
    assert f"IB partition ring-by-hand ({foreign}) was left alone: its name does not carry the id of fleet ring" \
        in caplog.text
    assert crusoe.delete_placement_groups(LABELS) == []  # already gone: nothing to do
