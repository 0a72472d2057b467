"""Instance endpoints: list, get, rename, launch, terminate, restart (research/lambda.md sections 2-4, 6, 8).

Launch is synchronous and all-or-nothing: it validates everything, places the instance now (fail fast), and
answers with its id; the instance is `booting` until the simulated create duration has passed, then `active`.
Terminate and restart validate every id before acting on any, so a refused request changes nothing.
"""

from __future__ import annotations

import hashlib
import secrets

import msgspec

from ..core.models import VM, CreateFailure, OpKind, Shape, VMState
from ..core.placement import ON_DEMAND_ONLY, ReservationChoice
from ..core.world import WorldError, region_matches
from . import firewalls, render
from .context import LAMBDA, Ctx
from .errors import (
    ApiError,
    already_terminated,
    conflict,
    file_system_in_wrong_region,
    firewall_ruleset_not_found,
    forbidden,
    instance_not_found,
    insufficient_capacity,
    internal_error,
    invalid_parameters,
    quota_exceeded,
    resource_not_found,
)
from .models import (
    ImageSpecification,
    InstanceIdsRequest,
    InstanceLaunchRequest,
    InstanceModificationRequest,
    decode,
    parse_path_id,
)
from .state import FileSystemRecord, InstanceDetails, Mount, Tag

# Mock extension: the texts of launch-resource errors are not documented; the codes and statuses are.
_CHECK_TYPES = "Check the available instance types with GET /instance-types, then try again."
_CHECK_REGIONS = "Check the available regions with GET /regions, then try again."
_CHECK_KEYS = "Add the SSH key with POST /ssh-keys or check its name, then try again."
_CHECK_FILE_SYSTEMS = "Check your filesystems with GET /file-systems, then try again."
_CHECK_IMAGES = "Check the available images with GET /images, then try again."
_CHECK_RESERVATIONS = "List your reservations with GET /reservations, then try again."
_RESERVATION_FULL = (
    "The reservation has no room left for this instance type; "
    "launch without reservation_id to use on-demand capacity."
)


# ------------------------------------------------------------------ reads and rename
def list_instances(ctx: Ctx) -> list[dict[str, object]]:
    """The caller's instances that are not terminated (oldest first)."""
    if ctx.request.query_one("cluster_id"):
        return []  # the mock has no 1-Click Clusters, so no instance belongs to one
    return [render.instance(ctx.world, vm) for vm in ctx.world.vms(LAMBDA, ctx.scope) if _visible(ctx, vm)]


def get_instance(ctx: Ctx) -> dict[str, object]:
    """One instance; a terminated one is still shown until the core purges its record (then 404), and a new one
    is 404 until the scenario's `visibility_delay` has passed."""
    vm = ctx.instance(parse_path_id(ctx.request.params["id"]), include_terminated=True)
    if not _visible(ctx, vm):
        raise instance_not_found()
    return render.instance(ctx.world, vm)


def _visible(ctx: Ctx, vm: VM) -> bool:
    """Whether reads show the instance yet: `visibility_delay` (time-scaled) after its launch."""
    return ctx.world.now() - vm.created_at >= ctx.world.scaled(ctx.store.seed.visibility_delay)


def rename_instance(ctx: Ctx) -> dict[str, object]:
    """POST /instances/{id}: `name` is the only modifiable field; an absent or null name changes nothing."""
    instance_id = parse_path_id(ctx.request.params["id"])
    body = decode(ctx.request, InstanceModificationRequest)
    vm = ctx.instance(instance_id, include_terminated=True)
    if vm.state == VMState.DELETED:
        raise invalid_parameters("A terminated instance cannot be renamed.")
    if body.name is not None:
        vm.name, vm.updated_at = body.name, ctx.world.now()
    return render.instance(ctx.world, vm)


# ------------------------------------------------------------------ launch
def launch_instance(ctx: Ctx) -> dict[str, list[str]]:
    body = decode(ctx.request, InstanceLaunchRequest)
    _check_counts(body)
    shape = _instance_type(ctx, body.instance_type_name)
    _check_region(ctx, body.region_name)
    _check_ssh_keys(ctx, body.ssh_key_names)
    mounts = _file_system_mounts(ctx, body)
    image_id = _image_id(ctx, body.image)
    ruleset_ids = _firewall_ruleset_ids(ctx, body)
    choice = _reservation_choice(ctx, body, shape)
    details = _details(ctx, body, mounts, image_id)
    details.firewall_ruleset_ids = ruleset_ids
    try:
        vm, _ = ctx.world.create_vm(
            LAMBDA,
            scope=ctx.scope,
            region=body.region_name,
            shape=shape.key,
            name=body.name or "",
            choice=choice,
            on_failure=CreateFailure.ERROR,
            fail_fast=True,
            native=msgspec.to_builtins(details),
            created_by=ctx.account,
        )
    except WorldError as exc:
        raise _launch_refusal(exc, on_reservation=body.reservation_id is not None) from exc
    ctx.store.commit_launch()
    return {"instance_ids": [vm.id]}


