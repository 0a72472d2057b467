"""`/projects/{project_id}/compute/vms/instances`: list, get, create and delete VMs.

Create, update and delete answer HTTP 200 `{"operation": Operation}` at once, IN_PROGRESS with `metadata.id`
set to the VM id; clients poll `.../instances/operations/{operation_id}`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

from ..core.models import VM, CreateFailure, OpKind, Provider
from ..core.placement import ReservationChoice
from ..core.world import World, region_matches
from ..http import Response
from . import access, images, networking, paging, render, storage, vmdata
from .access import Call
from .errors import bad_request
from .models import InstancesPostRequest, ReservationSpecification

CRUSOE = Provider.CRUSOE
DEFAULT_IMAGE = images.DEFAULT_IMAGE
SSH_KEY_PATTERN = re.compile(
    r"^(ssh-(rsa|ed25519|dss)|ecdsa-sha2-nistp(256|384|521)|sk-\S+@openssh\.com) [A-Za-z0-9+/=]+( .*)?$"
)

# List filters: query parameter -> predicate on one VM given the requested values.
_FILTERS: dict[str, Callable[[VM, list[str]], bool]] = {
    "ids": lambda vm, values: vm.id in values,
    "names": lambda vm, values: vm.name in values,
    "types": lambda vm, values: vm.shape in values,
    "locations": lambda vm, values: region_matches(vm.region, values),  # zone or region ("us-east1")
    "states": lambda vm, values: render.STATE_NAMES[vm.state] in values,
    "nvlink_domain_ids": lambda vm, values: vmdata.load(vm).nvlink_domain_id in values,
}


def list_instances(call: Call) -> Response:
    proj = access.project(call)
    filters = {name: call.query_list(name) for name in _FILTERS}
    vms = [
        vm
        for vm in call.world.vms(CRUSOE, proj.id)
        if all(_FILTERS[name](vm, values) for name, values in filters.items() if values)
    ]
    page = paging.paginate(
        vms,
        sort=call.query("sort"),
        limit=call.query("limit"),
        next_token=call.query("next_token"),
        prev_token=call.query("prev_token"),
    )
    return Response(
        200,
        {
            "items": [render.instance(call.world, vm) for vm in page.items],
            "next_page_token": page.next_token,
            "prev_page_token": page.prev_token,
        },
    )


def get_instance(call: Call) -> Response:
    vm = access.instance(call, access.project(call))
    return Response(200, render.instance(call.world, vm))


def delete_instance(call: Call) -> Response:
    """Always accepted: a delete aborts the operation in flight (a half-created VM can be cleaned up)."""
    vm = access.instance(call, access.project(call))
    op = call.world.begin(CRUSOE, vm.id, OpKind.DELETE, created_by=call.owner)
    return Response(200, {"operation": render.operation(call.world, op)})


def create_instance(call: Call) -> Response:
    """Capacity is taken now; without room the operation FAILS `out_of_stock` after the create duration
    and the VM disappears, as on the real service."""
    proj = access.project(call)
    body: InstancesPostRequest = call.body(InstancesPostRequest)
    _validate_create(call.world, proj.id, body)
    disks = storage.attach_at_create(call, proj.id, body.location, body.disks)
    _check_partitions(call, proj.id, body)
    choice = reservation_choice(body.reservation_specification)
    vm, op = call.world.create_vm(
        CRUSOE,
        scope=proj.id,
        region=body.location,
        shape=body.type_,
        name=body.name,
        choice=choice,
        on_failure=CreateFailure.REMOVE,
        fail_fast=False,
        native=_native(call.world, proj.id, body),
        created_by=call.owner,
    )
    storage.record_attachments(call.world, vm.id, disks)
    return Response(200, {"operation": render.operation(call.world, op)})


def _check_partitions(call: Call, project_id: str, body: InstancesPostRequest) -> None:
    """Each host channel adapter names an IB partition of the project on the location's IB network."""
    for hca in body.host_channel_adapters:
        partition_id = hca.transport_partition_id or hca.ib_partition_id
        partition = networking.partition_of(call.world, project_id, partition_id)
        if partition is None:
            raise bad_request(f"ib partition {partition_id!r} not found")
        if partition["ib_network_id"] != vmdata.ib_network_id(body.location):
            raise bad_request(f"ib partition {partition_id} is not on the ib network of {body.location}")


