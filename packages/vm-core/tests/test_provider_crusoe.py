"""Crusoe specifics of the adapter, over the wire against the in-process Crusoe mock.

The lifecycle shared by every cloud is in test_contract.py; here: reservations (auto/none/ID/strict), stop and
start moving a VM out of and back into its reservation, RESET for hard reboots, offers with reserved capacity,
quota and capacity errors, injected faults with name-based resolution, settings, and import hygiene.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest
from cloud_sdk_core.net import Cause, CauseKind
from mock_clouds.core.models import Faults, OpKind, Provider, WorldState
from vm_core.catalog import default_catalog
from vm_core.cli.spelling import render
from vm_core.errors import (
    AuthError,
    CapacityError,
    ConfigError,
    NotFound,
    QuotaError,
    RateLimited,
    Scope,
    Timeout,
    Transient,
    Unsupported,
    UsageError,
    VmError,
)
from vm_core.model import CreateSpec, Instance, InstanceState, ReservationMode, ReservationRequest
from vm_core.provider import Explained, Paced, SupportsBatchDestroy, SupportsGetMany, SupportsSpot
from vm_core.providers import _crusoe_map
from vm_core.providers.crusoe import CrusoeProvider, plugin, policies
from vm_core.sshkeys import NO_KEY, parse_public_key

WAIT = 60.0  # generous: mock operations take a fraction of a second, but the machine may be busy
CHEAP = "804bf3a2-5b7e-4c1d-9f0a-6e2d8c4b1a11"  # h100, us-east1, 2.65 $/GPU-h, 32 GPUs
PRICEY = "e384a1de-3f2c-4b5a-8d9e-0c1b2a3f4e22"  # h100, us-east1, 2.90 $/GPU-h, 16 GPUs
H100_8X = "h100-80gb-sxm-ib.8x"
CRUSOE = Provider.CRUSOE
ENV_VARS = ("CRUSOE_ACCESS_KEY_ID", "CRUSOE_SECRET_KEY", "CRUSOE_DEFAULT_PROJECT", "CRUSOE_API_ENDPOINT")
AUTO, NONE = ReservationRequest(), ReservationRequest(ReservationMode.NONE)


# ---------------------------------------------------------------------------------------------- helpers
@pytest.fixture
def clouds(mock_clouds_factory: Callable[..., Any]) -> Any:
    return mock_clouds_factory(providers=("crusoe",))


@pytest.fixture
def crusoe(clouds: Any, connect: Callable[..., Any]) -> CrusoeProvider:
    return connect(clouds, "crusoe")


def h100(name: str, reservation: ReservationRequest = AUTO, **kwargs: Any) -> CreateSpec:
    return CreateSpec(name=name, gpu="H100", reservation=reservation, **kwargs)


def by_id(reservation_id: str, *, strict: bool = False) -> ReservationRequest:
    return ReservationRequest(ReservationMode.ID, reservation_id, strict=strict)


def vms_named(clouds: Any, name: str) -> list[Any]:
    """The mock's own inventory: every live VM with this name (the truth, not what the adapter says)."""
    with clouds.world.tx() as world:
        return [vm for vm in world.vms(CRUSOE) if vm.name == name]


def operation_kinds(clouds: Any, vm_id: str) -> list[OpKind]:
    with clouds.world.tx() as world:
        return [op.kind for op in world.operations(CRUSOE, resource_id=vm_id)]


def used_gpus(provider: CrusoeProvider, reservation_id: str) -> int | None:
    return next(r.used_gpus for r in provider.list_reservations() if r.id == reservation_id)


def retrying(call: Callable[[], Any], attempts: int = 30) -> Any:
    """Call again after Transient errors (reads are safe to repeat)."""
    for _ in range(attempts - 1):
        try:
            return call()
        except Transient:
            continue
    return call()


def wait_running(provider: CrusoeProvider, vm_id: str) -> Instance:
    deadline = time.monotonic() + WAIT
    while (vm := retrying(lambda: provider.get_instance(vm_id))).state is not InstanceState.RUNNING:
        assert time.monotonic() < deadline, f"{vm_id} still {vm.state}"
        time.sleep(0.01)
    return vm


