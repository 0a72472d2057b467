"""Crusoe reservations and capacity: automatic cheapest placement, opt-out, a reservation id at create that the
backend ignores, STOP/START, synchronous RESERVE/UNRESERVE, fallback to on-demand and out_of_stock failures."""

from __future__ import annotations

from typing import Any

import pytest
from mock_clouds.core.models import WorldState
from mock_clouds.crusoe.testing import (
    CHEAP_RESERVATION,
    H100,
    L40S_8X,
    PRICEY_RESERVATION,
    CrusoeEnv,
    act,
    create_vm,
    env_for,
    get_vm,
    instances_path,
    reservation,
    start_create,
    start_env,
    vm_path,
    wait_operation,
)

EAST = "us-east1-a"


@pytest.fixture
def crusoe(mock_clouds_factory) -> CrusoeEnv:
    return start_env(mock_clouds_factory)


def h100(env: CrusoeEnv, name: str, **kw: Any) -> dict[str, Any]:
    return create_vm(env.client, env.project, name, type_=H100, location=EAST, **kw)


def on_demand_free(env: CrusoeEnv, shape: str = H100, location: str = EAST) -> int:
    rows = env.client.get("/capacities", params={"product_name": shape, "location": location}).json()["items"]
    assert len(rows) == 1
    return rows[0]["quantity"]


def small_reservations(state: WorldState) -> None:
    """Each H100 reservation holds exactly one 8-GPU VM."""
    for res in state.providers["crusoe"].reservations:
        res.quantity = 8


def test_reservation_shape_and_listing(crusoe: CrusoeEnv) -> None:
    listed = crusoe.client.get(f"/organizations/{crusoe.org_id}/reservations").json()["items"]
    assert [r["id"] for r in listed] == [CHEAP_RESERVATION, PRICEY_RESERVATION]
    cheap = listed[0]
    assert set(cheap) == {
        "id",
        "reservation_type",
        "product_line",
        "duration",
        "quantity",
        "used_quantity",
        "locations",
        "projects",
        "contract_start_date",
        "contract_end_date",
        "delivery_deadline",
        "date_delivered",
        "vm_ids",
        "price",
    }
    assert (cheap["reservation_type"], cheap["product_line"], cheap["quantity"], cheap["used_quantity"]) == (
        "RIPA",
        "h100",
        32,
        0,
    )
    assert (cheap["locations"], cheap["price"], cheap["vm_ids"]) == (["us-east1"], "2.65", [])
    assert set(cheap["projects"]) == {crusoe.project, crusoe.research_project}
    assert listed[1]["price"] == "2.90"
    effective = crusoe.client.get(
        f"/organizations/{crusoe.org_id}/reservations", params={"status": "effective"}
    )
    assert effective.json()["items"] == listed
    assert crusoe.client.get(f"/organizations/{crusoe.org_id}/reservations/{PRICEY_RESERVATION}").json() == {
        "items": [listed[1]]
    }


def test_unknown_reservation_is_not_found(crusoe: CrusoeEnv) -> None:
    unknown = "00000000-0000-4000-8000-000000000001"
    response = crusoe.client.get(f"/organizations/{crusoe.org_id}/reservations/{unknown}")
    assert response.status_code == 404
    assert response.json() == {"code": "not_found", "message": f"reservation {unknown} not found"}


def test_default_create_lands_in_the_cheapest_reservation(crusoe: CrusoeEnv) -> None:
    vm = h100(crusoe, "auto")
    assert vm["reservation_id"] == CHEAP_RESERVATION
    cheap = reservation(crusoe, CHEAP_RESERVATION)
    assert (cheap["used_quantity"], cheap["vm_ids"]) == (8, [vm["id"]])
    assert reservation(crusoe, PRICEY_RESERVATION)["used_quantity"] == 0
    assert on_demand_free(crusoe) == 4  # reserved VMs do not take on-demand capacity


