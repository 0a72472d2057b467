"""What each mock cloud would bill (admin `GET /billing`, `mock-clouds billing`) and the world clock (admin
`POST /clock`), driven over the wire: VMs made with each cloud's own API, a scripted day in seconds."""

from __future__ import annotations

import json
import math
import time
from decimal import Decimal
from typing import Any

import pytest
from click.testing import CliRunner
from mock_clouds import control
from mock_clouds.cli import main
from mock_clouds.core import billing
from mock_clouds.core.models import Provider
from mock_clouds.crusoe.testing import (
    CHEAP_RESERVATION,
    H100,
    L40S,
    act,
    create_vm,
    env_for,
    vm_path,
    wait_operation,
)
from mock_clouds.lambda_cloud.testing import RESERVATION_ID, LambdaApi
from mock_clouds.nebius import testkit
from mock_clouds.nebius._pb.nebius.compute import v1 as compute
from mock_clouds.nebius._pb.nebius.iam import v1 as iam

SLACK = 30.0  # real seconds a test may take between two clock moves, at most (in practice well under one)


def admin(clouds: Any, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    return control.admin_call(clouds.endpoints, method, path, body)


def advance(clouds: Any, seconds: float) -> float:
    """Move the world clock; returns the new world time."""
    return float(admin(clouds, "POST", "/clock", {"advance_seconds": seconds})["now"])


def world_now(clouds: Any) -> float:
    return float(admin(clouds, "GET", "/clock")["now"])


def line_of(report: dict[str, Any], vm_id: str) -> dict[str, Any]:
    (line,) = [v for v in report["vms"] if v["id"] == vm_id]
    return line


def by_rule(line: dict[str, Any], rule: Any, now: float) -> tuple[int, float]:
    """(billed seconds, cost) of a VM line, recomputed from its intervals by `rule`
    (vm_core.providers.billing_rules), as its docstring states the arithmetic."""
    billed, cost, run, last_price = 0, 0.0, 0.0, 0.0

    def close() -> None:
        nonlocal billed, cost, run
        if run > 0:
            rounded = max(rule.minimum_seconds,
                          math.ceil(max(0.0, run - 1e-6) / rule.granularity_seconds) * rule.granularity_seconds)
            billed += rounded
            cost += (rounded - run) * last_price / 3600
        run = 0.0

    for interval in line["intervals"]:
        state = "terminating" if interval["state"] == "deleting" else interval["state"]
        if state not in rule.billed_states:
            close()
            continue
        seconds = (interval["ended_at"] or now) - interval["started_at"]
        run += seconds
        last_price = interval["price_per_hour"]
        cost += seconds * last_price / 3600
    close()
    return billed, round(cost, 6)


@pytest.fixture
def clouds(mock_clouds_factory: Any) -> Any:
    return mock_clouds_factory()


# ------------------------------------------------------------------------------------------------ Crusoe
def test_a_crusoe_day_bills_running_time_only_per_second(clouds: Any) -> None:
    from vm_core.providers import billing_rules as rules

    env = env_for(clouds)
    vm = create_vm(env.client, env.project, "day", type_=L40S, location="eu-iceland1-a")
    advance(clouds, 3600)
    assert act(env.client, env.project, vm["id"], "STOP")["state"] == "SUCCEEDED"  # signed on the wall clock
    advance(clouds, 1800)
    assert act(env.client, env.project, vm["id"], "START")["state"] == "SUCCEEDED"
    advance(clouds, 600)
    deleted = env.client.delete(vm_path(env.project, vm["id"]))
    assert deleted.status_code == 200, deleted.text
    assert wait_operation(env.client, env.project, deleted.json()["operation"]["operation_id"])["state"] == \
        "SUCCEEDED"
    advance(clouds, 3600)  # deleted: bills nothing more

    report = admin(clouds, "GET", "/billing?provider=crusoe")
    line = line_of(report, vm["id"])
    states = [i["state"] for i in line["intervals"]]
    assert states == ["creating", "running", "stopping", "stopped", "starting", "running", "deleting"]
    assert line["intervals"][-1]["ended_at"] is not None
    assert (line["pricing"], line["reservation_id"], line["shape"]) == ("on-demand", "", L40S)
    assert 4200 <= line["billed_seconds"] <= 4200 + SLACK
    assert (line["billed_seconds"], line["cost_usd"]) == by_rule(line, rules.CRUSOE, report["now"])
    assert line["cost_usd"] == pytest.approx(line["billed_seconds"] * line["intervals"][1]["price_per_hour"] / 3600)
    assert report["totals"]["on_demand_usd"] == line["cost_usd"]
    assert report["totals"]["billed_usd"] == pytest.approx(line["cost_usd"] + report["totals"]["reservations_usd"])


def test_a_crusoe_vm_moved_off_its_reservation_bills_each_half_at_its_price(clouds: Any) -> None:
    env = env_for(clouds)
    vm = create_vm(env.client, env.project, "moved", type_=H100, location="us-east1-a")
    assert vm["reservation_id"] == CHEAP_RESERVATION  # 2.65 $/GPU-h, 8 GPUs
    since = world_now(clouds)
    advance(clouds, 1800)
    moved = env.client.patch(vm_path(env.project, vm["id"]), {"action": "UNRESERVE"})
    assert moved.status_code == 200, moved.text
    advance(clouds, 1800)

    report = admin(clouds, "GET", f"/billing?provider=crusoe&since={since!r}&until={since + 3600!r}")
    line = line_of(report, vm["id"])
    assert [(i["state"], i["pricing"]) for i in line["intervals"]] == [("running", "reservation"),
                                                                        ("running", "on-demand")]
    assert (line["pricing"], line["reservation_id"], line["billed_seconds"]) == ("on-demand", "", 3600)
    costs = line["cost_by_pricing_usd"]
    assert costs["reservation"] == pytest.approx(0.5 * 8 * 2.65, rel=1e-3)
    assert costs["on-demand"] == pytest.approx(0.5 * 31.20, rel=1e-3)
    (cheap,) = [r for r in report["reservations"] if r["id"] == CHEAP_RESERVATION]
    assert cheap["used_gpu_hours"] == pytest.approx(4, rel=1e-3) and cheap["vm_ids"] == [vm["id"]]
    assert cheap["idle_gpu_hours"] == pytest.approx(32 - 4, rel=1e-3)
    assert report["totals"]["billed_usd"] == pytest.approx(costs["on-demand"] + report["totals"]["reservations_usd"])


# ------------------------------------------------------------------------------------------------ Lambda
def test_lambda_bills_started_minutes(mock_clouds_factory: Any) -> None:
    from vm_core.providers import billing_rules as rules

    api = LambdaApi.start(mock_clouds_factory)
    instance_id = api.launch(name="minutes")
    api.wait_status(instance_id, "active")
    advance(api.clouds, 90)
    terminated = api.post("/instance-operations/terminate", {"instance_ids": [instance_id]})
    assert terminated.status_code == 200, terminated.text

    report = admin(api.clouds, "GET", "/billing?provider=lambda")
    line = line_of(report, instance_id)
    assert line["billed_seconds"] == 120  # 90 s and a little: two started minutes
    assert (line["billed_seconds"], line["cost_usd"]) == by_rule(line, rules.LAMBDA, report["now"])
    assert line["cost_usd"] == pytest.approx(120 * line["intervals"][-2]["price_per_hour"] / 3600, abs=1e-6)


def test_a_deleted_vms_bill_is_kept_a_month_of_wall_time(mock_clouds_factory: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    api = LambdaApi.start(mock_clouds_factory)
    instance_id = api.launch(name="kept")
    api.wait_status(instance_id, "active")
    assert api.post("/instance-operations/terminate", {"instance_ids": [instance_id]}).status_code == 200
    advance(api.clouds, 40 * 86400)  # the world clock alone purges nothing: retention is wall time
    assert line_of(admin(api.clouds, "GET", "/billing"), instance_id)["billed_seconds"] == 60
    world, real_now = api.clouds.world, api.clouds.world.now
    monkeypatch.setattr(world, "now", lambda: real_now() + 30 * 86400)  # a month of real time, less a day
    assert line_of(admin(api.clouds, "GET", "/billing"), instance_id)["billed_seconds"] == 60
    monkeypatch.setattr(world, "now", lambda: real_now() + 32 * 86400)
    assert all(v["id"] != instance_id for v in admin(api.clouds, "GET", "/billing")["vms"])


def test_a_lambda_reservation_half_idle_bills_its_whole_capacity_once(mock_clouds_factory: Any) -> None:
    api = LambdaApi.start(mock_clouds_factory)
    instance_id = api.launch(region_name="us-south-2", instance_type_name="gpu_1x_h100_sxm5",
                             reservation_id=RESERVATION_ID)
    api.wait_status(instance_id, "active")
    since = world_now(api.clouds)
    advance(api.clouds, 3600)
    until = since + 3600  # exactly an hour: the clock passed it

    report = admin(api.clouds, "GET", f"/billing?provider=lambda&since={since!r}&until={until!r}")
    (reserved,) = report["reservations"]
    assert (reserved["id"], reserved["quantity_gpus"], reserved["vm_ids"]) == (RESERVATION_ID, 8, [instance_id])
    assert reserved["reserved_gpu_hours"] == pytest.approx(8, abs=1e-5)
    assert reserved["used_gpu_hours"] == pytest.approx(1, abs=1e-5)
    assert reserved["idle_gpu_hours"] == pytest.approx(7, abs=1e-5)
    assert reserved["cost_usd"] == pytest.approx(8 * 2.49, abs=1e-4)
    assert reserved["idle_cost_usd"] == pytest.approx(7 * 2.49, abs=1e-4)
    line = line_of(report, instance_id)
    assert (line["pricing"], line["reservation_id"], line["billed_seconds"]) == ("reservation", RESERVATION_ID, 3600)
    assert line["cost_by_pricing_usd"] == {"on-demand": 0.0, "spot": 0.0, "reservation": pytest.approx(2.49)}
    totals = report["totals"]
    assert totals["reservation_usage_usd"] == pytest.approx(2.49)
    assert totals["billed_usd"] == pytest.approx(8 * 2.49, abs=1e-4)  # the VM's use is not billed again


# ------------------------------------------------------------------------------------------------ Nebius
def test_a_nebius_spot_vm_bills_at_the_spot_price(nebius: testkit.Harness) -> None:
    spec = testkit.instance_spec(preemptible=compute.PreemptibleSpec(
        on_preemption=compute.PreemptibleSpecPreemptionPolicy.STOP), follows_spot_price=compute.FollowsSpotPriceSpec())
    op = nebius.client.wait(nebius.create("spot", spec))
    assert op.status.code == 0, op.status
    deadline = time.monotonic() + testkit.DEFAULT_TIMEOUT
    while nebius.get(op.resource_id).status.state != compute.InstanceStatusInstanceState.RUNNING:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    since = world_now(nebius.clouds)
    advance(nebius.clouds, 600)
    until = since + 600

    report = admin(nebius.clouds, "GET", f"/billing?since={since!r}&until={until!r}")
    line = line_of(report, op.resource_id)
    shape = nebius.world.shape(Provider.NEBIUS, "/".join(testkit.H100))
    assert shape is not None
    price = billing.spot_price(nebius.world, Provider.NEBIUS, shape)
    assert price < billing.list_price(shape)
    assert (line["pricing"], line["intervals"][-1]["price_per_hour"]) == ("spot", float(price))
    assert line["billed_seconds"] == 600
    assert line["cost_usd"] == pytest.approx(float(Decimal(600) * price / 3600), abs=1e-6)
    assert report["totals"]["spot_usd"] == line["cost_usd"]


def test_an_exchanged_nebius_token_outlives_a_day_of_world_clock(nebius: testkit.Harness) -> None:
    endpoints = nebius.clouds.endpoints
    document = control.nebius_service_account_credentials(endpoints, endpoints["nebius"]["service_account_id"])
    token = nebius.connect(None).tokens.exchange(testkit.exchange_request(testkit.subject_jwt(document)))
    assert isinstance(token, iam.CreateTokenResponse) and token.expires_in < 86400
    advance(nebius.clouds, 86400)
    listed = nebius.connect(token.access_token).instances.list(compute.ListInstancesRequest(parent_id=nebius.project))
    assert listed.items == []


# ------------------------------------------------------------------------------------------------ the clock
def test_the_clock_moves_operations_and_survives_a_restart(mock_clouds_factory: Any, tmp_path: Any) -> None:
    state_dir = tmp_path / "state"
    clouds = mock_clouds_factory(state_dir=state_dir)
    before = admin(clouds, "GET", "/clock")
    assert before["offset_seconds"] == 0 and before["now"] == pytest.approx(before["wall_now"], abs=1)
    moved = admin(clouds, "POST", "/clock", {"advance_seconds": 7200})
    assert moved["offset_seconds"] == 7200
    assert moved["now"] - moved["wall_now"] == pytest.approx(7200, abs=0.01)
    env = env_for(clouds)
    vm = create_vm(env.client, env.project, "later", type_=L40S, location="eu-iceland1-a")
    assert vm["created_at"] >= time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 7000))
    clouds.stop()
    again = mock_clouds_factory(state_dir=state_dir)
    assert admin(again, "GET", "/clock")["offset_seconds"] == 7200
    assert line_of(admin(again, "GET", "/billing"), vm["id"])["intervals"][-1]["state"] == "running"