def create_resolving(provider: CrusoeProvider, spec: CreateSpec) -> Instance:
    """What a careful caller (the fleet manager) does: after an ambiguous failure, look the name up before
    creating again, so a VM is never doubled."""
    for _ in range(30):
        try:
            return provider.begin_create(spec).wait(WAIT)
        except Transient:
            found = retrying(lambda: provider.find_instance(spec.name))
            if found is not None:
                return wait_running(provider, found.id)
    raise AssertionError(f"{spec.name} was never created")


def without_h100_capacity(state: WorldState) -> None:
    config = state.providers[CRUSOE]
    config.capacity = [c for c in config.capacity if c.shape != H100_8X]


def without_h100_quota(state: WorldState) -> None:
    for quota in state.providers[CRUSOE].quotas:
        if quota.family == "h100":
            quota.max_gpus = 0


# ---------------------------------------------------------------------------------------------- reservations
def test_auto_takes_the_cheapest_reservation_with_room(crusoe: CrusoeProvider) -> None:
    pendings = [crusoe.begin_create(h100(f"auto-{i}")) for i in range(5)]
    vms = [p.wait(WAIT) for p in pendings]
    # The cheap reservation holds 32 GPUs = four 8-GPU VMs; the fifth goes to the next cheapest.
    assert [vm.reservation_id for vm in vms] == [CHEAP] * 4 + [PRICEY]
    assert all(vm.reserved and vm.region == "us-east1-a" for vm in vms)
    assert [vm.price_per_hour for vm in vms] == [pytest.approx(2.65 * 8)] * 4 + [pytest.approx(2.90 * 8)]
    assert used_gpus(crusoe, CHEAP) == 32 and used_gpus(crusoe, PRICEY) == 8
    listed = {vm.id: vm for vm in crusoe.list_instances()}
    assert listed[vms[0].id].reservation_id == CHEAP and listed[vms[0].id].price_per_hour == pytest.approx(21.2)


def test_reservation_none_is_on_demand_at_list_price(crusoe: CrusoeProvider) -> None:
    vm = crusoe.begin_create(h100("on-demand", NONE)).wait(WAIT)
    assert (vm.reserved, vm.reservation_id, vm.price_per_hour) == (False, "", 31.20)
    assert used_gpus(crusoe, CHEAP) == 0


def test_a_vm_billed_spot_is_a_spot_vm_without_the_on_demand_price(crusoe: CrusoeProvider) -> None:
    """Crusoe's API creates no spot VMs, but one made elsewhere (billing_type Spot) is listed as spot, and the
    on-demand list price is not claimed for it (the catalog has no Crusoe spot price: unknown)."""
    import msgspec

    vm = crusoe.begin_create(h100("billed", NONE)).wait(WAIT)
    assert vm.spot is False and vm.to_json()["spot"] is False
    spot = crusoe._instance(msgspec.structs.replace(vm.native, billing_type="Spot"))
    assert (spot.spot, spot.reserved, spot.price_per_hour) == (True, False, None)
    assert spot.to_json()["spot"] is True


def test_every_create_says_where_it_landed_with_both_prices(crusoe: CrusoeProvider) -> None:
    """After a create vm reads the VM's `reservation_id` (Terraform reads it the same way to tell whether the
    backend ignored a named reservation: terraform-provider-crusoe internal/vm/vm_resource.go:468-476) and says
    where it runs: the reservation's price against the on-demand one."""
    pending = crusoe.begin_create(h100("auto-landed"))
    vm = pending.wait(WAIT)
    assert isinstance(pending, Explained) and vm.reservation_id == CHEAP
    assert pending.note == f"on reservation {CHEAP} at $21.20/h (on-demand $31.20/h)"
    on_demand = crusoe.begin_create(h100("od-landed", NONE))
    on_demand.wait(WAIT)
    assert isinstance(on_demand, Explained) and on_demand.note == ""  # asked for on-demand: nothing to say