def test_explicit_lowest_cost_equals_default(crusoe: CrusoeEnv) -> None:
    vm = h100(crusoe, "lowest", reservation_specification={"selection_strategy": "lowest_cost"})
    assert vm["reservation_id"] == CHEAP_RESERVATION


def test_on_demand_opt_out(crusoe: CrusoeEnv) -> None:
    vm = h100(crusoe, "od", reservation_specification={"selection_strategy": "on_demand"})
    assert vm["reservation_id"] == ""
    assert reservation(crusoe, CHEAP_RESERVATION)["used_quantity"] == 0
    assert on_demand_free(crusoe) == 3


def test_a_reservation_id_at_create_is_ignored_for_the_cheapest_with_room(crusoe: CrusoeEnv) -> None:
    """`{"id": ...}` is ignored at create: the VM goes where lowest_cost puts it, and `reservation_id` says where.
    Terraform warns "The requested reservation_id was ignored by the backend" when the VM is not on the id it
    asked for (terraform-provider-crusoe internal/vm/vm_resource.go:468-476); research crusoe.md section 5."""
    vm = h100(crusoe, "pinned", reservation_specification={"id": PRICEY_RESERVATION})
    assert vm["reservation_id"] == CHEAP_RESERVATION
    assert reservation(crusoe, PRICEY_RESERVATION)["vm_ids"] == []
    assert reservation(crusoe, CHEAP_RESERVATION)["vm_ids"] == [vm["id"]]


def test_an_ignored_reservation_id_is_not_checked(crusoe: CrusoeEnv) -> None:
    """An id that names no reservation is ignored as well (the backend does not use it; that it does not check it
    either is an inference): the VM is placed by lowest_cost (vm_resource.go:468-476)."""
    vm = h100(crusoe, "unknown-id", reservation_specification={"id": "00000000-0000-4000-8000-000000000000"})
    assert vm["reservation_id"] == CHEAP_RESERVATION


def test_stop_releases_and_start_reclaims(crusoe: CrusoeEnv) -> None:
    vm = h100(crusoe, "cycle")
    stopped = act(crusoe.client, crusoe.project, vm["id"], "STOP")["result"]
    assert stopped["reservation_id"] == ""
    released = reservation(crusoe, CHEAP_RESERVATION)
    assert (released["used_quantity"], released["vm_ids"]) == (0, [])
    started = act(crusoe.client, crusoe.project, vm["id"], "START")["result"]
    assert started["reservation_id"] == CHEAP_RESERVATION
    assert reservation(crusoe, CHEAP_RESERVATION)["used_quantity"] == 8


def test_reboot_keeps_and_restart_reclaims_the_reservation(crusoe: CrusoeEnv) -> None:
    vm = h100(crusoe, "power")
    assert (
        act(crusoe.client, crusoe.project, vm["id"], "REBOOT")["result"]["reservation_id"]
        == CHEAP_RESERVATION
    )
    assert (
        act(crusoe.client, crusoe.project, vm["id"], "RESTART")["result"]["reservation_id"]
        == CHEAP_RESERVATION
    )
    assert reservation(crusoe, CHEAP_RESERVATION)["vm_ids"] == [vm["id"]]


def test_full_reservations_fall_back_to_the_next_then_on_demand(mock_clouds_factory) -> None:
    env = start_env(mock_clouds_factory, configure=small_reservations)
    placed = [h100(env, f"fill-{i}")["reservation_id"] for i in range(3)]
    assert placed == [CHEAP_RESERVATION, PRICEY_RESERVATION, ""]
    assert on_demand_free(env) == 3


