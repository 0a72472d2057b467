"""`/projects/{project_id}/networking/ib-networks`, `.../ib-partitions`, `.../vpc-networks` and `.../vpc-subnets`
(swagger shapes: `IBNetwork`, `IBPartition`, `IBPartitionsPostRequestV1Alpha5`, `VPCNetwork`, `VPCSubnet`, each
list `{"items": [...]}`).

IB networks: one per location that sells InfiniBand types (`-ib` in the name), id `vmdata.ib_network_id`, with
one `capacities` row per IB type whose `slice_type` is the type's name: dstack matches `slice_type` against the
instance type name (backends/crusoe/compute.py create_placement_group; the swagger's example is a description,
so the real form is an inference) and `quantity` is the VMs of that type free now.
IB partitions: created synchronously (the POST answers the `IBPartition`), names unique per project, deleted
with an empty 200; 400 while a live VM uses the partition; 404 when missing (clients treat it as gone).
VPC networks: the project's default network (`vmdata.default_network_id`), named `default-ethernet` (the
swagger's example name), its `cidr` the private range every location's default subnet lies in (172.27.0.0/16),
its `gateway` a stable id, its `subnets` the ids of those subnets. VPC subnets: the default subnet of each
location of that network. Both read-only in the mock (create, patch and delete are not served: mock limitation).
"""

from __future__ import annotations

import uuid
from typing import Any

from ..core.models import Provider, VMState
from ..core.world import World
from ..http import Response
from . import access, vmdata
from .access import Call
from .errors import bad_request, not_found
from .models import _Body

CRUSOE = Provider.CRUSOE
_PARTITIONS = "crusoe_ib_partitions"  # world.state.extra_state: partition id -> record
_SUBNET_PREFIX = 20
_NETWORK_CIDR = "172.27.0.0/16"  # holds every location's /20 (vmdata._PRIVATE_BASE)


class IBPartitionsPostRequest(_Body):
    name: str
    ib_network_id: str


def ib_networks(world: World) -> list[dict[str, object]]:
    config = world.config(CRUSOE)
    ib_types = [s.key for s in config.shapes if "-ib" in s.key]
    networks: list[dict[str, object]] = []
    for location in config.regions:
        rows = [{"quantity": world.on_demand_free(CRUSOE, location, t), "slice_type": t} for t in ib_types
                if any(c.shape == t and c.region == location for c in config.capacity)]
        if rows:
            networks.append({"id": vmdata.ib_network_id(location), "name": f"{location}-ib-network",
                             "location": location, "capacities": rows})
    return networks


def list_ib_networks(call: Call) -> Response:
    access.project(call)
    return Response(200, {"items": ib_networks(call.world)})


def get_ib_network(call: Call) -> Response:
    access.project(call)
    network_id = access.require_uuid(call.params["ib_network_id"], "ib network id")
    found = next((n for n in ib_networks(call.world) if n["id"] == network_id), None)
    if found is None:
        raise not_found(f"ib network {network_id} not found")
    return Response(200, found)


def _partitions(world: World) -> dict[str, dict[str, Any]]:
    table = world.state.extra_state.setdefault(_PARTITIONS, {})
    assert isinstance(table, dict)
    return table


def _public(partition: dict[str, Any]) -> dict[str, object]:
    return {"id": partition["id"], "name": partition["name"], "ib_network_id": partition["ib_network_id"]}


def partition_of(world: World, project_id: str, partition_id: str) -> dict[str, Any] | None:
    found = _partitions(world).get(partition_id)
    return found if found is not None and found["project"] == project_id else None


def create_ib_partition(call: Call) -> Response:
    proj = access.project(call)
    body: IBPartitionsPostRequest = call.body(IBPartitionsPostRequest)
    if not body.name.strip():
        raise bad_request("name must not be empty")
    network_id = access.require_uuid(body.ib_network_id, "ib network id")
    if not any(n["id"] == network_id for n in ib_networks(call.world)):
        raise bad_request(f"ib network {network_id} not found")
    if any(p["name"] == body.name and p["project"] == proj.id for p in _partitions(call.world).values()):
        raise bad_request(f"an ib partition named {body.name!r} already exists in this project")
    partition = {"id": str(uuid.uuid4()), "name": body.name, "ib_network_id": network_id, "project": proj.id}
    _partitions(call.world)[partition["id"]] = partition
    return Response(200, _public(partition))


def list_ib_partitions(call: Call) -> Response:
    proj = access.project(call)
    return Response(200, {"items": [_public(p) for p in _partitions(call.world).values() if p["project"] == proj.id]})


def _partition(call: Call) -> dict[str, Any]:
    proj = access.project(call)
    partition_id = access.require_uuid(call.params["ib_partition_id"], "ib partition id")
    found = partition_of(call.world, proj.id, partition_id)
    if found is None:
        raise not_found(f"ib partition {partition_id} not found")
    return found


def get_ib_partition(call: Call) -> Response:
    return Response(200, _public(_partition(call)))


def delete_ib_partition(call: Call) -> Response:
    partition = _partition(call)
    users = [vm.id for vm in call.world.vms(CRUSOE, partition["project"])
             if vm.state not in (VMState.DELETING, VMState.DELETED)
             and any(h.transport_partition_id == partition["id"] for h in vmdata.load(vm).host_channel_adapters)]
    if users:
        raise bad_request(f"ib partition {partition['id']} is in use by instance {users[0]}")
    del _partitions(call.world)[partition["id"]]
    return Response(200, {})


def _subnets(world: World, project_id: str) -> list[dict[str, object]]:
    return [{"id": vmdata.default_subnet_id(project_id, location), "name": f"default-subnet-{location}",
             "vpc_network_id": vmdata.default_network_id(project_id),
             "cidr": f"{vmdata.subnet_base(world, location)}/{_SUBNET_PREFIX}", "location": location,
             "nat_gateways": []}
            for location in world.config(CRUSOE).regions]


def list_vpc_subnets(call: Call) -> Response:
    proj = access.project(call)
    return Response(200, {"items": _subnets(call.world, proj.id)})


def get_vpc_subnet(call: Call) -> Response:
    return _one_of(call, _subnets(call.world, access.project(call).id), "vpc_subnet_id", "vpc subnet")


def _one_of(call: Call, items: list[dict[str, object]], param: str, what: str) -> Response:
    """The item of `items` whose id the path names (`param`): 400 for an id that is no UUID, 404 naming `what`."""
    wanted = access.require_uuid(call.params[param], f"{what} id")
    found = next((item for item in items if item["id"] == wanted), None)
    if found is None:
        raise not_found(f"{what} {wanted} not found")
    return Response(200, found)


def _networks(world: World, project_id: str) -> list[dict[str, object]]:
    network_id = vmdata.default_network_id(project_id)
    return [{"id": network_id, "name": "default-ethernet", "cidr": _NETWORK_CIDR,
             "gateway": str(uuid.uuid5(uuid.UUID(network_id), "gateway")),
             "subnets": [s["id"] for s in _subnets(world, project_id)]}]


def list_vpc_networks(call: Call) -> Response:
    proj = access.project(call)
    return Response(200, {"items": _networks(call.world, proj.id)})


def get_vpc_network(call: Call) -> Response:
    return _one_of(call, _networks(call.world, access.project(call).id), "vpc_network_id", "vpc network")