def test_a_named_reservation_the_backend_picks_anyway_is_kept(crusoe: CrusoeProvider) -> None:
    """Naming the cheapest reservation with room works, strict or not: lowest_cost puts the VM there."""
    pending = crusoe.begin_create(h100("named", by_id(CHEAP, strict=True)))
    vm = pending.wait(WAIT)
    assert (vm.reservation_id, vm.region) == (CHEAP, "us-east1-a")
    assert vm.price_per_hour == pytest.approx(2.65 * 8)
    assert isinstance(pending, Explained) and pending.note.startswith(f"on reservation {CHEAP} at $21.20/h")


def test_a_named_reservation_is_ignored_and_the_landing_reported(crusoe: CrusoeProvider) -> None:
    """`--reservation ID` without --strict: the backend ignores the id (vm_resource.go:468-476) and the VM lands
    on the cheapest reservation with room; vm keeps it and says where, with both prices."""
    pending = crusoe.begin_create(h100("elsewhere", by_id(PRICEY)))
    vm = pending.wait(WAIT)
    assert (vm.reservation_id, vm.price_per_hour) == (CHEAP, pytest.approx(21.2))
    assert isinstance(pending, Explained)
    assert pending.note.startswith(f"on reservation {CHEAP} at $21.20/h (on-demand $31.20/h), not on reservation "
                                   f"{PRICEY}: Crusoe's backend ignores a reservation named at create")


def test_strict_named_reservation_elsewhere_is_destroyed_and_fails(clouds: Any, crusoe: CrusoeProvider) -> None:
    """`--reservation ID --strict` never ends with a VM elsewhere: the VM lowest_cost put on another reservation
    is destroyed and the create fails with a CapacityError of that reservation (exit 6). Source: Terraform's
    warning that the backend ignored the id (terraform-provider-crusoe internal/vm/vm_resource.go:468-476)."""
    pending = crusoe.begin_create(h100("strictly", by_id(PRICEY, strict=True)))
    with pytest.raises(CapacityError) as err:
        pending.wait(WAIT)
    assert err.value.scope is Scope.RESERVATION and err.value.exit_code == 6
    assert err.value.message.startswith(f"strictly landed on reservation {CHEAP} at $21.20/h (on-demand "
                                        f"$31.20/h), not on reservation {PRICEY}")
    assert err.value.message.endswith("--strict: it was destroyed")
    assert vms_named(clouds, "strictly") == []
    assert used_gpus(crusoe, CHEAP) == 0


def test_unknown_reservation_id_is_not_found_before_any_create(clouds: Any, crusoe: CrusoeProvider) -> None:
    with pytest.raises(NotFound, match="00000000-0000-4000-8000-00000000beef"):
        crusoe.begin_create(h100("ghost", by_id("00000000-0000-4000-8000-00000000beef")))
    assert vms_named(clouds, "ghost") == []


def test_strict_auto_is_unsupported(clouds: Any, crusoe: CrusoeProvider) -> None:
    with pytest.raises(Unsupported, match="pass --reservation ID") as err:
        crusoe.begin_create(h100("strict", ReservationRequest(ReservationMode.AUTO, strict=True)))
    assert err.value.provider == "crusoe"
    assert vms_named(clouds, "strict") == []


def test_stop_releases_the_reservation_and_start_reclaims_it(crusoe: CrusoeProvider) -> None:
    vm = crusoe.begin_create(h100("pausable")).wait(WAIT)
    assert vm.reservation_id == CHEAP and used_gpus(crusoe, CHEAP) == 8

    stopped = crusoe.begin_stop(vm.id).wait(WAIT)
    assert (stopped.state, stopped.reserved, stopped.reservation_id) == (InstanceState.STOPPED, False, "")
    assert used_gpus(crusoe, CHEAP) == 0

    started = crusoe.begin_start(vm.id).wait(WAIT)
    assert (started.state, started.reservation_id) == (InstanceState.RUNNING, CHEAP)
    assert started.price_per_hour == pytest.approx(21.2) and used_gpus(crusoe, CHEAP) == 8


