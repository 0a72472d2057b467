"""What can be bought and where: VM types, capacities, locations and project quotas."""

from __future__ import annotations

from ..core.models import Provider, Shape
from ..core.world import World
from ..http import Response
from . import access, render
from .access import Call

CRUSOE = Provider.CRUSOE


def list_types(call: Call) -> Response:
    """`GET /projects/{p}/compute/vms/types` -> `{"items": [Type]}` (all ten fields)."""
    access.project(call)
    return Response(200, {"items": [render.vm_type(s) for s in call.world.config(CRUSOE).shapes]})


def list_locations(call: Call) -> Response:
    """`GET /locations` -> `{"items": ["us-east1-a", ...]}` (plain strings)."""
    return Response(200, {"items": list(call.world.config(CRUSOE).regions)})


def list_capacities(call: Call) -> Response:
    """`GET /capacities?product_name=&location=` (not project-scoped): free on-demand VMs per type/location.

    Reservations are not capacity: they show in the reservation's `used_quantity`.
    """
    products, locations = call.query_list("product_name"), call.query_list("location")
    seen: set[tuple[str, str]] = set()
    items = []
    for row in call.world.config(CRUSOE).capacity:
        key = (row.shape, row.region)
        if (
            key in seen
            or (products and row.shape not in products)
            or (locations and row.region not in locations)
        ):
            continue
        seen.add(key)
        items.append(_capacity(call.world, row.shape, row.region))
    return Response(200, {"items": items})


def _capacity(world: World, shape: str, location: str) -> dict[str, object]:
    return {
        "type": shape,
        "location": location,
        "quantity": world.on_demand_free(CRUSOE, location, shape),
        "num_slices": 1,
        "quota_type": render.quota_type(f"MAXIMUM_VM_SLICES_{shape}"),
    }


def list_quotas(call: Call) -> Response:
    """`GET /projects/{p}/quotas` -> `{"quotas": [...]}` in GPUs per instance family (`programmatic_name`).

    `max`, `used` and `available` are decimal strings, as dstack found the live API writes them ("The API
    documents counters as integers but returns them as strings", backends/crusoe/compute.py:174-175); the swagger
    and client-go declare integers. `[crusoe.extra] quota_counters = "integer"` makes the mock write integers.
    """
    proj = access.project(call)
    counter = _counter(call.world)
    quotas = [q for q in call.world.config(CRUSOE).quotas if q.scope == proj.id]
    items = []
    for quota in quotas:
        used = call.world.quota_used(CRUSOE, proj.id, quota.family)
        shape = _family_shape(call.world, quota.family)
        items.append(
            {
                "type": render.quota_type(f"MAXIMUM_GPUS_{quota.family}"),
                "programmatic_name": quota.family,
                "description": shape.gpu_type if shape else quota.family,
                "category": "GPU Instance",
                "max": counter(quota.max_gpus),
                "used": counter(used),
                "available": counter(max(0, quota.max_gpus - used)),
            }
        )
    return Response(200, {"quotas": items})


def _counter(world: World) -> type[int] | type[str]:
    """How quota counters are written (see `list_quotas`)."""
    return int if world.config(CRUSOE).extra.get("quota_counters", "string") == "integer" else str


# Organisation quotas the mock knows (the swagger's example is ORG_QUOTAS_MAXIMUM_USERS / `users`); the limits
# are mock choices: the real ones are per contract.
_ORG_QUOTAS = (("ORG_QUOTAS_MAXIMUM_PROJECTS", "projects", "Projects", 10),
               ("ORG_QUOTAS_MAXIMUM_USERS", "users", "Users", 10))


def list_org_quotas(call: Call) -> Response:
    """`GET /organizations/{o}/quotas` -> `{"quotas": [OrgQuota]}` (`type`, `programmatic_name`, `description`,
    `max`, `used`, `available`; counters written as the project quotas' are). Each access key is one user."""
    access.organization(call)
    counter = _counter(call.world)
    used = {"projects": len(access.org_projects(call)), "users": 1}
    return Response(200, {"quotas": [
        {"type": kind, "programmatic_name": name, "description": text, "max": counter(limit),
         "used": counter(used[name]), "available": counter(max(0, limit - used[name]))}
        for kind, name, text, limit in _ORG_QUOTAS]})


def _family_shape(world: World, family: str) -> Shape | None:
    return next((s for s in world.config(CRUSOE).shapes if s.family == family), None)
