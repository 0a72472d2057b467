"""The Nebius resources other than instances (disks, GPU clusters, security groups and rules, pricing policies),
kept in `world.state.extra_state` so that world snapshots persist them, and the operations that change them.

A resource is its metadata (id, parent, name, labels, version, creation time) and its spec in proto-JSON form;
each service renders its own status from the world (what uses it). A deleted resource is forgotten at once:
Get answers NOT_FOUND, List omits it, a second Delete answers NOT_FOUND (what dstack's boot-disk delete
tolerates, `backends/nebius/compute.py:334-336`).

Operations on these resources are complete when returned (mock simplification: the real ones run for a moment,
and a client that waits polls `OperationService.Get`, which answers them too). They are kept for the world's
retention like the instances' operations, without the purge (few are made per test).

Use every function inside `world.tx()` or `world.read()`.
"""

from __future__ import annotations

import base64
import time
from typing import Any

import betterproto2
import msgspec

from ..core import ids
from ..core.world import World
from . import errors, paging, render
from ._pb.google.protobuf import Any as AnyMessage
from ._pb.google.rpc import Status
from ._pb.nebius.common import v1 as common

RESOURCES = "nebius_resources"  # extra_state key: kind -> id -> Stored (as builtins)
OPERATIONS = "nebius_resource_operations"  # extra_state key: operation id -> StoredOperation (as builtins)


class Stored(msgspec.Struct, kw_only=True):
    id: str
    parent_id: str
    name: str
    labels: dict[str, str] = {}
    resource_version: int = 1
    created_at: float = 0.0
    spec: dict[str, Any] = {}  # the resource's Spec message in proto-JSON form

    def metadata(self) -> common.ResourceMetadata:
        return common.ResourceMetadata(
            id=self.id, parent_id=self.parent_id, name=self.name, labels=dict(self.labels),
            resource_version=self.resource_version, created_at=render.timestamp(self.created_at),
            updated_at=render.timestamp(self.created_at),
        )


class StoredOperation(msgspec.Struct, kw_only=True):
    id: str
    scope: str  # the project whose tenant may read it
    owner: str
    resource_id: str
    description: str
    created_at: float
    request_type_url: str
    request: str  # base64 of the request message


def _table(world: World, key: str) -> dict[str, Any]:
    table = world.state.extra_state.setdefault(key, {})
    assert isinstance(table, dict)
    return table


def _kind(world: World, kind: str) -> dict[str, Any]:
    kinds = _table(world, RESOURCES)
    return kinds.setdefault(kind, {})  # type: ignore[no-any-return]


def all_of(world: World, kind: str, parent_id: str | None = None) -> list[Stored]:
    """The live resources of `kind` (under `parent_id` when given), sorted by id."""
    found = [msgspec.convert(raw, Stored) for raw in _kind(world, kind).values()]
    return sorted((s for s in found if parent_id is None or s.parent_id == parent_id), key=lambda s: s.id)


def find(world: World, kind: str, resource_id: str) -> Stored | None:
    raw = _kind(world, kind).get(resource_id)
    return None if raw is None else msgspec.convert(raw, Stored)


def by_name(world: World, kind: str, parent_id: str, name: str) -> Stored | None:
    return next((s for s in all_of(world, kind, parent_id) if s.name == name), None)


def named(world: World, kind: str, parent_id: str, name: str, what: str) -> Stored:
    """The resource of `kind` named `name` under `parent_id` (GetByName); INVALID_ARGUMENT without a name,
    NOT_FOUND (naming `what`, e.g. "disk") when there is none."""
    if not name:
        raise errors.bad_request([("name", "name is required")])
    found = by_name(world, kind, parent_id, name)
    if found is None:
        raise errors.not_found(name, what)
    return found


def page(world: World, kind: str, parent_id: str, page_size: int, page_token: str) -> tuple[list[Stored], str]:
    """One page of the live resources of `kind` under `parent_id`, by id, and the next page's token ("" last)."""
    return paging.page(all_of(world, kind, parent_id), lambda s: (0.0, s.id), page_size, page_token)


def add(world: World, kind: str, prefix: str, metadata: common.ResourceMetadata,
        spec: betterproto2.Message) -> Stored:
    """A new resource of `kind` (id `<prefix>-<routing>...` in the parent's region); raises ALREADY_EXISTS when
    the parent already has one of that name."""
    taken = by_name(world, kind, metadata.parent_id, metadata.name)
    if taken is not None:
        raise errors.already_exists(taken.id, metadata.name)
    routing = metadata.parent_id.partition("-")[2][:3] or "e00"
    stored = Stored(id=ids.nebius_id(prefix, routing), parent_id=metadata.parent_id, name=metadata.name,
                    labels=dict(metadata.labels), created_at=time.time(), spec=spec.to_dict())
    save(world, kind, stored)
    return stored


def save(world: World, kind: str, stored: Stored) -> None:
    _kind(world, kind)[stored.id] = msgspec.to_builtins(stored)


def remove(world: World, kind: str, resource_id: str) -> None:
    _kind(world, kind).pop(resource_id, None)


def operation(world: World, *, owner: str, scope: str, resource_id: str, description: str,
              request: betterproto2.Message) -> common.Operation:
    """A finished, successful operation on `resource_id`, kept for `OperationService.Get`."""
    packed = AnyMessage.pack(request)
    op = StoredOperation(
        id=ids.nebius_id("computeoperation", scope.partition("-")[2][:3] or "e00"), scope=scope, owner=owner,
        resource_id=resource_id, description=description, created_at=time.time(), request_type_url=packed.type_url,
        request=base64.b64encode(packed.value).decode(),
    )
    _table(world, OPERATIONS)[op.id] = msgspec.to_builtins(op)
    return render_operation(op)


def find_operation(world: World, owner: str, operation_id: str) -> common.Operation | None:
    """The stored operation `operation_id` of `owner`'s tenant, else None (unknown here)."""
    raw = _table(world, OPERATIONS).get(operation_id)
    if raw is None:
        return None
    op = msgspec.convert(raw, StoredOperation)
    if op.owner != owner:
        raise errors.permission_denied(operation_id)
    return render_operation(op)


def render_operation(op: StoredOperation) -> common.Operation:
    return common.Operation(
        id=op.id, description=op.description, created_at=render.timestamp(op.created_at), created_by=op.owner,
        finished_at=render.timestamp(op.created_at), resource_id=op.resource_id,
        request=AnyMessage(type_url=op.request_type_url, value=base64.b64decode(op.request)),
        status=Status(code=0),
    )