def _check_counts(body: InstanceLaunchRequest) -> None:
    if body.quantity is not None and body.quantity > 1:
        raise invalid_parameters("Requested too many instances.")  # live wording (SkyPilot #7084)
    if len(body.ssh_key_names) != 1:
        raise invalid_parameters("Exactly one SSH key must be specified.")  # spec: "exactly one SSH key"


def _instance_type(ctx: Ctx, name: str) -> Shape:
    shape = ctx.world.shape(LAMBDA, name)
    if shape is None:
        raise resource_not_found(f"Instance type '{name}' does not exist.", _CHECK_TYPES)
    return shape


def _check_region(ctx: Ctx, name: str) -> None:
    if name not in ctx.config.regions:
        raise resource_not_found(f"Region '{name}' does not exist.", _CHECK_REGIONS)


def _check_ssh_keys(ctx: Ctx, names: list[str]) -> None:
    known = {key.name for key in ctx.resources.ssh_keys}
    for name in names:
        if name not in known:
            raise resource_not_found(f"SSH key '{name}' does not exist.", _CHECK_KEYS)


def _file_system_mounts(ctx: Ctx, body: InstanceLaunchRequest) -> list[tuple[FileSystemRecord, str]]:
    """(file system, mount point) pairs: named ones at /lambda/nfs/<name> unless `file_system_mounts` names a
    path for the same file system, which wins (spec 1.8.3+)."""
    by_name = {fs.name: fs for fs in ctx.resources.file_systems}
    by_id = {fs.id: fs for fs in ctx.resources.file_systems}
    explicit: dict[str, str] = {}
    for mount in body.file_system_mounts or []:
        if mount.file_system_id not in by_id:
            raise resource_not_found(
                f"Filesystem '{mount.file_system_id}' does not exist.", _CHECK_FILE_SYSTEMS
            )
        explicit[mount.file_system_id] = mount.mount_point
    chosen: dict[str, FileSystemRecord] = {}
    for name in body.file_system_names or []:
        if name not in by_name:
            raise resource_not_found(f"Filesystem '{name}' does not exist.", _CHECK_FILE_SYSTEMS)
        chosen[by_name[name].id] = by_name[name]
    chosen |= {fs_id: by_id[fs_id] for fs_id in explicit}
    for fs in chosen.values():
        if fs.region != body.region_name:
            raise file_system_in_wrong_region(
                f"Filesystem '{fs.name}' is in {fs.region}, not in {body.region_name}."
            )
    return [(fs, explicit.get(fs.id, f"/lambda/nfs/{fs.name}")) for fs in chosen.values()]


def _firewall_ruleset_ids(ctx: Ctx, body: InstanceLaunchRequest) -> list[str]:
    """The named rulesets, which must be the caller's and in the instance's region (1.10)."""
    ids = []
    for entry in body.firewall_rulesets or []:
        record = firewalls.find(ctx, entry.id)
        if record is None:
            raise firewall_ruleset_not_found()
        if record.region != body.region_name:
            raise invalid_parameters(
                f"Firewall ruleset '{record.id}' is in region {record.region}, not {body.region_name}."
            )
        ids.append(record.id)
    return list(dict.fromkeys(ids))


def _image_id(ctx: Ctx, spec: ImageSpecification | None) -> str:
    """The chosen image id; "" means the default (the latest Lambda Stack image)."""
    if spec is None:
        return ""
    if (spec.id is None) == (spec.family is None):
        raise invalid_parameters(
            "Error in request body at 'image': specify exactly one of 'id' and 'family'."
        )
    images = ctx.store.seed.images
    match = next(
        (i for i in images if i.id == spec.id or (spec.family is not None and i.family == spec.family)), None
    )
    if match is None:
        raise resource_not_found(f"Image '{spec.id or spec.family}' does not exist.", _CHECK_IMAGES)
    return match.id