def test_reservations_are_mapped_to_canonical_gpus(crusoe: CrusoeProvider) -> None:
    found = {r.id: r for r in crusoe.list_reservations()}
    cheap = found[CHEAP]
    assert (cheap.provider, cheap.gpu, cheap.regions, cheap.total_gpus, cheap.used_gpus) == (
        "crusoe", "H100", ("us-east1",), 32, 0)
    assert cheap.price_per_gpu_hour == pytest.approx(2.65) and cheap.terminable


def test_every_crusoe_catalog_shape_has_a_product_line_of_its_gpu() -> None:
    for shape in (s for s in default_catalog().shapes if s.provider == "crusoe"):
        assert _crusoe_map.PRODUCT_LINES[_crusoe_map.product_line(shape.shape)] == shape.gpu, shape.shape
    assert _crusoe_map.product_line("a100-80gb-sxm-ib.8x") == "a100-80gb-sxm"  # not the PCIe line
    assert _crusoe_map.product_line("a100-80gb.8x") == "a100-80gb"
    assert _crusoe_map.product_line("c1a.2x") == ""
    assert _crusoe_map.reservation_gpu("h200", default_catalog()) == "H200"
    assert _crusoe_map.reservation_gpu("gb200", default_catalog()) == "GB200"
    assert _crusoe_map.reservation_gpu("mi355x", default_catalog()) == ""  # a line vm's catalog has no shape of


# ---------------------------------------------------------------------------------------------- lifecycle
def test_hard_reboot_is_a_reset_and_soft_a_stop_then_start(clouds: Any, crusoe: CrusoeProvider) -> None:
    vm = crusoe.begin_create(h100("rebooter", NONE)).wait(WAIT)
    assert crusoe.begin_reboot(vm.id, hard=True).wait(WAIT).state is InstanceState.RUNNING
    soft = crusoe.begin_reboot(vm.id)
    assert isinstance(soft, Explained) and "stop then a start" in soft.note
    assert soft.wait(WAIT).state is InstanceState.RUNNING
    # Only the real API's actions: no REBOOT/RESTART (mock extensions).
    assert operation_kinds(clouds, vm.id) == [OpKind.CREATE, OpKind.RESET, OpKind.STOP, OpKind.START]


def test_states_are_mapped_explicitly() -> None:
    expected = {
        "STATE_INITIALIZING": "creating", "STATE_DEFINING": "creating", "STATE_STARTING": "starting",
        "STATE_RUNNING": "running", "STATE_SHUTDOWN": "stopping", "STATE_STOPPED": "stopped",
        "STATE_SHUTOFF": "stopped", "STATE_DELETING": "terminating", "STATE_DELETED": "terminated",
        "STATE_ERROR": "error", "STATE_CRASHED": "error", "STATE_PAUSED": "unknown", "SOMETHING_NEW": "unknown",
    }
    assert {raw: _crusoe_map.instance_state(raw).value for raw in expected} == expected


def test_timeout_says_the_operation_continues_and_how_to_follow_it(
    mock_clouds_factory: Callable[..., Any], connect: Callable[..., Any],
) -> None:
    slow = mock_clouds_factory(providers=("crusoe",), time_scale=1.0)  # a create takes 90 s
    provider = connect(slow, "crusoe")
    pending = provider.begin_create(h100("slow", NONE))
    with pytest.raises(Timeout) as err:
        pending.wait(0.01)
    assert pending.id in err.value.message and "continues in the cloud" in err.value.message
    assert err.value.hint is not None and f"vm get {pending.resource_id} --provider crusoe" in render(err.value.hint)
    assert [vm.id for vm in vms_named(slow, "slow")] == [pending.resource_id]  # the wait cancelled nothing


def test_malformed_ids_are_rejected_before_any_call(crusoe: CrusoeProvider) -> None:
    for call in (crusoe.get_instance, crusoe.begin_destroy, crusoe.begin_stop):
        with pytest.raises(UsageError, match="not a Crusoe instance id"):
            call("not-a-uuid")