def test_a_full_reservation_named_at_create_goes_to_the_next_with_room(mock_clouds_factory) -> None:
    """Naming a full reservation does not fail the create: the id is ignored and lowest_cost places the VM in the
    next reservation with room (terraform-provider-crusoe internal/vm/vm_resource.go:468-476)."""
    env = start_env(mock_clouds_factory, configure=small_reservations)
    h100(env, "first", reservation_specification={"id": CHEAP_RESERVATION})
    second = h100(env, "second", reservation_specification={"id": CHEAP_RESERVATION})
    assert second["reservation_id"] == PRICEY_RESERVATION
    third = h100(env, "third", reservation_specification={"id": CHEAP_RESERVATION})
    assert third["reservation_id"] == ""  # every reservation full: on-demand


def no_on_demand_h100(state: WorldState) -> None:
    """Small reservations, and no on-demand H100 capacity in us-east1-a."""
    small_reservations(state)
    for row in state.providers["crusoe"].capacity:
        if row.shape == H100:
            row.quantity = 0


def test_start_goes_back_to_its_reservation_or_the_next_with_room(mock_clouds_factory) -> None:
    """START "will attempt to be placed back in the same reservation" (research crusoe.md section 5); when that
    one filled up meanwhile, the VM is placed as a create would be: cheapest with room, else on-demand."""
    env = start_env(mock_clouds_factory, configure=small_reservations)
    vm = h100(env, "cycled")
    assert vm["reservation_id"] == CHEAP_RESERVATION
    act(env.client, env.project, vm["id"], "STOP")
    assert h100(env, "squatter")["reservation_id"] == CHEAP_RESERVATION
    started = act(env.client, env.project, vm["id"], "START")
    assert (started["state"], started["result"]["reservation_id"]) == ("SUCCEEDED", PRICEY_RESERVATION)


def test_start_without_room_fails_out_of_stock_and_stays_stopped(mock_clouds_factory) -> None:
    env = start_env(mock_clouds_factory, configure=no_on_demand_h100)
    vm = h100(env, "pinned")
    assert vm["reservation_id"] == CHEAP_RESERVATION
    act(env.client, env.project, vm["id"], "STOP")
    assert [h100(env, n)["reservation_id"] for n in ("squatter", "other")] == [CHEAP_RESERVATION, PRICEY_RESERVATION]
    failed = act(env.client, env.project, vm["id"], "START")
    assert (failed["state"], failed["result"]["code"]) == ("FAILED", "out_of_stock")
    assert get_vm(env.client, env.project, vm["id"])["state"] == "STATE_SHUTOFF"


def test_on_demand_capacity_exhaustion(crusoe: CrusoeEnv) -> None:
    for name in ("big-1", "big-2"):
        create_vm(crusoe.client, crusoe.project, name, type_=L40S_8X)
    assert on_demand_free(crusoe, L40S_8X, "eu-iceland1-a") == 0
    op = start_create(crusoe.client, crusoe.project, "big-3", type_=L40S_8X)
    assert op["state"] == "IN_PROGRESS"  # the failure surfaces through the operation, as on the real API
    failed = wait_operation(crusoe.client, crusoe.project, op["operation_id"])
    assert failed == {**failed, "state": "FAILED", "metadata": {"id": op["metadata"]["id"]}}
    assert failed["result"] == {
        "code": "out_of_stock",
        "message": "not enough capacity for l40s-48gb.8x in eu-iceland1-a",
    }
    listed = crusoe.client.get(instances_path(crusoe.project)).json()["items"]
    assert sorted(v["name"] for v in listed) == ["big-1", "big-2"]


