"""`nebius.common.v1.OperationService` (Get, List), served on the compute endpoint as on the real API."""

from __future__ import annotations

from ..core.models import Operation, Provider
from . import auth, errors, paging, render, stored
from ._pb.nebius.common import v1 as common
from .call import Call

NEBIUS = Provider.NEBIUS


def get(call: Call, request: common.GetOperationRequest) -> common.Operation:
    """An instance's operation, or one on a disk, GPU cluster, security group or rule, or pricing policy."""
    with call.world.read() as world:
        other = stored.find_operation(world, call.owner, request.id) if request.id else None
        return other if other is not None else render.operation(auth.operation(world, call.owner, request.id))


def list_operations(call: Call, request: common.ListOperationsRequest) -> common.ListOperationsResponse:
    """Operations of one resource (also after it was deleted, while the records are retained)."""
    with call.world.read() as world:
        if not request.resource_id:
            raise errors.bad_request([("resource_id", "resource_id is required")])
        vm = world.vm(NEBIUS, request.resource_id, include_deleted=True)
        if vm is not None and not auth.owns_scope(world, call.owner, vm.scope):
            raise errors.permission_denied(request.resource_id)
        ops = [
            op
            for op in world.operations(NEBIUS, resource_id=request.resource_id)
            if auth.owns_scope(world, call.owner, op.scope)
        ]
        chosen, token = paging.page(ops, _key, request.page_size, request.page_token)
        return common.ListOperationsResponse(
            operations=[render.operation(op) for op in chosen], next_page_token=token
        )


def _key(op: Operation) -> paging.SortKey:
    return op.created_at, op.id
