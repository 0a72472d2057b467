"""The admin API's world clock and billing (mock extensions; the real clouds serve neither in this shape):

    GET  /clock   -> {"now": T, "offset_seconds": O, "wall_now": W}   the world clock (epoch seconds) and how far
                                                                      it runs ahead of the wall clock
    POST /clock   -> body {"advance_seconds": N}: move the world clock forward by N seconds (0 < N <= 366 days,
                     not scaled by the time scale; persisted); operations that fall due complete at their due
                     time; answers as GET. Credentials stay on the wall clock (core/world.py).
    GET  /billing -> what each cloud would bill (core/billing.py `report`): optional `provider=crusoe|lambda|
                     nebius`, `since=` and `until=` (world epoch seconds, decimals allowed):
        {"now", "since", "until",
         "rules": {provider: {"granularity_seconds", "minimum_seconds", "billed_states", "stopped_disks_bill"}},
         "vms": [{"provider", "id", "name", "scope", "region", "shape", "pricing", "reservation_id",
                  "billed_seconds", "cost_usd", "cost_by_pricing_usd": {"on-demand", "spot", "reservation"},
                  "intervals": [{"state", "started_at", "ended_at" (null while the VM is in it), "pricing",
                                 "reservation_id", "price_per_hour", "billed"}]}],
         "reservations": [{"provider", "id", "name", "family", "quantity_gpus", "price_per_gpu_hour",
                           "started_at", "ended_at", "reserved_gpu_hours", "used_gpu_hours", "idle_gpu_hours",
                           "cost_usd", "idle_cost_usd", "vm_ids"}],
         "totals": T, "by_provider": {provider: T}}
      where T = {"vms", "billed_seconds", "cost_usd", "on_demand_usd", "spot_usd", "reservation_usage_usd",
                 "reservations_usd", "reservations_idle_usd", "billed_usd"}.
    A bad parameter answers 400 {"error": "..."}.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import msgspec

from .core import billing
from .core.models import Provider
from .http import BadRequestBody, Handler, Request, Response, Router

if TYPE_CHECKING:
    from .runner import MockClouds


class ClockUpdate(msgspec.Struct, forbid_unknown_fields=True):
    advance_seconds: float


def add_routes(router: Router[Handler], clouds: MockClouds) -> None:
    router.add("GET", "/clock", lambda r: Response(200, clock(clouds)))
    router.add("POST", "/clock", lambda r: _post_clock(clouds, r))
    router.add("GET", "/billing", lambda r: _get_billing(clouds, r))


def clock(clouds: MockClouds) -> dict[str, float]:
    world = clouds.world
    return {"now": world.now(), "offset_seconds": world.state.clock_offset, "wall_now": world.wall_now()}


def _post_clock(clouds: MockClouds, request: Request) -> Response:
    try:
        update = request.json(ClockUpdate)
        clouds.world.advance_clock(update.advance_seconds)
    except (ValueError, BadRequestBody) as exc:
        return _reject(str(exc))
    return Response(200, clock(clouds))


def _get_billing(clouds: MockClouds, request: Request) -> Response:
    try:
        name = request.query_one("provider")
        if name and name not in set(Provider):
            raise ValueError(f"provider must be one of {', '.join(Provider)}, not {name!r}")
        provider = Provider(name) if name else None
        since, until = _seconds(request, "since"), _seconds(request, "until")
        world = clouds.world
        with world.read():
            return Response(200, billing.report(world, provider, since, until))
    except ValueError as exc:
        return _reject(str(exc))


def _seconds(request: Request, name: str) -> float | None:
    text = request.query_one(name)
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be epoch seconds, not {text!r}")
    return value


def _reject(message: str) -> Response:
    return Response(400, {"error": message})