def _reservation_choice(ctx: Ctx, body: InstanceLaunchRequest, shape: Shape) -> ReservationChoice:
    """Mock extension: `reservation_id` places the instance on that reservation only; without it Lambda
    launches on on-demand capacity only. Without the extension `reservation_id` is an unknown field, ignored."""
    if body.reservation_id is None or not ctx.store.seed.reservations_api:
        return ON_DEMAND_ONLY
    res = ctx.world.reservation(LAMBDA, body.reservation_id)
    if res is None or (res.scopes and ctx.scope not in res.scopes):
        raise resource_not_found("Specified reservation does not exist.", _CHECK_RESERVATIONS)
    if shape.family != res.family or not region_matches(body.region_name, res.regions):
        raise invalid_parameters(
            f"Reservation '{res.id}' holds {res.family} capacity in {', '.join(res.regions)}; "
            f"it cannot host {shape.key} in {body.region_name}."
        )
    return ReservationChoice(candidates=[res.id], on_demand_fallback=False)


def _details(
    ctx: Ctx, body: InstanceLaunchRequest, mounts: list[tuple[FileSystemRecord, str]], image_id: str
) -> InstanceDetails:
    ip, private_ip = ctx.store.next_addresses()
    return InstanceDetails(
        ssh_key_names=list(body.ssh_key_names),
        ssh_public_keys=[k.public_key for k in ctx.resources.ssh_keys if k.name in body.ssh_key_names],
        file_system_names=[fs.name for fs, _ in mounts],
        file_system_mounts=[Mount(mount_point=point, file_system_id=fs.id) for fs, point in mounts],
        hostname=body.hostname or "",
        image_id=image_id,
        user_data_sha256=hashlib.sha256(body.user_data.encode()).hexdigest() if body.user_data else "",
        user_data_bytes=len(body.user_data.encode()) if body.user_data else 0,
        tags=[Tag(key=t.key, value=t.value) for t in body.tags or []],
        ip=ip,
        private_ip=private_ip,
        jupyter_token=secrets.token_hex(16),
    )


def _launch_refusal(exc: WorldError, *, on_reservation: bool) -> ApiError:
    if exc.kind == "quota":
        return quota_exceeded()
    if exc.kind == "capacity":
        return insufficient_capacity(_RESERVATION_FULL) if on_reservation else insufficient_capacity()
    return internal_error()  # create_vm raises nothing else; reaching this is a bug


# ------------------------------------------------------------------ terminate and restart
def terminate_instances(ctx: Ctx) -> dict[str, list[dict[str, object]]]:
    body = decode(ctx.request, InstanceIdsRequest)
    vms = [_terminable(ctx, instance_id) for instance_id in dict.fromkeys(body.instance_ids)]
    for vm in vms:
        ctx.world.begin(LAMBDA, vm.id, OpKind.DELETE, created_by=ctx.account)
    return {"terminated_instances": [render.instance(ctx.world, vm) for vm in vms]}


def _terminable(ctx: Ctx, instance_id: str) -> VM:
    vm = ctx.instance(instance_id, include_terminated=True)
    if vm.state in (VMState.DELETING, VMState.DELETED):
        raise already_terminated(vm.id, render.status(vm))
    if render.is_reserved(vm):
        # Mock extension (product brief): reserved capacity is released by Lambda, never through the API.
        raise forbidden(
            f"Instance '{vm.id}' runs on reserved capacity and cannot be terminated through the API.",
            "Contact Lambda Support to release reserved instances. "
            "No instance in this request was terminated.",
        )
    return vm


def restart_instances(ctx: Ctx) -> dict[str, list[dict[str, object]]]:
    body = decode(ctx.request, InstanceIdsRequest)
    vms = [_restartable(ctx, instance_id) for instance_id in dict.fromkeys(body.instance_ids)]
    for vm in vms:
        ctx.world.begin(LAMBDA, vm.id, OpKind.REBOOT, created_by=ctx.account)
    return {"restarted_instances": [render.instance(ctx.world, vm) for vm in vms]}


def _restartable(ctx: Ctx, instance_id: str) -> VM:
    vm = ctx.instance(instance_id, include_terminated=True)
    if vm.state != VMState.RUNNING or ctx.world.pending_operation(LAMBDA, vm.id) is not None:
        raise conflict(
            f"Instance '{vm.id}' cannot be restarted while it is not active "
            f"(status {render.status(vm)}, or an action is in progress)."
        )
    return vm