# ---------------------------------------------------------------------------------------------- offers
def test_offers_list_zones_and_reservations_with_prices(crusoe: CrusoeProvider) -> None:
    offers = crusoe.offers("H100")
    on_demand = {(o.region, o.capacity, o.price_per_hour) for o in offers if not o.reserved}
    assert on_demand == {("us-east1-a", 4, 31.20), ("us-southcentral1-a", 2, 31.20)}
    reserved = [(o.reservation_id, o.region, o.capacity, round(o.price_per_hour, 2)) for o in offers if o.reserved]
    assert reserved == [(CHEAP, "us-east1-a", 4, 21.20), (PRICEY, "us-east1-a", 2, 23.20)]
    assert offers[0].reservation_id == CHEAP, "cheapest first"
    assert all((o.provider, o.gpu, o.gpu_count, o.shape) == ("crusoe", "H100", 8, H100_8X) for o in offers)

    crusoe.begin_create(h100("taken")).wait(WAIT)
    cheap = next(o for o in crusoe.offers("H100", 8) if o.reservation_id == CHEAP)
    assert cheap.capacity == 3
    assert crusoe.offers("H100", 1) == [] and crusoe.offers("B200") == []


# ---------------------------------------------------------------------------------------------- create errors
def test_a_gpu_crusoe_does_not_sell_is_a_usage_error_listing_what_it_sells(crusoe: CrusoeProvider) -> None:
    with pytest.raises(UsageError, match=r"sells no A10 shape; it sells .*H100:8 \(h100-80gb-sxm-ib\.8x\)"):
        crusoe.begin_create(CreateSpec(name="a10", gpu="A10"))
    with pytest.raises(UsageError, match="sells no H100:1 shape"):
        crusoe.begin_create(CreateSpec(name="one", gpu="H100", gpu_count=1))


def test_no_capacity_anywhere_is_a_provider_scoped_capacity_error_unless_reserved(
    mock_clouds_factory: Callable[..., Any], connect: Callable[..., Any],
) -> None:
    clouds = mock_clouds_factory(providers=("crusoe",), configure=without_h100_capacity)
    provider = connect(clouds, "crusoe")
    with pytest.raises(CapacityError) as err:
        provider.begin_create(h100("nowhere", NONE))
    assert (err.value.scope, err.value.provider) == (Scope.PROVIDER, "crusoe")
    assert vms_named(clouds, "nowhere") == []
    # With reservations allowed, the reservation's zone can still host it.
    vm = provider.begin_create(h100("reserved-anyway")).wait(WAIT)
    assert (vm.reservation_id, vm.region) == (CHEAP, "us-east1-a")


def test_quota_error(mock_clouds_factory: Callable[..., Any], connect: Callable[..., Any]) -> None:
    clouds = mock_clouds_factory(providers=("crusoe",), configure=without_h100_quota)
    provider = connect(clouds, "crusoe")
    with pytest.raises(QuotaError) as err:
        provider.begin_create(h100("over-quota", NONE)).wait(WAIT)
    assert err.value.provider == "crusoe"
    assert provider.find_instance("over-quota") is None


# ---------------------------------------------------------------------------------------------- faults
def test_injected_transient_errors_still_complete_one_create(clouds: Any, crusoe: CrusoeProvider) -> None:
    # Seed 23 spares the three reads begin_create makes first and fails its POST: nothing is created, the
    # name lookup finds nothing, the create is sent again. Later requests fail at random (~30%).
    clouds.world.configure_faults(CRUSOE, Faults(error_rate=0.3, seed=23))
    vm = create_resolving(crusoe, h100("flaky"))
    assert vm.state is InstanceState.RUNNING and vm.name == "flaky"
    assert clouds.world.faults[CRUSOE].counts["error"] >= 1
    assert [v.id for v in vms_named(clouds, "flaky")] == [vm.id]


