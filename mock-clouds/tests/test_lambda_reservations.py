"""Lambda Cloud mock: reserved capacity (mock extension): listing, launching on it, refusing to terminate."""

from __future__ import annotations

import pytest
from mock_clouds.lambda_cloud.testing import (
    NOT_FOUND,
    OTHER_ACCOUNT,
    RESERVATION_ID,
    LambdaApi,
    error,
    invalid_parameters,
    launch_body,
)

ON_RESERVATION = {"region_name": "us-south-2", "reservation_id": RESERVATION_ID}


@pytest.fixture
def api(mock_clouds_factory) -> LambdaApi:
    return LambdaApi.start(mock_clouds_factory)


def reservation(api: LambdaApi) -> dict[str, object]:
    response = api.get("/reservations")
    assert response.status_code == 200
    (found,) = response.json()["data"]
    return found


def test_reservations_are_listed(api: LambdaApi) -> None:
    assert reservation(api) == {
        "id": RESERVATION_ID,
        "name": "h100-reserved-south",
        "region": {"name": "us-south-2", "description": "North Texas, USA"},
        "instance_type_family": "h100_sxm5",
        "gpu_description": "H100 (80 GB SXM5)",
        "instance_type_names": [
            "gpu_1x_h100_sxm5",
            "gpu_2x_h100_sxm5",
            "gpu_4x_h100_sxm5",
            "gpu_8x_h100_sxm5",
        ],
        "quantity": 8,
        "used_quantity": 0,
        "available_quantity": 8,
        "instance_ids": [],
        "price_cents_per_gpu_hour": 249,
    }


def test_launch_on_a_reservation_and_termination_is_refused(api: LambdaApi) -> None:
    reserved = api.launch(instance_type_name="gpu_4x_h100_sxm5", **ON_RESERVATION)
    on_demand = api.launch(instance_type_name="gpu_1x_h100_sxm5", region_name="us-south-2")
    listed = reservation(api)
    assert (listed["used_quantity"], listed["available_quantity"], listed["instance_ids"]) == (
        4,
        4,
        [reserved],
    )

    instance = api.wait_status(reserved, "active")
    assert instance["is_reserved"] is True
    assert instance["actions"]["terminate"] == {
        "available": False,
        "reason_code": "vm-is-reserved",
        "reason_description": "The instance runs on reserved capacity; contact Lambda Support to release it.",
    }
    assert api.instance(on_demand)["is_reserved"] is False

    response = api.post("/instance-operations/terminate", {"instance_ids": [on_demand, reserved]})
    assert response.status_code == 403
    assert response.json() == error(
        "global/forbidden",
        f"Instance '{reserved}' runs on reserved capacity and cannot be terminated through the API.",
        "Contact Lambda Support to release reserved instances. No instance in this request was terminated.",
    )
    assert api.instance(reserved)["status"] == "active"
    assert api.instance(on_demand)["status"] in ("booting", "active")


def test_a_full_reservation_refuses_launches(api: LambdaApi) -> None:
    api.launch(instance_type_name="gpu_8x_h100_sxm5", **ON_RESERVATION)
    response = api.post(
        "/instance-operations/launch", launch_body(instance_type_name="gpu_1x_h100_sxm5", **ON_RESERVATION)
    )
    assert response.status_code == 400
    assert response.json() == error(
        "instance-operations/launch/insufficient-capacity",
        "Not enough capacity to fulfill launch request.",
        "The reservation has no room left for this instance type; launch without reservation_id to use "
        "on-demand capacity.",
    )
    assert reservation(api)["used_quantity"] == 8


def test_a_reservation_is_invisible_and_unusable_to_other_accounts(api: LambdaApi) -> None:
    other = api.as_account(OTHER_ACCOUNT)
    listed = other.get("/reservations")
    assert listed.status_code == 200 and listed.json() == {"data": []}
    response = other.post("/instance-operations/launch", launch_body(instance_type_name="gpu_1x_h100_sxm5",
                                                                     **ON_RESERVATION))
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "global/object-does-not-exist"


def test_unknown_or_mismatched_reservations(api: LambdaApi) -> None:
    unknown = api.post(
        "/instance-operations/launch",
        launch_body(instance_type_name="gpu_1x_h100_sxm5", region_name="us-south-2", reservation_id="f" * 32),
    )
    assert (unknown.status_code, unknown.json()) == (
        404,
        error(
            "global/object-does-not-exist",
            "Specified reservation does not exist.",
            "List your reservations with GET /reservations, then try again.",
        ),
    )
    mismatch = api.post("/instance-operations/launch", launch_body(reservation_id=RESERVATION_ID))
    assert (mismatch.status_code, mismatch.json()) == (
        400,
        invalid_parameters(
            f"Reservation '{RESERVATION_ID}' holds h100_sxm5 capacity in us-south-2; "
            "it cannot host gpu_1x_a10 in us-east-1."
        ),
    )
    assert reservation(api)["used_quantity"] == 0


def _without_reservations_api(state) -> None:
    state.providers["lambda"].extra["reservations_api"] = False


def test_without_the_extension_reservations_are_not_served_as_on_the_real_api(mock_clouds_factory) -> None:
    """No Lambda spec (1.5.1 to 1.10) has /reservations or a launch `reservation_id` (research lambda.md
    sections 3 and 5). With `reservations_api = false` the mock answers as the real API: GET /reservations is
    the 404 of an unknown path, and `reservation_id` is an ignored unknown field, so the launch is on-demand
    (the danger a client must guard against)."""
    api = LambdaApi.start(mock_clouds_factory, configure=_without_reservations_api)
    listed = api.get("/reservations")
    assert (listed.status_code, listed.json()) == (404, NOT_FOUND)
    instance = api.instance(api.launch(instance_type_name="gpu_1x_h100_sxm5", **ON_RESERVATION))
    assert instance["is_reserved"] is False
