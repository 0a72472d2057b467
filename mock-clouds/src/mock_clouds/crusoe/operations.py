"""`/projects/{project_id}/compute/vms/instances/operations[/{operation_id}]`.

A single operation is returned bare (not wrapped). An operation that does not exist, has expired or belongs to
another project answers 403 `unauthorized`, as the swagger documents. The list returns every retained VM
operation of the project (the real one returns "in-flight or completed but not yet queried" operations; the
mock does not track queries).
"""

from __future__ import annotations

from ..core.models import Provider
from ..http import Response
from . import access, render
from .access import Call
from .auth import parse_timestamp
from .errors import bad_request, unauthorized

CRUSOE = Provider.CRUSOE


def get_operation(call: Call) -> Response:
    proj = access.project(call)
    op_id = call.params["operation_id"]
    op = call.world.operation(CRUSOE, op_id.upper())  # ids are upper-case UUIDs; accept either case
    if op is None or op.scope != proj.id:
        raise unauthorized(
            f"operation {op_id} does not exist, was not initiated by this user, or has expired"
        )
    return Response(200, render.operation(call.world, op))


def list_operations(call: Call) -> Response:
    proj = access.project(call)
    states = call.query_list("state")
    unknown = [s for s in states if s not in render.OP_STATES]
    if unknown:
        raise bad_request(f"invalid state {unknown[0]!r}: use {', '.join(render.OP_STATES)}")
    resource_id = call.query("resource_id") or None
    since = _lower_time_bound(call.query("lower_time_bound"))
    ops = [
        op
        for op in call.world.operations(CRUSOE, scope=proj.id, resource_id=resource_id)
        if op.created_at >= since and (not states or render.operation_state(op) in states)
    ]
    return Response(200, {"items": [render.operation(call.world, op) for op in ops]})


def _lower_time_bound(raw: str) -> float:
    if not raw:
        return 0.0
    try:
        return parse_timestamp(raw)
    except ValueError as exc:
        raise bad_request(f"invalid lower_time_bound {raw!r}: use RFC 3339") from exc