def test_reserve_is_ignored_and_unreserve_releases_both_synchronous(crusoe: CrusoeEnv) -> None:
    """RESERVE is deprecated and its reservation_id ignored by the backend, as at create (terraform-provider-crusoe
    internal/vm/vm_by_template_resource.go:616-618: "The requested reservation_id was ignored by the backend");
    UNRESERVE moves the VM off its reservation. Both answer an operation that has already SUCCEEDED."""
    client, project = crusoe.client, crusoe.project
    vm = h100(crusoe, "moving", reservation_specification={"selection_strategy": "on_demand"})
    response = client.patch(
        vm_path(project, vm["id"]), {"action": "RESERVE", "reservation_id": PRICEY_RESERVATION}
    )
    assert response.status_code == 200
    op = response.json()["operation"]
    assert op["state"] == "SUCCEEDED" and op["completed_at"] != ""
    assert op["result"]["reservation_id"] == ""  # still on-demand
    assert client.get(f"{instances_path(project)}/operations/{op['operation_id']}").json() == op
    assert reservation(crusoe, PRICEY_RESERVATION)["vm_ids"] == []
    placed = h100(crusoe, "placed")  # lowest_cost: the cheapest reservation with room
    assert placed["reservation_id"] == CHEAP_RESERVATION
    unreserved = client.patch(vm_path(project, placed["id"]), {"action": "UNRESERVE"}).json()["operation"]
    assert (unreserved["state"], unreserved["result"]["reservation_id"]) == ("SUCCEEDED", "")
    assert placed["id"] not in reservation(crusoe, CHEAP_RESERVATION)["vm_ids"]


def test_reserve_into_an_unknown_reservation_is_refused(crusoe: CrusoeEnv) -> None:
    """The body of a RESERVE is still checked (an inference: the backend ignores the id, not the request)."""
    vm = create_vm(crusoe.client, crusoe.project, "l40s", type_=L40S_8X)
    unknown = "00000000-0000-4000-8000-000000000002"
    response = crusoe.client.patch(
        vm_path(crusoe.project, vm["id"]), {"action": "RESERVE", "reservation_id": unknown}
    )
    assert response.json() == {
        "code": "bad_request",
        "message": f"bad request, check request parameters: reservation {unknown} not found",
    }


def test_quotas_count_gpus_of_running_vms(crusoe: CrusoeEnv) -> None:
    """Counters are strings, as dstack read them from the live API (backends/crusoe/compute.py:174-175)."""
    h100(crusoe, "quota")
    quotas = crusoe.client.get(f"/projects/{crusoe.project}/quotas").json()["quotas"]
    by_name = {q["programmatic_name"]: q for q in quotas}
    assert set(by_name) == {"h100", "l40s"}
    h100_quota = by_name["h100"]
    assert (h100_quota["max"], h100_quota["used"], h100_quota["available"]) == ("256", "8", "248")
    assert h100_quota["category"] == "GPU Instance" and h100_quota["type"].startswith("PROJECT_QUOTA_TYPE_")
    assert crusoe.client.get(f"/projects/{crusoe.research_project}/quotas").json() == {"quotas": []}


def test_reservation_status_is_a_free_string(mock_clouds) -> None:
    """`status` is an unconstrained string in the spec: a value the mock does not model matches nothing, never 400."""
    env = env_for(mock_clouds)
    path = f"/organizations/{env.org_id}/reservations"
    effective = env.client.get(path, params={"status": "effective"})
    other = env.client.get(path, params={"status": "expired"})
    assert effective.status_code == other.status_code == 200
    assert effective.json()["items"] and other.json()["items"] == []


def test_a_key_that_may_not_read_reservations(mock_clouds_factory) -> None:
    """Whether a project member's key may read the organisation's reservations is undocumented (research
    real-clouds.md 3.2 "Organisation reservations read"): `reservations_readable = false` answers the swagger's
    403; creates still work, and lowest_cost may still place the VM in a reservation."""

    def unreadable(state: WorldState) -> None:
        state.providers["crusoe"].extra["reservations_readable"] = False

    env = start_env(mock_clouds_factory, unreadable)
    denied = env.client.get(f"/organizations/{env.org_id}/reservations")
    assert (denied.status_code, denied.json()["code"]) == (403, "unauthorized")
    assert env.client.get(f"/organizations/{env.org_id}/reservations/{CHEAP_RESERVATION}").status_code == 403
    assert h100(env, "still-placed")["reservation_id"] == CHEAP_RESERVATION