def test_dropped_create_response_is_transient_and_the_vm_is_found_by_name(
    clouds: Any, crusoe: CrusoeProvider,
) -> None:
    spec = h100("dropped", NONE, shape=H100_8X, region="us-east1-a")  # pinned: the create is the only call
    clouds.world.configure_faults(CRUSOE, Faults(drop_rate=1.0))
    with pytest.raises(Transient):
        crusoe.begin_create(spec)
    clouds.world.configure_faults(CRUSOE, Faults())

    assert crusoe.find_instance("dropped,other") is None  # a comma cannot go through the `names` filter
    found = crusoe.find_instance("dropped")
    assert found is not None and found.name == "dropped"
    assert [v.id for v in vms_named(clouds, "dropped")] == [found.id], "the cloud did the work exactly once"
    assert wait_running(crusoe, found.id).reservation_id == ""
    crusoe.begin_destroy(found.id).wait(WAIT)
    assert crusoe.find_instance("dropped") is None


def test_sdk_errors_translate_through_one_table() -> None:
    from crusoe_sdk import errors as e

    cases: list[tuple[BaseException, type[VmError]]] = [
        (e.CapacityError("out", code="out_of_stock"), CapacityError),
        (e.QuotaError("quota", code="quota_exceeded"), QuotaError),
        (e.AuthError("no", status=401), AuthError),
        (e.PermissionDenied("no", status=403), AuthError),
        (e.OperationUnavailable("gone", status=403), NotFound),
        (e.NotFound("gone", status=404), NotFound),
        (e.RateLimited("slow down", status=429), RateLimited),
        (e.ServerError("boom", status=503), Transient),
        (e.NoResponse("lost"), Transient),
        (e.RequestNotSent("refused"), Transient),
        (e.OperationTimeout("OP-1", 5.0, "IN_PROGRESS"), Timeout),
        (e.BadRequest("bad", status=400), VmError),
        (e.ConnectError("cannot reach", cause=Cause(CauseKind.DNS, "DNS: x"), endpoint="x"), Transient),
        (e.ProjectUnresolved("none", wanted="", projects=[]), ConfigError),
        (e.ProjectUnavailable("no", project_id="p", status=403), ConfigError),
    ]
    context = _crusoe_map.ErrorContext(region="us-east1-a", resource_id="vm-1")
    for sdk_error, expected in cases:
        translated = _crusoe_map.translate(sdk_error, context)
        assert type(translated) is expected, (sdk_error, translated)
        assert translated.provider == "crusoe"
    capacity = _crusoe_map.translate(e.CapacityError("out", code="out_of_stock"), context)
    assert isinstance(capacity, CapacityError) and (capacity.scope, capacity.region) == (Scope.REGION, "us-east1-a")
    assert _crusoe_map.translate(KeyError("not ours"), context) is None


# ---------------------------------------------------------------------------------------------- settings
def test_missing_settings_name_the_setting_and_its_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    complete = {"access_key_id": "key", "secret_key": "c2VjcmV0", "project_id": "p"}
    for key, env in (("access_key_id", "CRUSOE_ACCESS_KEY_ID"), ("secret_key", "CRUSOE_SECRET_KEY")):
        with pytest.raises(ConfigError, match=f"'{key}' is missing.*{env}"):
            plugin.connect({k: v for k, v in complete.items() if k != key})
    plugin.connect({k: v for k, v in complete.items() if k != "project_id"})  # optional: the key's only project
    for scale in ("fast", 0, -1):
        with pytest.raises(ConfigError, match="time_scale"):
            plugin.connect({**complete, "time_scale": scale})


def test_a_malformed_secret_is_a_config_error_that_does_not_echo_it() -> None:
    with pytest.raises(ConfigError) as err:
        plugin.connect({"access_key_id": "key", "secret_key": "Xsecret99", "project_id": "p"})
    assert "Xsecret99" not in str(err.value) and "Xsecret99" not in repr(err.value.to_json())