@pytest.mark.parametrize("body", [{"advance_seconds": 0}, {"advance_seconds": -5}, {"advance_seconds": "1"},
                                  {"advance_seconds": 1e12}, {"seconds": 5}, {}])
def test_a_bad_clock_move_is_refused_and_changes_nothing(clouds: Any, body: dict[str, Any]) -> None:
    with pytest.raises(RuntimeError, match="advance_seconds|unknown field|Object missing"):
        admin(clouds, "POST", "/clock", body)
    assert admin(clouds, "GET", "/clock")["offset_seconds"] == 0


@pytest.mark.parametrize("query, message", [("provider=aws", "provider must be one of"),
                                            ("since=yesterday", "since must be epoch seconds"),
                                            ("since=100&until=50", "until must not be before since")])
def test_a_bad_billing_query_is_refused(clouds: Any, query: str, message: str) -> None:
    with pytest.raises(RuntimeError, match=message):
        admin(clouds, "GET", f"/billing?{query}")


# ------------------------------------------------------------------------------------------------ rules, CLI
def test_the_mock_rules_are_vms_rules() -> None:
    from vm_core.providers import billing_rules as rules

    for provider, rule in billing.RULES.items():
        theirs = rules.RULES[provider.value]
        states = {"terminating" if s.value == "deleting" else s.value for s in rule.billed_states}
        assert (rule.granularity_seconds, rule.minimum_seconds, states, rule.stopped_disks_bill) == \
            (theirs.granularity_seconds, theirs.minimum_seconds, set(theirs.billed_states), theirs.stopped_disks_bill)


