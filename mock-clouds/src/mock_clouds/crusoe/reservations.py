"""`/organizations/{organization_id}/reservations[/{reservation_id}]`: read-only; reservations are sold by
Crusoe, not created through the API. Both endpoints answer `{"items": [Reservation]}`.

Whether every key that may use a project may read its organisation's reservations is not documented (research
real-clouds.md 3.2 "Organisation reservations read"). With `[crusoe.extra] reservations_readable = false` the
scenario's keys may not: they get 403 `unauthorized` here (the code the swagger's 403 `permissionsError`
uses; the real message is not known), and still create VMs, which the lowest_cost strategy may place in a
reservation.
"""

from __future__ import annotations

from ..core.models import Provider, Reservation
from ..http import Response
from . import access, render
from .access import Call
from .errors import not_found, unauthorized

CRUSOE = Provider.CRUSOE


def list_reservations(call: Call) -> Response:
    """`?status=` is a free string in the spec (example `effective`): `effective` keeps reservations whose
    contract covers now; any other value matches none (mock limitation: no other status is documented)."""
    _may_read(call)
    status = call.query("status")
    now = call.world.now()
    reservations = [
        r
        for r in call.world.config(CRUSOE).reservations
        if access.reservation_visible(call, r) and (not status or (status == "effective" and _effective(r, now)))
    ]
    return Response(200, {"items": [_render(call, r) for r in reservations]})


def get_reservation(call: Call) -> Response:
    _may_read(call)
    reservation_id = access.require_uuid(call.params["reservation_id"], "reservation id")
    res = call.world.reservation(CRUSOE, reservation_id)
    if res is None or not access.reservation_visible(call, res):
        raise not_found(f"reservation {reservation_id} not found")
    return Response(200, {"items": [_render(call, res)]})


def _may_read(call: Call) -> None:
    org_id = access.organization(call)
    if not call.world.config(CRUSOE).extra.get("reservations_readable", True):
        raise unauthorized(f"not authorized to read the reservations of organization {org_id}")


def _effective(res: Reservation, now: float) -> bool:
    start, end = render.contract_period(res)
    return start <= now <= end


def _render(call: Call, res: Reservation) -> dict[str, object]:
    return render.reservation(call.world, res, [p.id for p in access.org_projects(call)])
