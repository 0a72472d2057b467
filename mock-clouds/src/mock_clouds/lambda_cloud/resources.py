"""Catalog and account endpoints: instance types, regions, images, SSH keys, file systems, and the reservation
listing (mock extension). Firewall rules and rulesets are in `firewalls`."""

from __future__ import annotations

import uuid

from . import render
from .context import LAMBDA, Ctx
from .errors import (
    duplicate,
    filesystem_in_use,
    filesystem_not_found,
    invalid_parameters,
    not_found,
    quota_exceeded,
)
from .keys import generate_key_pair, is_valid_public_key
from .models import AddSSHKeyRequest, FilesystemCreateRequest, decode, parse_path_id
from .state import FileSystemRecord, SSHKeyRecord, instance_details

MAX_SSH_KEYS = 1024  # "up to 1,024 SSH keys" per account (docs 2024)
MAX_FILE_SYSTEMS = 24  # "a total of 24 filesystems" (docs 2024)


def list_instance_types(ctx: Ctx) -> dict[str, dict[str, object]]:
    """A map type name -> type and the regions with on-demand room for one more instance right now."""
    regions = list(ctx.config.regions)
    return {
        shape.key: {
            "instance_type": render.instance_type(shape),
            "regions_with_capacity_available": [
                render.region(ctx.world, r)
                for r in regions
                if ctx.world.on_demand_free(LAMBDA, r, shape.key) > 0
            ],
        }
        for shape in ctx.config.shapes
    }


def list_regions(ctx: Ctx) -> list[dict[str, str]]:
    return [render.region(ctx.world, name) for name in ctx.config.regions]


def list_images(ctx: Ctx) -> list[dict[str, object]]:
    """One object per (image, region): every seeded image is offered in every region."""
    return [render.image(ctx.world, image, r) for image in ctx.store.seed.images for r in ctx.config.regions]


def list_reservations(ctx: Ctx) -> list[dict[str, object]]:
    """Mock extension (product brief): the reservations the caller's account may launch on. Not served (404
    global/not-found, as the real API answers) when the scenario turns the extension off."""
    if not ctx.store.seed.reservations_api:
        raise not_found()
    visible = [r for r in ctx.config.reservations if not r.scopes or ctx.scope in r.scopes]
    return [render.reservation(ctx.world, r, ctx.scope) for r in visible]


# ------------------------------------------------------------------ SSH keys
def list_ssh_keys(ctx: Ctx) -> list[dict[str, str]]:
    return [render.ssh_key(k) for k in ctx.resources.ssh_keys]


def add_ssh_key(ctx: Ctx) -> dict[str, str]:
    """Store a public key, or generate a pair and return the private key once (never stored)."""
    body = decode(ctx.request, AddSSHKeyRequest)
    keys = ctx.resources.ssh_keys
    if any(k.name == body.name for k in keys):
        raise invalid_parameters("Key name must be unique")  # live wording (SkyPilot #1837)
    if len(keys) >= MAX_SSH_KEYS:
        raise quota_exceeded()
    private_key = None
    public_key = body.public_key
    if public_key is None:
        public_key, private_key = generate_key_pair(body.name)
    elif not is_valid_public_key(public_key):
        raise invalid_parameters(
            "Error in request body at 'public_key': Invalid SSH public key."
        )  # mock wording
    record = SSHKeyRecord(id=uuid.uuid4().hex, name=body.name, public_key=public_key.strip())
    keys.append(record)
    rendered = render.ssh_key(record)
    return rendered if private_key is None else {**rendered, "private_key": private_key}


def delete_ssh_key(ctx: Ctx) -> dict[str, object]:
    key_id = parse_path_id(ctx.request.params["id"])
    keys = ctx.resources.ssh_keys
    record = next((k for k in keys if k.id == key_id), None)
    if record is None:
        raise not_found()  # ApiErrorNotFound: the 404 the spec declares for DELETE /ssh-keys/{id}
    keys.remove(record)
    return {}


# ------------------------------------------------------------------ file systems (simple: no data, no size)
def list_file_systems(ctx: Ctx) -> list[dict[str, object]]:
    in_use = _file_systems_in_use(ctx)
    return [
        render.file_system(ctx.world, ctx.account, fs, fs.id in in_use) for fs in ctx.resources.file_systems
    ]


def create_file_system(ctx: Ctx) -> dict[str, object]:
    body = decode(ctx.request, FilesystemCreateRequest)
    file_systems = ctx.resources.file_systems
    if body.region not in ctx.config.regions:
        raise invalid_parameters(f"Error in request body at 'region': unknown region '{body.region}'.")
    if any(fs.name == body.name for fs in file_systems):
        raise duplicate(f"A filesystem named '{body.name}' already exists.")  # mock wording
    if len(file_systems) >= MAX_FILE_SYSTEMS:
        raise quota_exceeded()
    record = FileSystemRecord(
        id=uuid.uuid4().hex, name=body.name, region=body.region, created=ctx.world.now()
    )
    file_systems.append(record)
    return render.file_system(ctx.world, ctx.account, record, False)


def delete_file_system(ctx: Ctx) -> dict[str, list[str]]:
    fs_id = parse_path_id(ctx.request.params["id"])
    file_systems = ctx.resources.file_systems
    record = next((fs for fs in file_systems if fs.id == fs_id), None)
    if record is None:
        raise filesystem_not_found()
    if record.id in _file_systems_in_use(ctx):
        raise filesystem_in_use()
    file_systems.remove(record)
    return {"deleted_ids": [record.id]}


def _file_systems_in_use(ctx: Ctx) -> set[str]:
    """Ids of file systems mounted by the caller's instances that are not yet terminated."""
    return {
        mount.file_system_id
        for vm in ctx.world.vms(LAMBDA, ctx.scope)
        for mount in instance_details(vm).file_system_mounts
    }