def test_the_cli_prints_the_bill(mock_clouds_factory: Any, tmp_path: Any) -> None:
    state_dir = tmp_path / "state"
    api = LambdaApi.start(mock_clouds_factory, state_dir=state_dir)
    instance_id = api.launch(name="printed")
    api.wait_status(instance_id, "active")
    runner = CliRunner()
    moved = runner.invoke(main, ["clock", "--state-dir", str(state_dir), "--advance", "3600"])
    assert moved.exit_code == 0 and "offset 3600.000 s" in moved.output

    as_json = runner.invoke(main, ["billing", "--state-dir", str(state_dir), "--provider", "lambda", "-o", "json"])
    assert as_json.exit_code == 0, as_json.output
    line = line_of(json.loads(as_json.output), instance_id)
    assert 3600 <= line["billed_seconds"] <= 3600 + 60 and line["name"] == "printed"

    table = runner.invoke(main, ["billing", "--state-dir", str(state_dir)])
    assert table.exit_code == 0, table.output
    header, row = table.output.splitlines()[:2]
    assert header.split() == ["PROVIDER", "ID", "NAME", "SHAPE", "PRICING", "HOURS", "COST"]
    assert row.split()[:5] == ["lambda", instance_id, "printed", "gpu_1x_a10", "on-demand"]
    assert "h100-reserved-south" in table.output and "total billed $" in table.output


def test_the_cli_says_when_no_server_runs(tmp_path: Any) -> None:
    result = CliRunner().invoke(main, ["billing", "--state-dir", str(tmp_path)])
    assert result.exit_code == 3 and "no mock-clouds server is running" in result.output