def reservation_choice(spec: ReservationSpecification | None) -> ReservationChoice:
    """`lowest_cost` (also when absent, `{}` or `{"id"}`): cheapest matching reservation with room, else on-demand;
    `on_demand`: never a reservation.

    `{"id"}` is ignored, as the real backend has ignored it since early 2026: Terraform's provider warns "The
    requested reservation_id was ignored by the backend" when the created VM is not on it
    (terraform-provider-crusoe internal/vm/vm_resource.go:468-476). The mock neither checks nor uses the id (the
    real backend's checks of an ignored id are not known: an inference); `id` with `selection_strategy` is still
    refused, as the spec calls them incompatible (client-go swagger model_reservation_specification.go:12).
    """
    if spec is None:
        return ReservationChoice()
    if spec.id is not None and spec.selection_strategy is not None:
        raise bad_request("reservation_specification: id and selection_strategy are mutually exclusive")
    if spec.selection_strategy == "on_demand":
        return ReservationChoice(use_reservations=False)
    return ReservationChoice()


def _validate_create(world: World, project_id: str, body: InstancesPostRequest) -> None:
    config = world.config(CRUSOE)
    if not body.name.strip():
        raise bad_request("name must not be empty")
    if world.shape(CRUSOE, body.type_) is None:
        raise bad_request(f"invalid vm type {body.type_!r}")
    if body.location not in config.regions:
        raise bad_request(f"invalid location {body.location!r}")
    if not SSH_KEY_PATTERN.match(body.ssh_public_key.strip()):
        raise bad_request("invalid ssh_public_key")
    _validate_image(world, body)
    if len(body.network_interfaces) > 1:
        raise bad_request("at most one network interface is supported")  # mock limitation
    for nic in body.network_interfaces:
        if nic.subnet:
            access.require_uuid(nic.subnet, "subnet id")
    if body.commitment_period:
        raise bad_request("commitment is no longer supported")
    if world.vm_by_name(CRUSOE, project_id, body.name) is not None:
        raise bad_request(f"an instance named {body.name!r} already exists in this project")


def _validate_image(world: World, body: InstancesPostRequest) -> None:
    if body.image is not None and body.custom_image is not None:
        raise bad_request("either image or custom_image should be supplied, not both")
    if body.custom_image is not None:
        raise bad_request(f"custom image {body.custom_image!r} not found")  # the mock has no custom images
    if body.image is not None and body.image not in images.names(world):
        raise bad_request(f"invalid image {body.image!r}")


def _native(world: World, project_id: str, body: InstancesPostRequest) -> dict[str, object]:
    nic_spec = body.network_interfaces[0] if body.network_interfaces else None
    public_type = "dynamic"
    if nic_spec is not None and nic_spec.ips and nic_spec.ips[0].public_ipv4 is not None:
        public_type = nic_spec.ips[0].public_ipv4.type or "dynamic"
    return vmdata.to_native(
        vmdata.VmExtras(
            image=body.image or DEFAULT_IMAGE,
            maintenance_policy=body.maintenance_policy or "unspecified",
            nvlink_domain_id=body.nvlink_domain_id,
            nested_virtualization=bool(
                body.virtualization_features and body.virtualization_features.nested_virtualization
            ),
            nic=vmdata.new_nic(
                world, project_id, body.location, nic_spec.subnet if nic_spec else "", public_type
            ),
            os_disk=vmdata.new_os_disk(body.name),
            ssh_public_key=body.ssh_public_key.strip(),
            startup_script_sha256=(
                hashlib.sha256(body.startup_script.encode()).hexdigest() if body.startup_script else ""
            ),
            startup_script_bytes=len(body.startup_script.encode()),
            host_channel_adapters=[
                vmdata.new_hca(body.location, h.transport_partition_id or h.ib_partition_id)
                for h in body.host_channel_adapters
            ],
        )
    )
