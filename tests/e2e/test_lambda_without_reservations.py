"""`vm create --provider lambda --reservation ID` against a Lambda Cloud that serves no reservations, as the real
API: no spec version has /reservations or a launch `reservation_id` (research lambda.md sections 3 and 5), and
the real API would ignore the field and launch on-demand. vm refuses before launching anything."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import mock_clouds

if TYPE_CHECKING:
    from conftest import VmHome

RESERVATION = "9b2e4c6a8d0f41e3a5c7e9b1d3f5a7c9"  # a reservation of the default scenario
SCENARIO = Path(mock_clouds.__file__).parent / "default_scenario.toml"


def test_a_reservation_on_a_lambda_without_reservations_is_refused_and_launches_nothing(fresh_home: VmHome,
                                                                                         tmp_path: Path) -> None:
    scenario = tmp_path / "real-lambda.toml"
    real_api = SCENARIO.read_text().replace("[lambda.extra]\n", "[lambda.extra]\nreservations_api = false\n")
    scenario.write_text(real_api)
    served = fresh_home.mock("serve", "--detach", "--scenario", str(scenario), "--time-scale", "0.002")
    assert served.returncode == 0, served.stderr

    refused = fresh_home("create", "-p", "lambda", "--gpu", "H100", "--region", "us-south-2", "--name", "on-res",
                         "--reservation", RESERVATION, "-o", "json")
    assert refused.code == 5, refused.err  # unsupported (docs: exit codes)
    error = refused.error()
    assert error["code"] == "unsupported"
    assert error["message"].startswith(f"--reservation {RESERVATION}: the Lambda Cloud API at ")
    assert "has no reservations" in error["message"] and "nothing was launched" in error["message"]
    assert "Traceback" not in refused.err
    assert [i for i in fresh_home.inventory() if i["provider"] == "lambda"] == []

    made = fresh_home.ok("create", "-p", "lambda", "--gpu", "H100", "--name", "on-demand", "--reservation", "none",
                         "-o", "json").json()
    assert (made["reserved"], made["reservation_id"]) == (False, "")  # on-demand still works there
    assert [i["name"] for i in fresh_home.inventory() if i["provider"] == "lambda"] == ["on-demand"]