def test_connect_reads_no_process_environment(clouds: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The session is the one reader of the environment (its fallback to CRUSOE_* is test_session.py's): a
    `connect` given a mapping uses that mapping alone."""
    endpoint = clouds.endpoints["crusoe"]
    monkeypatch.setenv("CRUSOE_ACCESS_KEY_ID", endpoint["access_key_id"])
    monkeypatch.setenv("CRUSOE_SECRET_KEY", endpoint["secret_key"])
    with pytest.raises(ConfigError, match="access_key_id"):
        plugin.connect({"time_scale": 0.002, "api_endpoint": endpoint["url"]})


def test_plugin_declares_its_settings() -> None:
    settings = {s.key: s for s in plugin.settings}
    assert (plugin.name, plugin.title) == ("crusoe", "Crusoe Cloud")
    assert [k for k, s in settings.items() if s.required] == ["access_key_id", "secret_key"]
    assert settings["project_id"].env == "CRUSOE_DEFAULT_PROJECT"
    assert [k for k, s in settings.items() if s.secret] == ["secret_key"]
    assert settings["api_endpoint"].env == "CRUSOE_API_ENDPOINT"


def test_time_scale_multiplies_poll_and_retry_intervals() -> None:
    poll, retry = policies(0.002)
    assert poll.initial == pytest.approx(0.002) and poll.maximum == pytest.approx(0.03)
    assert retry.initial == pytest.approx(0.001)
    real_poll, _ = policies(1.0)
    assert real_poll.initial == 1.0 and real_poll.maximum == 15.0


def test_importing_the_adapter_loads_no_sdk_and_no_requests() -> None:
    code = (
        "import sys, vm_core.providers.crusoe as c; "
        "assert c.plugin.name == 'crusoe'; "
        "loaded = [m for m in ('crusoe_sdk', 'requests', 'msgspec') if m in sys.modules]; "
        "assert not loaded, loaded"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_deletes_go_one_per_vm_and_a_follower_reads_a_filtered_listing_every_poll_interval(
        crusoe: CrusoeProvider) -> None:
    """Crusoe's DELETE takes one VM; its batch read is the listing filtered by id (`get_instances`), paced by the
    poll policy."""
    assert not isinstance(crusoe, SupportsBatchDestroy) and isinstance(crusoe, SupportsGetMany)
    assert isinstance(crusoe, Paced) and crusoe.poll_interval > 0
    settings = {"access_key_id": "k", "secret_key": "c2VjcmV0", "project_id": "p", "time_scale": "1"}
    assert plugin.connect(settings).poll_interval == 1.0


def test_spot_is_unsupported(clouds: Any, crusoe: CrusoeProvider) -> None:
    assert not isinstance(crusoe, SupportsSpot)
    with pytest.raises(Unsupported, match="no spot instances"):
        crusoe.begin_create(CreateSpec(name="spot", gpu="H100", spot=True))
    assert clouds.world.vms(Provider.CRUSOE) == []


# ------------------------------------------------------------------------------------------------ ssh keys
def test_without_any_key_the_create_is_refused_before_any_call(clouds: Any, connect: Callable[..., Any]) -> None:
    keyless = connect(clouds, "crusoe", ssh_public_key=None)
    with pytest.raises(UsageError, match="no SSH public key"):
        keyless.begin_create(h100("keyless"))
    assert vms_named(clouds, "keyless") == []


def test_the_key_sent_is_the_users_and_no_ssh_key_sends_one_nobody_holds(crusoe: CrusoeProvider, clouds: Any) -> None:
    mine = crusoe.begin_create(h100("mine")).wait(WAIT)
    nobody = crusoe.begin_create(h100("nobody", ssh_public_key=NO_KEY)).wait(WAIT)
    (sent_mine,) = [vm.native["ssh_public_key"] for vm in vms_named(clouds, "mine")]
    (sent_nobody,) = [vm.native["ssh_public_key"] for vm in vms_named(clouds, "nobody")]
    assert sent_mine == crusoe._ssh_public_key
    assert parse_public_key(sent_nobody).startswith("ssh-ed25519 ") and sent_nobody != sent_mine
    for vm in (mine, nobody):
        crusoe.begin_destroy(vm.id).wait(WAIT)
