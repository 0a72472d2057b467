"""The Lambda adapter over the wire against the Lambda mock: what the contract suite does not cover.

Lambda's particulars: no stop/start, capacity read before launching, reservations whose instances cannot be
terminated, a client-side rate limiter shared by concurrent creates, and lost launch answers resolved by name.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import lambda_sdk as sdk
import pytest
from mock_clouds.core.models import Capacity, Faults, Provider, Quota, WorldState
from vm_core.cli.spelling import render
from vm_core.errors import (
    AuthError,
    CapacityError,
    ConfigError,
    QuotaError,
    RateLimited,
    Scope,
    Timeout,
    Transient,
    Unsupported,
    UsageError,
    VmError,
)
from vm_core.kit.keys import key_name
from vm_core.model import CreateSpec, InstanceState, ReservationMode, ReservationRequest
from vm_core.provider import (
    Paced,
    SupportsBatchDestroy,
    SupportsGetMany,
    SupportsReboot,
    SupportsReservations,
    SupportsSpot,
    SupportsStopStart,
)
from vm_core.provider import Provider as ProviderProtocol
from vm_core.providers._lambda_map import to_vm_error
from vm_core.providers.lambda_cloud import BATCH_DESTROY_LIMIT, plugin

WAIT = 60.0  # generous: the machine is shared; mock boots take a fraction of a second
RESERVATION = "9b2e4c6a8d0f41e3a5c7e9b1d3f5a7c9"  # default scenario: 8 H100 GPUs in us-south-2, $2.49/GPU-h
ACCOUNT = "acct-7f3e2d1c"
ON_DEMAND = ReservationRequest(ReservationMode.NONE)
UNREACHABLE = {"api_key": "k", "api_endpoint": "http://127.0.0.1:9/api/v1"}  # port 9: nothing listens


@pytest.fixture
def clouds(mock_clouds_factory: Any) -> Any:
    return mock_clouds_factory(providers=("lambda",))


@pytest.fixture
def lam(clouds: Any, connect: Any) -> Any:
    return connect(clouds, "lambda")


def spec(name: str, gpu: str = "A10", **kwargs: Any) -> CreateSpec:
    kwargs.setdefault("reservation", ON_DEMAND)
    return CreateSpec(name=name, gpu=gpu, **kwargs)


def reserved(**kwargs: Any) -> ReservationRequest:
    return ReservationRequest(ReservationMode.ID, RESERVATION, **kwargs)


def world_vms(clouds: Any) -> list[Any]:
    """The Lambda VMs the mock holds that are not deleted (terminating ones included)."""
    with clouds.world.tx() as world:
        return world.vms(Provider.LAMBDA)


def faults(clouds: Any, **kwargs: Any) -> None:
    clouds.world.configure_faults(Provider.LAMBDA, Faults(**kwargs))


# ------------------------------------------------------------------------------------ plugin and settings
def test_importing_the_adapter_and_loading_its_plugin_import_no_sdk() -> None:
    code = (
        "import sys\n"
        "from vm_core.plugins import provider_plugins\n"
        "import vm_core.providers.lambda_cloud\n"
        "assert provider_plugins().get('lambda').title == 'Lambda Cloud'\n"
        "print(sorted(m for m in ('lambda_sdk', 'requests') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_capabilities_are_declared_by_type(lam: Any) -> None:
    assert (plugin.name, plugin.title, lam.name) == ("lambda", "Lambda Cloud", "lambda")
    assert isinstance(lam, ProviderProtocol)
    assert isinstance(lam, SupportsReboot) and isinstance(lam, SupportsReservations)
    assert not isinstance(lam, SupportsStopStart)  # Lambda's API has no stop/start
    assert isinstance(lam, SupportsBatchDestroy) and lam.batch_destroy_limit == BATCH_DESTROY_LIMIT
    assert isinstance(lam, Paced) and not isinstance(lam, SupportsGetMany)  # Lambda has no batch read
    api_key = next(s for s in plugin.settings if s.key == "api_key")
    assert (api_key.env, api_key.secret, api_key.required) == ("LAMBDA_API_KEY", True, True)
    assert all(not s.required for s in plugin.settings if s.key != "api_key")


def test_the_terminate_batch_is_a_setting_of_whole_numbers() -> None:
    assert BATCH_DESTROY_LIMIT == 1000  # one call for any fleet of up to 1,000 Lambda VMs
    assert plugin.connect({"api_key": "k", "terminate_batch": "25"}).batch_destroy_limit == 25
    for bad in ("0", "2.5", "many", True):
        with pytest.raises(ConfigError, match="'terminate_batch' must be a whole number of 1 or more"):
            plugin.connect({"api_key": "k", "terminate_batch": bad})


@pytest.mark.parametrize("settings", [{}, {"api_key": ""}, {"api_key": "   "}, {"api_key": None}])
def test_a_missing_api_key_is_a_config_error_naming_the_variable(settings: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as err:
        plugin.connect(settings)
    assert "LAMBDA_API_KEY" in err.value.message


@pytest.mark.parametrize(("key", "value"), [("request_interval", "fast"), ("launch_interval", -1), ("request_burst", 0),
                                            ("time_scale", 0), ("time_scale", True)])
def test_malformed_numbers_are_config_errors_that_never_echo_the_key(key: str, value: Any) -> None:
    secret = "secret_vm_test_0123456789abcdef"
    with pytest.raises(ConfigError) as err:
        plugin.connect({"api_key": secret, key: value})
    assert key in err.value.message and secret not in str(err.value.to_json())


def test_connect_makes_no_network_call_and_hides_the_key() -> None:
    provider = plugin.connect({**UNREACHABLE, "api_key": "secret_hidden", "request_interval": "0.5",
                               "launch_interval": "6", "time_scale": "1"})
    assert "secret_hidden" not in repr(provider)
    assert provider.poll_interval == pytest.approx(2 * 0.5 * 1.1)  # two request intervals, paced 1.1 x wider


def test_a_watcher_reads_every_two_request_intervals_of_the_documented_limit() -> None:
    assert plugin.connect({**UNREACHABLE, "time_scale": "1"}).poll_interval == pytest.approx(2.2)


def test_malformed_ids_are_rejected_before_any_call() -> None:
    provider = plugin.connect(UNREACHABLE)  # any call would fail as Transient: nothing listens there
    for call in (provider.get_instance, provider.begin_destroy, provider.begin_reboot):
        for bad in ("", "abc", "0" * 31, "Z" * 32, "../" + "0" * 29):
            with pytest.raises(UsageError, match="32 lowercase hex"):
                call(bad)


def test_an_unreachable_api_is_transient() -> None:
    provider = plugin.connect({**UNREACHABLE, "time_scale": 0.001, "request_interval": 0})  # fast retries
    with pytest.raises(Transient, match="Lambda Cloud: cannot reach 127.0.0.1:9 .*: connection refused"):
        list(provider.list_instances())


_API = {"status": 400, "code": "c", "message": "m"}
SDK_ERRORS = [
    (sdk.ServerError("down", status=503, code="provider/internal-unavailable"), Transient, "server error 503"),
    (sdk.RateLimited("slow down", status=429), RateLimited, "rate limit"),
    (sdk.ResponseNotReceived("reset", method="POST", url="u"), Transient, "may have taken effect"),
    (sdk.Forbidden("Your account is inactive.", status=403), AuthError, "inactive"),
    (sdk.AuthError("bad key", status=401), AuthError, "LAMBDA_API_KEY"),
    (sdk.ReservedInstanceError("no", status=403), Unsupported, "keeps running"),
    (sdk.Conflict("busy", status=409), VmError, "current state"),
    (sdk.InvalidParameters(**_API), UsageError, "rejected"),
    (sdk.OperationTimeout("t", instance_id="i" * 32, timeout=5, last_status=sdk.InstanceStatus.BOOTING),
     Timeout, "continues in the cloud"),
    (sdk.PagingLoopError("loop"), VmError, "loop"),
]


@pytest.mark.parametrize(("exc", "expected", "text"), SDK_ERRORS, ids=[type(e).__name__ for e, _, _ in SDK_ERRORS])
def test_every_sdk_error_has_its_vm_error(exc: Exception, expected: type[VmError], text: str) -> None:
    error = to_vm_error(exc)
    assert type(error) is expected
    assert error.provider == "lambda" and text in f"{error.message} {error.suggestion}"


def test_errors_not_from_the_sdk_are_not_translated() -> None:
    assert to_vm_error(ValueError("not from the SDK")) is None


def test_an_unknown_ssh_key_name_is_a_config_error(clouds: Any, connect: Any) -> None:
    provider = connect(clouds, "lambda", ssh_key_name="laptop", ssh_public_key=None)
    with pytest.raises(ConfigError, match="laptop") as err:
        provider.begin_create(spec("keyless"))
    assert "default" in err.value.message  # lists the keys the account has
    assert world_vms(clouds) == []


def test_without_any_key_the_accounts_first_key_is_never_used(clouds: Any, connect: Any) -> None:
    provider = connect(clouds, "lambda", ssh_public_key=None)
    with pytest.raises(UsageError, match="no SSH public key") as err:
        provider.begin_create(spec("keyless"))
    assert "--ssh-key" in render(err.value.hint) and "ssh-keygen" in render(err.value.hint)
    assert world_vms(clouds) == []


def test_the_ssh_key_name_setting_names_the_accounts_key(clouds: Any, connect: Any) -> None:
    provider = connect(clouds, "lambda", ssh_key_name="default", ssh_public_key=None)
    vm = provider.begin_create(spec("named-key")).wait(WAIT)
    assert vm.native.ssh_key_names == ["default"]


def test_an_account_key_with_another_comment_is_the_same_key(clouds: Any, lam: Any) -> None:
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGRlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn+AgYKD me@laptop"
    first = lam.begin_create(spec("comment-1", ssh_public_key=key)).wait(WAIT)
    again = lam.begin_create(spec("comment-2", ssh_public_key=key.replace("me@laptop", "me@desktop"))).wait(WAIT)
    assert first.native.ssh_key_names == again.native.ssh_key_names == [key_name(key)]


def test_a_public_key_is_registered_once_even_by_concurrent_creates(clouds: Any, lam: Any, connect: Any) -> None:
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGRlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn+AgYKD me@laptop"
    with ThreadPoolExecutor(3) as pool:
        vms = list(pool.map(lambda n: lam.begin_create(spec(f"keyed-{n}", ssh_public_key=key)).wait(WAIT), range(3)))
    (used,) = {tuple(vm.native.ssh_key_names) for vm in vms}
    with clouds.world.tx() as world:
        keys = world.state.extra_state["lambda"].accounts[ACCOUNT].ssh_keys
        assert [k.name for k in keys if k.public_key == key] == list(used)  # added once, under a vm- name
    assert used[0].startswith("vm-")
    fresh = connect(clouds, "lambda")  # knows no keys yet: finds the registered one instead of adding it again
    vm = fresh.begin_create(spec("keyed-again", ssh_public_key=key + "\n")).wait(WAIT)
    assert vm.native.ssh_key_names == list(used)


# ---------------------------------------------------------------------------------- create: shape, region
def test_create_rejects_what_lambda_does_not_sell(clouds: Any, lam: Any) -> None:
    with pytest.raises(UsageError, match="H100:1") as err:
        lam.begin_create(spec("h200", gpu="H200"))  # Lambda sells no H200 (the message lists what it sells)
    assert "does not sell H200" in err.value.message
    with pytest.raises(UsageError, match="H100:3"):
        lam.begin_create(spec("three", gpu="H100", gpu_count=3))
    with pytest.raises(UsageError):
        lam.begin_create(spec("x" * 65))
    with pytest.raises(UsageError, match="mars-1"):
        lam.begin_create(spec("far-away", region="mars-1"))
    assert world_vms(clouds) == []


def test_create_picks_the_smallest_shape_and_a_region_with_capacity(lam: Any) -> None:
    vm = lam.begin_create(spec("smallest", gpu="H100")).wait(WAIT)
    assert (vm.shape, vm.gpu, vm.gpu_count, vm.state) == ("gpu_1x_h100_sxm5", "H100", 1, InstanceState.RUNNING)
    assert vm.region in ("us-south-2", "us-south-3") and vm.price_per_hour == 3.29
    assert vm.created_at is None  # Lambda does not say when an instance was launched


def test_no_listed_capacity_in_the_region_fails_before_any_launch(clouds: Any, lam: Any) -> None:
    with pytest.raises(CapacityError) as err:
        lam.begin_create(spec("no-room", gpu="H100", region="us-east-1"))
    assert (err.value.scope, err.value.region, err.value.provider) == (Scope.REGION, "us-east-1", "lambda")
    assert "us-south-2" in (err.value.suggestion or "")  # says where there is room
    assert world_vms(clouds) == []  # no launch was tried: a refused launch would still cost a launch token


def test_no_capacity_anywhere_is_a_provider_scoped_error(mock_clouds_factory: Any, connect: Any) -> None:
    def no_h100(state: WorldState) -> None:
        config = state.providers["lambda"]
        config.capacity = [c for c in config.capacity if "h100" not in c.shape]

    clouds = mock_clouds_factory(providers=("lambda",), configure=no_h100)
    with pytest.raises(CapacityError) as err:
        connect(clouds, "lambda").begin_create(spec("nowhere", gpu="H100"))
    assert (err.value.scope, err.value.region) == (Scope.PROVIDER, None)
    assert world_vms(clouds) == []


def test_a_capacity_refusal_by_the_api_names_the_region(clouds: Any, lam: Any) -> None:
    # Reservation launches skip the on-demand listing, so the API itself refuses when the reservation is full.
    lam.begin_create(spec("all-eight", gpu="H100", gpu_count=8, reservation=reserved())).wait(WAIT)
    with pytest.raises(CapacityError) as err:
        lam.begin_create(spec("one-more", gpu="H100", reservation=reserved()))
    assert (err.value.scope, err.value.region) == (Scope.REGION, "us-south-2")
    assert [vm.name for vm in world_vms(clouds)] == ["all-eight"]


def test_a_quota_refusal_is_a_quota_error(mock_clouds_factory: Any, connect: Any) -> None:
    def no_a10_quota(state: WorldState) -> None:
        state.providers["lambda"].quotas = [Quota(scope=ACCOUNT, family="a10", max_gpus=0)]

    clouds = mock_clouds_factory(providers=("lambda",), configure=no_a10_quota)
    with pytest.raises(QuotaError):
        connect(clouds, "lambda").begin_create(spec("over-quota"))
    assert world_vms(clouds) == []


# ------------------------------------------------------------------------------------------ reservations
def test_a_reservation_launch_is_reserved_and_priced_by_the_reservation(lam: Any) -> None:
    vm = lam.begin_create(spec("on-reservation", gpu="H100", reservation=reserved())).wait(WAIT)
    assert (vm.reserved, vm.reservation_id, vm.region) == (True, RESERVATION, "us-south-2")
    assert vm.price_per_hour == pytest.approx(2.49)  # $2.49 per GPU-hour x 1 GPU, not the $3.29 list price
    assert lam.get_instance(vm.id).reservation_id == RESERVATION
    listed = next(i for i in lam.list_instances() if i.id == vm.id)
    assert (listed.reserved, listed.price_per_hour) == (True, pytest.approx(2.49))
    (info,) = lam.list_reservations()
    assert (info.id, info.gpu, info.regions, info.total_gpus, info.used_gpus) == (
        RESERVATION, "H100", ("us-south-2",), 8, 1)
    assert info.price_per_gpu_hour == pytest.approx(2.49) and info.terminable is False


def test_destroying_a_reserved_instance_is_unsupported_and_it_keeps_running(clouds: Any, lam: Any) -> None:
    vm = lam.begin_create(spec("kept", gpu="H100", reservation=reserved())).wait(WAIT)
    with pytest.raises(Unsupported) as err:
        lam.begin_destroy(vm.id)
    assert "keeps running" in err.value.message and "Lambda Support" in (err.value.suggestion or "")
    assert lam.get_instance(vm.id).state is InstanceState.RUNNING
    assert [(v.id, v.state.value) for v in world_vms(clouds)] == [(vm.id, "running")]


def test_destroy_many_sends_one_terminate_and_answers_per_id(clouds: Any, lam: Any) -> None:
    """A reserved id makes Lambda refuse the whole call: the reserved one is Unsupported (it keeps running),
    the others are terminated by a second call; an id already gone is a finished Pending, a malformed one a
    UsageError, and no id is left without an answer."""
    kept = lam.begin_create(spec("kept", gpu="H100", reservation=reserved())).wait(WAIT)
    doomed = [lam.begin_create(spec(f"doomed-{n}")).wait(WAIT) for n in range(2)]
    gone = lam.begin_create(spec("gone")).wait(WAIT)
    lam.begin_destroy(gone.id).wait(WAIT)
    ids = [kept.id, doomed[0].id, gone.id, doomed[1].id, "not-an-id"]
    answers = lam.begin_destroy_many(ids)
    assert set(answers) == set(ids)
    assert isinstance(answers[kept.id], Unsupported) and "keeps running" in answers[kept.id].message
    assert isinstance(answers["not-an-id"], UsageError)
    assert answers[gone.id].done() and answers[gone.id].wait(0) is None
    for vm in doomed:
        assert answers[vm.id].wait(WAIT) is None
    assert {(v.id, v.state.value) for v in world_vms(clouds) if v.state.value != "deleted"} == {(kept.id, "running")}


def test_destroy_many_answers_every_id_with_the_error_of_a_failed_call(clouds: Any, lam: Any) -> None:
    vm = lam.begin_create(spec("unlucky")).wait(WAIT)
    faults(clouds, error_rate=1.0)
    answers = lam.begin_destroy_many([vm.id])
    assert isinstance(answers[vm.id], Transient)
    faults(clouds)
    assert lam.get_instance(vm.id).state is InstanceState.RUNNING


def test_reservation_modes_map_to_lambda(clouds: Any, lam: Any) -> None:
    with pytest.raises(Unsupported, match="cannot pick a reservation"):
        lam.begin_create(spec("strict-auto", gpu="H100", reservation=ReservationRequest(strict=True)))
    assert world_vms(clouds) == []
    vm = lam.begin_create(spec("auto", gpu="H100", reservation=ReservationRequest())).wait(WAIT)
    assert (vm.reserved, vm.reservation_id, vm.price_per_hour) == (False, "", 3.29)  # auto = on-demand


def test_offers_cover_regions_without_capacity_and_reservations(lam: Any) -> None:
    offers = lam.offers("H100", 1)
    on_demand = {o.region: o for o in offers if not o.reserved}
    assert on_demand["us-south-2"].available and on_demand["us-south-2"].capacity is None  # Lambda never says
    assert not on_demand["us-east-1"].available and on_demand["us-east-1"].capacity == 0
    assert {o.price_per_hour for o in on_demand.values()} == {3.29}
    (res,) = [o for o in offers if o.reserved]
    assert (res.reservation_id, res.region, res.capacity, res.price_per_hour) == (
        RESERVATION, "us-south-2", 8, pytest.approx(2.49))
    eight = [o for o in lam.offers("H100", 8) if o.reserved]
    assert [(o.capacity, o.price_per_hour) for o in eight] == [(1, pytest.approx(19.92))]
    assert lam.offers("H200") == []  # not sold by Lambda
    with pytest.raises(UsageError):
        lam.offers("no-such-gpu")


# ------------------------------------------------------------------------------ names, destroy, reboot
def test_repeated_names_resolve_to_the_first_launched_live_instance(lam: Any) -> None:
    first = lam.begin_create(spec("twin")).wait(WAIT)
    second = lam.begin_create(spec("twin")).wait(WAIT)
    assert [i.id for i in lam.list_instances() if i.name == "twin"] == [first.id, second.id]
    assert lam.find_instance("twin").id == first.id
    lam.begin_destroy(first.id)  # terminating: no longer the live one
    assert lam.find_instance("twin").id == second.id


def test_destroy_waits_until_terminated_and_is_idempotent(lam: Any) -> None:
    vm = lam.begin_create(spec("short-lived")).wait(WAIT)
    pending = lam.begin_destroy(vm.id)
    assert pending.id == pending.resource_id == vm.id
    assert pending.wait(WAIT) is None
    assert pending.done()
    assert vm.id not in [i.id for i in lam.list_instances()]
    again = lam.begin_destroy(vm.id)
    assert again.done() and again.wait(0) is None


def test_hard_reboot_is_unsupported_and_restarting_a_booting_instance_is_refused(mock_clouds_factory: Any,
                                                                                 connect: Any) -> None:
    clouds = mock_clouds_factory(providers=("lambda",), time_scale=0.05)  # a 180 s boot takes 9 s
    provider = connect(clouds, "lambda")
    pending = provider.begin_create(spec("booting"))
    with pytest.raises(Unsupported, match="hard reboot"):
        provider.begin_reboot(pending.resource_id, hard=True)
    with pytest.raises(VmError, match="current state"):
        provider.begin_reboot(pending.resource_id)


def test_a_wait_deadline_is_a_timeout_and_the_launch_goes_on(mock_clouds_factory: Any, connect: Any) -> None:
    clouds = mock_clouds_factory(providers=("lambda",), time_scale=0.05)
    provider = connect(clouds, "lambda")
    pending = provider.begin_create(spec("slow"))
    with pytest.raises(Timeout, match="continues in the cloud") as err:
        pending.wait(0.01)
    assert err.value.hint is not None and f"vm get {pending.resource_id} --provider lambda" in render(err.value.hint)
    assert provider.find_instance("slow").state is InstanceState.CREATING


def test_a_launch_that_ends_unhealthy_is_terminated(clouds: Any, lam: Any) -> None:
    faults(clouds, op_failure_rate=1.0)
    pending = lam.begin_create(spec("sick"))
    with pytest.raises(VmError, match="unhealthy.*terminated") as err:
        pending.wait(WAIT)
    assert not isinstance(err.value, Timeout)
    assert lam.find_instance("sick") is None
    lam.begin_destroy(pending.resource_id).wait(WAIT)
    assert world_vms(clouds) == []


# ------------------------------------------------------------------------------------- limits and faults
def test_concurrent_creates_share_the_rate_limiter_and_all_succeed(mock_clouds_factory: Any, connect: Any) -> None:
    scale = 0.02  # Lambda's 1 launch per 12 s becomes one per 0.24 s, on both sides
    clouds = mock_clouds_factory(providers=("lambda",), time_scale=scale)
    provider = connect(clouds, "lambda", launch_interval=12 * scale, request_interval=1 * scale)
    names = [f"burst-{n}" for n in range(4)]
    with ThreadPoolExecutor(len(names)) as pool:
        pendings = list(pool.map(lambda name: provider.begin_create(spec(name)), names))  # raises on any error
        vms = list(pool.map(lambda p: p.wait(WAIT), pendings))
    assert sorted(vm.name for vm in vms) == names
    assert all(vm.state is InstanceState.RUNNING for vm in vms)
    assert sorted(vm.name for vm in world_vms(clouds)) == names


def test_when_every_answer_is_an_injected_error_calls_fail_as_transient(clouds: Any, lam: Any) -> None:
    faults(clouds, error_rate=1.0, seed=3)  # 500, 503 or 429 before the mock does anything
    with pytest.raises(Transient):
        list(lam.list_instances())
    with pytest.raises(Transient):
        lam.begin_create(spec("never"))
    faults(clouds)
    assert world_vms(clouds) == []


def test_a_lifecycle_survives_injected_transient_errors(clouds: Any, lam: Any) -> None:
    pending = lam.begin_create(spec("flaky"))
    faults(clouds, error_rate=0.3, seed=5)
    vm = pending.wait(WAIT)
    assert vm.state is InstanceState.RUNNING
    assert lam.find_instance("flaky").id == vm.id
    lam.begin_destroy(vm.id).wait(WAIT)
    assert lam.find_instance("flaky") is None
    assert clouds.world.faults[Provider.LAMBDA].counts["error"] > 0


def test_a_dropped_launch_answer_is_transient_and_find_instance_resolves_it(clouds: Any, lam: Any) -> None:
    # Half of all answers are dropped after the mock acted. Reads are retried; a launch never is. Try until a
    # launch itself lost its answer (its instance exists although the call failed).
    for attempt in range(40):
        name = f"dropped-{attempt}"
        faults(clouds, drop_rate=0.5, seed=attempt)
        try:
            lam.begin_create(spec(name))
        except Transient as exc:
            launched = [vm for vm in world_vms(clouds) if vm.name == name]
            if launched:
                assert "may have taken effect" in exc.message
                break
    else:
        pytest.fail("no launch answer was dropped in 40 attempts")
    faults(clouds)
    found = lam.find_instance(name)
    assert found is not None and found.id == launched[0].id
    assert [i.name for i in lam.list_instances()].count(name) == 1  # exactly one: nothing was launched twice
    assert len({vm.name for vm in world_vms(clouds)}) == len(world_vms(clouds))  # no name launched twice


def test_capacity_listing_is_read_not_probed(mock_clouds_factory: Any, connect: Any) -> None:
    """Only one region has room; creates go there without failed launches elsewhere."""
    def one_region(state: WorldState) -> None:
        state.providers["lambda"].capacity = [Capacity(region="us-west-1", shape="gpu_1x_a10", quantity=2)]

    clouds = mock_clouds_factory(providers=("lambda",), configure=one_region)
    provider = connect(clouds, "lambda")
    vms = [provider.begin_create(spec(f"west-{n}")).wait(WAIT) for n in range(2)]
    assert {vm.region for vm in vms} == {"us-west-1"}
    with pytest.raises(CapacityError) as err:
        provider.begin_create(spec("west-full"))
    assert err.value.scope is Scope.PROVIDER
    assert len(world_vms(clouds)) == 2


def test_spot_is_unsupported(clouds: Any, lam: Any) -> None:
    assert not isinstance(lam, SupportsSpot)
    with pytest.raises(Unsupported, match="no spot instances"):
        lam.begin_create(spec("spot", spot=True))
    assert clouds.world.vms(Provider.LAMBDA) == []
