"""A Crusoe key that may list and create VMs but not read the organisation's reservations: whether a project
member's key may is undocumented (research real-clouds.md 3.2 "Organisation reservations read"), and a 403 there
must not turn `vm offers` and `vm create` into "refused the credentials". vm goes on without reservations and
says so once, on stderr."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import mock_clouds

if TYPE_CHECKING:
    from conftest import VmHome

SCENARIO = Path(mock_clouds.__file__).parent / "default_scenario.toml"
WARNING = "may not read the reservations of organisation"


def serve_without_reservation_reads(home: VmHome, tmp_path: Path) -> None:
    scenario = tmp_path / "no-reservation-reads.toml"
    text = SCENARIO.read_text()
    assert "[crusoe.extra]\n" in text
    scenario.write_text(text.replace("[crusoe.extra]\n", "[crusoe.extra]\nreservations_readable = false\n"))
    served = home.mock("serve", "--detach", "--scenario", str(scenario), "--time-scale", "0.002")
    assert served.returncode == 0, served.stderr


def test_offers_and_create_go_on_without_reservations(fresh_home: VmHome, tmp_path: Path) -> None:
    serve_without_reservation_reads(fresh_home, tmp_path)
    offers = fresh_home("offers", "--gpu", "H100", "--provider", "crusoe", "-o", "json")
    assert offers.code == 0, offers.err
    assert offers.json() and all(not o.get("reservation_id") for o in offers.json())
    assert offers.err.count(WARNING) == 1 and "Traceback" not in offers.err

    created = fresh_home("create", "-p", "crusoe", "--gpu", "L40S", "--name", "no-res-reads", "-o", "json")
    assert created.code == 0, created.err
    assert created.err.count(WARNING) == 1 and "refused" not in created.err
    assert [i["name"] for i in fresh_home.live("no-res-reads")] == ["no-res-reads"]
