"""The Crusoe Cloud mock: the REST API under `/v1alpha5` and `/v1` (identical surfaces), HMAC-signed requests.

Request flow: version prefix (404 otherwise) -> signature (401 `bad_credential`) -> route (404 `not_found`,
405 for a known path with another method) -> rate limit (429 `too_many_requests`, Retry-After) -> handler,
all inside one world transaction.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..core.models import Provider
from ..core.world import World
from ..http import HttpServer, Request, Response, Router
from ..tls import ServerTls
from . import (
    actions,
    catalog,
    disk_attach,
    images,
    instances,
    networking,
    operations,
    projects,
    reservations,
    storage,
    users,
)
from .access import Call
from .auth import authenticate
from .errors import ApiError, bad_request, error_body, method_not_allowed, not_found, too_many_requests

CRUSOE = Provider.CRUSOE
_VERSIONED_PATH = re.compile(r"^/(?:v1alpha5|v1)(/.*)$")
_VMS = "/projects/{project_id}/compute/vms"
_DISKS = "/projects/{project_id}/storage/disks"
_NET = "/projects/{project_id}/networking"


@dataclass(frozen=True)
class Route:
    method: str
    pattern: str  # below the version prefix
    handler: Callable[[Call], Response]
    creates: bool = False  # also takes a token from the per-owner create bucket


# Order matters: `.../instances/operations` must be tried before `.../instances/{vm_id}`.
ROUTES: tuple[Route, ...] = (
    Route("GET", "/organizations/projects", projects.list_projects),
    Route("GET", "/organizations/projects/{project_id}", projects.get_project),
    Route("GET", "/organizations/{organization_id}/reservations", reservations.list_reservations),
    Route(
        "GET", "/organizations/{organization_id}/reservations/{reservation_id}", reservations.get_reservation
    ),
    Route("GET", "/locations", catalog.list_locations),
    Route("GET", "/capacities", catalog.list_capacities),
    Route("GET", "/compute/images", images.list_images),
    Route("GET", "/compute/images/{image_id}", images.get_image),
    Route("GET", "/projects/{project_id}/quotas", catalog.list_quotas),
    Route("GET", f"{_VMS}/types", catalog.list_types),
    Route("GET", f"{_VMS}/instances/operations", operations.list_operations),
    Route("GET", f"{_VMS}/instances/operations/{{operation_id}}", operations.get_operation),
    Route("GET", f"{_VMS}/instances", instances.list_instances),
    Route("POST", f"{_VMS}/instances", instances.create_instance, creates=True),
    Route("GET", f"{_VMS}/instances/{{vm_id}}", instances.get_instance),
    Route("PATCH", f"{_VMS}/instances/{{vm_id}}", actions.patch_instance),
    Route("POST", f"{_VMS}/instances/{{vm_id}}/attach-disks", disk_attach.attach_disks),
    Route("POST", f"{_VMS}/instances/{{vm_id}}/detach-disks", disk_attach.detach_disks),
    Route("DELETE", f"{_VMS}/instances/{{vm_id}}", instances.delete_instance),
    Route("GET", "/organizations/{organization_id}/quotas", catalog.list_org_quotas),
    Route("GET", f"{_DISKS}/operations", storage.list_operations),
    Route("GET", f"{_DISKS}/operations/{{operation_id}}", storage.get_operation),
    Route("GET", _DISKS, storage.list_disks),
    Route("POST", _DISKS, storage.create_disk),
    Route("GET", f"{_DISKS}/{{disk_id}}", storage.get_disk),
    Route("DELETE", f"{_DISKS}/{{disk_id}}", storage.delete_disk),
    Route("GET", f"{_NET}/ib-networks", networking.list_ib_networks),
    Route("GET", f"{_NET}/ib-networks/{{ib_network_id}}", networking.get_ib_network),
    Route("GET", f"{_NET}/ib-partitions", networking.list_ib_partitions),
    Route("POST", f"{_NET}/ib-partitions", networking.create_ib_partition),
    Route("GET", f"{_NET}/ib-partitions/{{ib_partition_id}}", networking.get_ib_partition),
    Route("DELETE", f"{_NET}/ib-partitions/{{ib_partition_id}}", networking.delete_ib_partition),
    Route("GET", f"{_NET}/vpc-networks", networking.list_vpc_networks),
    Route("GET", f"{_NET}/vpc-networks/{{vpc_network_id}}", networking.get_vpc_network),
    Route("GET", f"{_NET}/vpc-subnets", networking.list_vpc_subnets),
    Route("GET", f"{_NET}/vpc-subnets/{{vpc_subnet_id}}", networking.get_vpc_subnet),
    Route("GET", "/users/ssh-keys", users.list_ssh_keys),
    Route("POST", "/users/ssh-keys", users.create_ssh_key),
    Route("DELETE", "/users/ssh-keys", users.delete_ssh_key),
)

# Injected faults. 503 reuses the documented `internal_error` slug: no other 5xx slug of Crusoe is known.
# injected_fault(500) also answers a bug in a handler, so the message does not claim the fault was injected.
_FAULT_MESSAGE = "internal server error"
_FAULTS: dict[int, Callable[[], ApiError]] = {
    500: lambda: ApiError(500, "internal_error", _FAULT_MESSAGE),
    503: lambda: ApiError(503, "internal_error", "service temporarily unavailable"),
    429: lambda: too_many_requests(1.0),
}
_REJECT_CODES = {404: "not_found", 405: "method_not_allowed"}  # anything else is `bad_request`


class CrusoeApp:
    """The `RestApp` of the Crusoe mock."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.faults = world.faults[CRUSOE]
        self._router: Router[Callable[[Call], Response]] = Router()
        self._routes: dict[Callable[[Call], Response], Route] = {}
        for route in ROUTES:
            self._router.add(route.method, route.pattern, route.handler)
            self._routes[route.handler] = route

    def handle(self, request: Request) -> Response:
        try:
            return self._handle(request)
        except ApiError as exc:
            return exc.response()

    def _handle(self, request: Request) -> Response:
        versioned = _VERSIONED_PATH.match(request.path)
        if versioned is None:
            raise not_found(f"no such path {request.path}: use the /v1alpha5 or /v1 API")
        with self.world.tx():
            owner = authenticate(self.world, request)
            handler, params, path_known = self._router.resolve(request.method, versioned.group(1))
            if handler is None and path_known:
                raise method_not_allowed(request.method)
            if handler is None:
                raise not_found(f"no such path {request.path}")
            self._throttle(owner, self._routes[handler])
            return handler(Call(world=self.world, owner=owner, request=request, params=params))

    def _throttle(self, owner: str, route: Route) -> None:
        """Crusoe documents no compute rate limit; the scenario's per-organisation buckets still apply."""
        limits = self.world.config(CRUSOE).rate_limit
        buckets = [("request", limits.request_interval, limits.request_burst)]
        if route.creates:
            buckets.append(("create", limits.create_interval, limits.create_burst))
        for name, interval, burst in buckets:
            wait = self.world.rate_limiter.acquire(
                (CRUSOE.value, owner, name),
                interval=self.world.scaled(interval),
                burst=burst,
            )
            if wait > 0:
                raise too_many_requests(wait)

    def reject(self, status: int, message: str) -> Response:
        code = _REJECT_CODES.get(status)
        if code is None:
            return bad_request(message, status=status).response()
        return Response(status, error_body(code, message))

    def injected_fault(self, status: int) -> Response:
        fault = _FAULTS.get(status)
        return (fault() if fault else ApiError(status, "internal_error", _FAULT_MESSAGE)).response()


def serve(world: World, host: str, port: int, tls: ServerTls | None = None) -> HttpServer:
    """Serve the Crusoe mock on host:port (0 = a free port) from a background thread; HTTPS with `tls`."""
    return HttpServer(CrusoeApp(world), host, port, tls.ssl_context() if tls else None)
