"""The Nebius adapter over the wire against the Nebius mock: reservations, regions as projects, the husk a failed
create leaves, reboot as stop + start, retries under one idempotency key, error translation and settings.

(The lifecycle every provider shares is in test_contract.py.)
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mock_clouds.core.faults import FaultInjector
from mock_clouds.core.models import Faults, OpKind, Provider, Quota, VMState
from vm_core.cli.spelling import render
from vm_core.config import Paths, Profile
from vm_core.errors import (
    AuthError,
    CapacityError,
    ConfigError,
    QuotaError,
    Scope,
    Timeout,
    Transient,
    UsageError,
    VmError,
)
from vm_core.fleet.follower import CreateFollow
from vm_core.hints import Command
from vm_core.model import CreateSpec, InstanceState, ReservationMode, ReservationRequest
from vm_core.plugins import provider_plugins
from vm_core.provider import (
    Paced,
    SupportsBatchDestroy,
    SupportsGetMany,
    SupportsReboot,
    SupportsReservations,
    SupportsSpot,
    SupportsStopStart,
)
from vm_core.providers.nebius import NebiusProvider, plugin
from vm_core.session import Session
from vm_core.sshkeys import NO_KEY

WAIT = 60.0  # generous: mock operations take a fraction of a second, the machine may be slow
NEBIUS = Provider.NEBIUS
H100_BLOCK = "capacityblockgroup-e00h100block000001"
EU_NORTH1 = "project-e00z6b02t8ddk96c49"
EU_WEST1 = "project-e01k7q4m2w9x5v3c8b"
OTHER_TENANT = "project-e00othertenant0001"
ON_DEMAND = ReservationRequest(ReservationMode.NONE)


def spec(name: str, gpu: str = "H100", **kwargs: Any) -> CreateSpec:
    kwargs.setdefault("reservation", ON_DEMAND)
    return CreateSpec(name=name, gpu=gpu, **kwargs)


def block(reservation_id: str = H100_BLOCK, *, strict: bool = False) -> ReservationRequest:
    return ReservationRequest(ReservationMode.ID, reservation_id=reservation_id, strict=strict)


def vms_named(clouds: Any, name: str, *, with_deleted: bool = False) -> list[Any]:
    with clouds.world.tx() as world:
        return [vm for vm in world.state.vms.values()
                if vm.provider == NEBIUS and vm.name == name and (with_deleted or vm.state != VMState.DELETED)]


def op_kinds(clouds: Any, instance_id: str) -> list[OpKind]:
    with clouds.world.tx() as world:
        return [op.kind for op in world.operations(NEBIUS, resource_id=instance_id)]


@pytest.fixture
def nebius(mock_clouds: Any, connect: Callable[..., Any]) -> NebiusProvider:
    return connect(mock_clouds, "nebius")


# ------------------------------------------------------------------------------------------------ plugin
def test_importing_the_adapter_loads_no_sdk_and_no_grpc() -> None:
    check = (
        "import sys\n"
        "import vm_core.providers.nebius as m\n"
        "from vm_core.plugins import provider_plugins\n"
        "assert provider_plugins().get('nebius').source is m.plugin\n"
        "print(sorted({'nebius_sdk', 'grpc', 'betterproto2'} & set(sys.modules)))\n"
    )
    result = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_capabilities(nebius: NebiusProvider) -> None:
    assert isinstance(nebius, SupportsStopStart) and isinstance(nebius, SupportsReboot)
    assert not isinstance(nebius, SupportsReservations)  # the compute API cannot list capacity blocks
    assert isinstance(nebius, SupportsGetMany) and isinstance(nebius, Paced)  # InstanceService.BatchGet
    assert not isinstance(nebius, SupportsBatchDestroy)  # Delete takes one id
    assert (plugin.name, plugin.title) == ("nebius", "Nebius AI Cloud")
    by_key = {s.key: s for s in plugin.settings}
    assert by_key["token"].env == "NEBIUS_IAM_TOKEN" and by_key["token"].secret
    assert by_key["project_id"].env == "NEBIUS_PROJECT_ID"
    assert {"endpoint", "projects", "subnet_id", "time_scale"} <= set(by_key)


# ------------------------------------------------------------------------------------------------ settings
def test_missing_token_names_its_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NEBIUS_IAM_TOKEN", raising=False)
    with pytest.raises(ConfigError, match="NEBIUS_IAM_TOKEN"):
        plugin.connect({"project_id": EU_NORTH1})


def test_missing_project_names_its_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NEBIUS_PROJECT_ID", raising=False)
    with pytest.raises(ConfigError, match="NEBIUS_PROJECT_ID"):
        plugin.connect({"token": "t0ken"})


def test_token_and_project_come_from_the_sessions_environment(tmp_path: Path) -> None:
    """NEBIUS_IAM_TOKEN and NEBIUS_PROJECT_ID, read by the session (the one reader of the environment)."""
    environ = {"NEBIUS_IAM_TOKEN": "s3cret-t0ken-value", "NEBIUS_PROJECT_ID": EU_NORTH1, "VM_NO_AUTOSTART": "1"}
    session = Session(Profile("p", providers={"nebius": {}}), Paths(tmp_path / "config.toml", tmp_path),
                      provider_plugins(), environ, lambda _: None)
    provider = session.provider("nebius")  # no network call
    assert "s3cret-t0ken-value" not in repr(provider)
    provider.close()


def test_a_watcher_reads_every_second_scaled() -> None:
    for scale, interval in ((1, 1.0), (0.02, 0.02)):
        provider = plugin.connect({"token": "t0ken", "project_id": EU_NORTH1, "time_scale": scale})
        assert provider.poll_interval == pytest.approx(interval)
        provider.close()


@pytest.mark.parametrize(("settings", "complaint"), [
    ({"projects": {"eu-west1": EU_WEST1}}, "not one of the projects"),
    ({"projects": ["eu-north1"]}, "map each region"),
    ({"subnet_id": 42}, "subnet_id"),
    ({"time_scale": "fast"}, "time_scale"),
    ({"time_scale": 0}, "time_scale"),
])
def test_bad_settings_are_config_errors(settings: dict[str, Any], complaint: str) -> None:
    with pytest.raises(ConfigError, match=complaint) as err:
        plugin.connect({"token": "s3cret-t0ken-value", "project_id": EU_NORTH1, **settings})
    assert "s3cret-t0ken-value" not in str(err.value)


def test_the_subnet_id_setting_is_used_over_the_projects_own(mock_clouds: Any, connect: Callable[..., Any]) -> None:
    """NetworkInterfaceSpec.subnet_id is the subnet the caller names (nebius/api compute/v1/network_interface.proto):
    the setting overrides the project's default subnet, per region when it is a table."""
    chosen = "vpcsubnet-e00chosenbyprofile"
    provider = connect(mock_clouds, "nebius", subnet_id={"eu-north1": chosen})
    vm = provider.begin_create(spec("subnet-set", region="eu-north1")).wait(WAIT)
    assert [nic.subnet_id for nic in vm.native.spec.network_interfaces] == [chosen]
    west = provider.begin_create(spec("subnet-found", gpu="H200", region="eu-west1")).wait(WAIT)
    assert west.native.spec.network_interfaces[0].subnet_id.startswith("vpcsubnet-e01")  # that project's own


def test_a_project_of_another_tenant_is_an_auth_error(mock_clouds: Any, connect: Callable[..., Any]) -> None:
    provider = connect(mock_clouds, "nebius", project_id=OTHER_TENANT, projects={})
    with pytest.raises(AuthError, match=OTHER_TENANT):
        list(provider.list_instances())


def test_a_later_project_that_fails_is_named_after_the_earlier_ones_are_listed(
        mock_clouds: Any, connect: Callable[..., Any]) -> None:
    """Further projects' first pages are asked for at once; each answer (here an error) reaches the caller in
    project order, translated like any other."""
    provider = connect(mock_clouds, "nebius", projects={"eu-north1": EU_NORTH1, "eu-west1": OTHER_TENANT})
    vm = provider.begin_create(spec("north", region="eu-north1")).wait(WAIT)
    listed = []
    with pytest.raises(AuthError, match=OTHER_TENANT):
        listed.extend(i.id for i in provider.list_instances())
    assert listed == [vm.id]


# ------------------------------------------------------------------------------------------------ reservations
def test_auto_lands_in_the_capacity_block(nebius: NebiusProvider) -> None:
    vm = nebius.begin_create(spec("in-block", reservation=ReservationRequest(ReservationMode.AUTO))).wait(WAIT)
    assert (vm.state, vm.region, vm.reserved, vm.reservation_id) == (
        InstanceState.RUNNING, "eu-north1", True, H100_BLOCK)
    assert vm.price_per_hour == 2.10  # the block's contract price (capacity_blocks setting) x 1 GPU
    assert nebius.get_instance(vm.id).reservation_id == H100_BLOCK
    nebius.begin_destroy(vm.id).wait(WAIT)


def test_a_block_without_contract_terms_has_no_known_price(mock_clouds: Any, connect: Callable[..., Any]) -> None:
    nebius = connect(mock_clouds, "nebius", capacity_blocks={})
    vm = nebius.begin_create(spec("unpriced", reservation=ReservationRequest(ReservationMode.AUTO))).wait(WAIT)
    assert (vm.reservation_id, vm.price_per_hour) == (H100_BLOCK, None)  # the API exposes no block price
    assert not any(o.reserved for o in nebius.offers("H100"))
    nebius.begin_destroy(vm.id).wait(WAIT)


@pytest.mark.parametrize("blocks", ["x", {H100_BLOCK: {"region": "eu-north1", "platform": "gpu-h100-sxm"}},
                                    {H100_BLOCK: {"region": "eu-north1", "platform": "gpu-h100-sxm",
                                                  "price_per_gpu_hour": "cheap"}},
                                    {H100_BLOCK: {"region": "eu-north1", "platform": "gpu-h100-sxm",
                                                  "price_per_gpu_hour": -1}}])
def test_bad_capacity_block_terms_are_config_errors(mock_clouds: Any, connect: Callable[..., Any],
                                                    blocks: Any) -> None:
    with pytest.raises(ConfigError, match="capacity_blocks"):
        connect(mock_clouds, "nebius", capacity_blocks=blocks)


def test_none_is_forbid_and_on_demand(nebius: NebiusProvider) -> None:
    from nebius_sdk.models import ReservationPolicyPolicy

    vm = nebius.begin_create(spec("on-demand")).wait(WAIT)
    assert (vm.reserved, vm.reservation_id, vm.shape) == (False, "", "gpu-h100-sxm/1gpu-16vcpu-200gb")
    assert vm.price_per_hour == 2.95
    assert vm.native.spec.reservation_policy.policy == ReservationPolicyPolicy.FORBID
    nebius.begin_destroy(vm.id).wait(WAIT)


def _small_h100_block(state: Any) -> None:
    """The H100 capacity block holds one 8-GPU VM."""
    next(r for r in state.providers[NEBIUS].reservations if r.id == H100_BLOCK).quantity = 8


def test_strict_id_on_a_full_block_fails_and_leaves_nothing(mock_clouds_factory: Callable[..., Any],
                                                            connect: Callable[..., Any]) -> None:
    clouds = mock_clouds_factory(configure=_small_h100_block)
    nebius = connect(clouds, "nebius")
    first = nebius.begin_create(spec("fills-block", gpu_count=8, reservation=block())).wait(WAIT)
    assert first.reservation_id == H100_BLOCK

    pending = nebius.begin_create(spec("block-full", gpu_count=8, reservation=block(strict=True)))
    assert pending.resource_id  # Nebius accepted it: the shortage surfaces in the operation
    with pytest.raises(CapacityError) as err:
        pending.wait(WAIT)
    # only the block is full: on-demand capacity in the region may still be there
    assert (err.value.scope, err.value.region, err.value.provider) == (Scope.RESERVATION, "eu-north1", "nebius")
    assert H100_BLOCK in err.value.message
    assert nebius.find_instance("block-full") is None
    assert vms_named(clouds, "block-full") == [] and len(vms_named(clouds, "block-full", with_deleted=True)) == 1
    assert nebius.get_instance(first.id).state is InstanceState.RUNNING


def test_reservation_policy_table() -> None:
    from nebius_sdk.models import ReservationPolicyPolicy as Policy
    from vm_core.providers._nebius_map import reservation_policy

    cases = {
        ReservationRequest(ReservationMode.AUTO): (Policy.AUTO, []),
        ReservationRequest(ReservationMode.AUTO, strict=True): (Policy.STRICT, []),
        ReservationRequest(ReservationMode.NONE): (Policy.FORBID, []),
        block(): (Policy.AUTO, [H100_BLOCK]),
        block(strict=True): (Policy.STRICT, [H100_BLOCK]),
    }
    for request, (policy, ids) in cases.items():
        built = reservation_policy(request)
        assert (built.policy, list(built.reservation_ids)) == (policy, ids), request
    with pytest.raises(UsageError):
        reservation_policy(ReservationRequest(ReservationMode.NONE, strict=True))


# ------------------------------------------------------------------------------------------------ capacity, quota
def _no_on_demand_h100(state: Any) -> None:
    for capacity in state.providers[NEBIUS].capacity:
        if capacity.region == "eu-north1" and capacity.shape.startswith("gpu-h100-sxm/"):
            capacity.quantity = 0


def test_late_capacity_failure_deletes_the_stopped_husk(mock_clouds_factory: Callable[..., Any],
                                                        connect: Callable[..., Any]) -> None:
    clouds = mock_clouds_factory(configure=_no_on_demand_h100)
    nebius = connect(clouds, "nebius")
    with pytest.raises(CapacityError) as err:
        nebius.begin_create(spec("husk", region="eu-north1")).wait(WAIT)
    assert err.value.region == "eu-north1" and "1gpu-16vcpu-200gb" in err.value.message
    assert nebius.find_instance("husk") is None
    [husk] = vms_named(clouds, "husk", with_deleted=True)  # it existed, and the adapter deleted it
    assert op_kinds(clouds, husk.id) == [OpKind.CREATE, OpKind.DELETE]


def test_a_doomed_create_reads_as_creating_until_it_fails_for_capacity(mock_clouds_factory: Callable[..., Any],
                                                                       connect: Callable[..., Any]) -> None:
    """Nebius shows a create that will not get capacity as STOPPED with reconciling=true until its operation fails
    (STARTING means capacity was obtained: SkyPilot `sky/provision/nebius/utils.py:722-728`, dstack
    `backends/nebius/compute.py:424-441`, real-clouds.md Part 2 D1). vm reads it as creating, never starting, and
    its end as a capacity failure."""
    from mock_clouds.nebius.testkit import FrozenClock

    clouds = mock_clouds_factory(configure=_no_on_demand_h100)
    nebius = connect(clouds, "nebius")
    clock = FrozenClock(clouds.world)
    pending = nebius.begin_create(spec("doomed", region="eu-north1"))
    follow, rid = CreateFollow(pending), pending.resource_id
    duration = clouds.world.scaled(clouds.world.config(NEBIUS).durations.create)
    for _ in range(3):  # 1/4, 1/2 and 3/4 of the way
        clock.advance(duration / 4)
        assert nebius.get_instance(pending.resource_id).state is InstanceState.CREATING
        assert nebius.get_states([pending.resource_id]) == {pending.resource_id: InstanceState.CREATING}
        assert not follow.shown(nebius.get_states([rid])[rid], None)  # still in progress for a fleet
    clock.advance(duration / 2)
    assert follow.shown(nebius.get_states([rid])[rid], None) and follow.ended is InstanceState.STOPPED
    del clouds.world.now  # the real clock again, for the deletion of the husk
    with pytest.raises(CapacityError) as err:
        pending.wait(WAIT)
    assert (err.value.scope, err.value.region) == (Scope.REGION, "eu-north1")


def test_quota_failure_is_a_quota_error_and_leaves_nothing(mock_clouds_factory: Callable[..., Any],
                                                           connect: Callable[..., Any]) -> None:
    def no_h100_quota(state: Any) -> None:
        state.providers[NEBIUS].quotas.append(Quota(scope=EU_NORTH1, family="gpu-h100-sxm", max_gpus=0))

    clouds = mock_clouds_factory(configure=no_h100_quota)
    nebius = connect(clouds, "nebius")
    with pytest.raises(QuotaError, match="compute.instance.gpu.h100"):
        nebius.begin_create(spec("over-quota")).wait(WAIT)
    assert nebius.find_instance("over-quota") is None


def test_a_region_that_does_not_sell_the_shape_is_a_capacity_error(nebius: NebiusProvider,
                                                                   mock_clouds: Any) -> None:
    with pytest.raises(CapacityError) as err:
        nebius.begin_create(spec("not-sold", region="us-central1"))  # no H100 platform there
    assert (err.value.scope, err.value.region) == (Scope.REGION, "us-central1")
    assert vms_named(mock_clouds, "not-sold", with_deleted=True) == []  # refused before any create


# ------------------------------------------------------------------------------------------------ regions, names
def test_create_in_another_region_uses_that_regions_project(nebius: NebiusProvider, mock_clouds: Any) -> None:
    vm = nebius.begin_create(spec("paris", gpu="H200", region="eu-west1")).wait(WAIT)
    assert (vm.region, vm.native.metadata.parent_id, vm.gpu) == ("eu-west1", EU_WEST1, "H200")
    [record] = vms_named(mock_clouds, "paris")
    assert (record.scope, record.region) == (EU_WEST1, "eu-west1")
    assert vm.id in {i.id for i in nebius.list_instances()}
    found = nebius.find_instance("paris")
    assert found is not None and found.id == vm.id
    nebius.begin_destroy(vm.id).wait(WAIT)


def test_without_a_region_the_first_region_selling_the_shape_is_used(nebius: NebiusProvider) -> None:
    vm = nebius.begin_create(spec("b200", gpu="B200", gpu_count=8)).wait(WAIT)  # only us-central1 sells B200
    assert (vm.region, vm.shape, vm.gpu_count) == ("us-central1", "gpu-b200-sxm/8gpu-160vcpu-1792gb", 8)
    nebius.begin_destroy(vm.id).wait(WAIT)


def test_bad_input_is_rejected_before_any_create(nebius: NebiusProvider, mock_clouds: Any) -> None:
    with pytest.raises(UsageError, match="eu-north1, eu-west1, us-central1"):
        nebius.begin_create(spec("nowhere", region="us-east1"))
    with pytest.raises(UsageError, match="H100:1/8"):
        nebius.begin_create(spec("no-a100", gpu="A100"))
    with pytest.raises(UsageError, match="4 GPUs"):
        nebius.begin_create(spec("no-4x", gpu_count=4))
    with pytest.raises(UsageError, match="platform/preset"):
        nebius.begin_create(spec("bad-shape", shape="gpu-h100-sxm"))
    with pytest.raises(UsageError, match="not a Nebius instance id"):
        nebius.get_instance("0123456789abcdef0123456789abcdef")
    with pytest.raises(UsageError):
        nebius.begin_destroy("")
    assert not any(vms_named(mock_clouds, n) for n in ("nowhere", "no-a100", "no-4x", "bad-shape"))


def test_a_taken_name_is_a_clear_error(nebius: NebiusProvider) -> None:
    vm = nebius.begin_create(spec("twin")).wait(WAIT)
    with pytest.raises(VmError, match=f"'twin' already exists in Nebius project {EU_NORTH1}") as err:
        nebius.begin_create(spec("twin"))
    assert type(err.value) is VmError
    nebius.begin_destroy(vm.id).wait(WAIT)


def test_labels_and_ssh_key_are_stored(nebius: NebiusProvider) -> None:
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExampleKey vm@test"
    vm = nebius.begin_create(spec("labelled", labels={"team": "ml", "vm-fleet": "f1"}, ssh_public_key=key)).wait(WAIT)
    native = nebius.get_instance(vm.id).native
    assert dict(native.metadata.labels) == {"team": "ml", "vm-fleet": "f1"}
    assert key in native.spec.cloud_init_user_data
    nebius.begin_destroy(vm.id).wait(WAIT)


def test_without_any_key_the_create_is_refused_before_any_call(mock_clouds: Any, connect: Callable[..., Any]) -> None:
    keyless = connect(mock_clouds, "nebius", ssh_public_key=None)
    with pytest.raises(UsageError, match="no SSH public key"):
        keyless.begin_create(spec("keyless"))
    with mock_clouds.world.tx() as world:
        assert [vm for vm in world.vms(Provider.NEBIUS) if vm.name == "keyless"] == []


def test_no_ssh_key_creates_no_login_user(nebius: NebiusProvider) -> None:
    vm = nebius.begin_create(spec("nobody", ssh_public_key=NO_KEY)).wait(WAIT)
    assert nebius.get_instance(vm.id).native.spec.cloud_init_user_data == ""
    nebius.begin_destroy(vm.id).wait(WAIT)


def test_the_ssh_user_setting_is_the_login_cloud_init_creates(mock_clouds: Any, connect: Callable[..., Any]) -> None:
    mine = connect(mock_clouds, "nebius", ssh_user="alice")
    vm = mine.begin_create(spec("alices")).wait(WAIT)
    assert vm.ssh_user == "alice" and vm.ssh == f"ssh alice@{vm.public_ip}"
    assert "users:\n  - name: alice\n" in mine.get_instance(vm.id).native.spec.cloud_init_user_data
    mine.begin_destroy(vm.id).wait(WAIT)
    with pytest.raises(ConfigError, match="ssh_user"):
        connect(mock_clouds, "nebius", ssh_user="Alice Smith")


# ------------------------------------------------------------------------------------------------ lifecycle
def test_reboot_is_stop_then_start(nebius: NebiusProvider, mock_clouds: Any) -> None:
    vm = nebius.begin_create(spec("reboot")).wait(WAIT)
    pending = nebius.begin_reboot(vm.id)
    stop_id = pending.id
    assert pending.resource_id == vm.id
    assert pending.wait(WAIT).state is InstanceState.RUNNING
    assert pending.id != stop_id  # now the start's operation
    assert op_kinds(mock_clouds, vm.id) == [OpKind.CREATE, OpKind.STOP, OpKind.START]
    nebius.begin_destroy(vm.id).wait(WAIT)


def test_reboot_polled_with_done_sends_the_start(nebius: NebiusProvider, mock_clouds: Any) -> None:
    vm = nebius.begin_create(spec("reboot-done")).wait(WAIT)
    pending = nebius.begin_reboot(vm.id)
    deadline = time.monotonic() + WAIT
    while not pending.done():
        assert time.monotonic() < deadline, "the reboot never finished"
        time.sleep(0.01)
    assert nebius.get_instance(vm.id).state is InstanceState.RUNNING
    assert op_kinds(mock_clouds, vm.id) == [OpKind.CREATE, OpKind.STOP, OpKind.START]
    nebius.begin_destroy(vm.id).wait(WAIT)


def test_a_wait_that_times_out_leaves_the_operation_running(nebius: NebiusProvider) -> None:
    pending = nebius.begin_create(spec("slow"))
    with pytest.raises(Timeout) as err:
        pending.wait(0.0)
    assert pending.id in err.value.message and "continues in the cloud" in err.value.message
    assert err.value.hint is not None and pending.resource_id in render(err.value.hint)
    assert pending.wait(WAIT).state is InstanceState.RUNNING  # the cloud went on
    nebius.begin_destroy(pending.resource_id).wait(WAIT)


def test_get_instances_is_one_batch_read_that_says_which_are_gone(nebius: NebiusProvider) -> None:
    kept = nebius.begin_create(spec("kept")).wait(WAIT)
    gone = nebius.begin_create(spec("gone")).wait(WAIT)
    nebius.begin_destroy(gone.id).wait(WAIT)
    read = nebius.get_instances([kept.id, gone.id])
    assert set(read) == {kept.id, gone.id}
    assert read[kept.id] is not None and read[kept.id].state is InstanceState.RUNNING
    assert read[gone.id] is None
    assert nebius.get_instances([]) == {}


def test_stopping_a_stopped_instance_is_refused(nebius: NebiusProvider) -> None:
    vm = nebius.begin_create(spec("stopped")).wait(WAIT)
    assert nebius.begin_stop(vm.id).wait(WAIT).state is InstanceState.STOPPED
    with pytest.raises(VmError, match="stopped"):
        nebius.begin_stop(vm.id)
    nebius.begin_destroy(vm.id).wait(WAIT)


# ------------------------------------------------------------------------------------------------ faults
def _outcomes_of(faults: Faults, calls: int) -> list[str]:
    """What the mock's fault injector does to the next `calls` calls (it draws in this order per call)."""
    injector = FaultInjector(faults)
    outcomes = []
    for _ in range(calls):
        if injector.roll_error():
            injector.pick([0, 1])  # which injected error: UNAVAILABLE or TooManyRequests
            outcomes.append("error")  # refused before acting
        elif injector.roll_drop():
            outcomes.append("drop")  # acted, then the response was lost
        else:
            outcomes.append("ok")
    return outcomes


def _seeded(wanted: list[str]) -> Faults:
    for seed in range(100_000):
        faults = Faults(error_rate=0.5, drop_rate=0.5, seed=seed)
        if _outcomes_of(faults, len(wanted)) == wanted:
            return faults
    raise AssertionError(f"no seed gives {wanted}")


def test_lost_create_responses_are_retried_under_one_key(nebius: NebiusProvider, mock_clouds: Any) -> None:
    # Once the tenant's projects are known (the listing), begin_create makes three reads (PlatformService.List and
    # SubnetService.List of eu-north1, ImageService.GetLatestByFamily of its boot image), then Create: its first
    # attempt is refused, its second creates the instance but the answer is lost, its third (same idempotency key)
    # gets the same operation back.
    assert list(nebius.list_instances()) == []
    mock_clouds.world.configure_faults(NEBIUS, _seeded(["ok", "ok", "ok", "error", "drop", "ok"]))
    pending = nebius.begin_create(spec("dropped", region="eu-north1"))
    counts = dict(mock_clouds.world.faults[NEBIUS].counts)
    mock_clouds.world.configure_faults(NEBIUS, Faults())
    assert (counts["error"], counts["drop"]) == (1, 1)
    [record] = vms_named(mock_clouds, "dropped")
    assert record.id == pending.resource_id
    assert op_kinds(mock_clouds, record.id) == [OpKind.CREATE]
    assert pending.wait(WAIT).state is InstanceState.RUNNING
    nebius.begin_destroy(record.id).wait(WAIT)


def test_transient_errors_beyond_the_retries_are_transient(nebius: NebiusProvider, mock_clouds: Any) -> None:
    mock_clouds.world.configure_faults(NEBIUS, Faults(error_rate=1.0, seed=3))
    with pytest.raises(Transient) as err:
        list(nebius.list_instances())
    assert err.value.retryable and err.value.provider == "nebius"
    assert mock_clouds.world.faults[NEBIUS].counts["error"] >= 4  # the SDK retried before giving up
    mock_clouds.world.configure_faults(NEBIUS, Faults())
    assert list(nebius.list_instances()) == []


# ------------------------------------------------------------------------------------------------ offers, mapping
def test_offers_are_regions_whose_platforms_list_the_preset(nebius: NebiusProvider) -> None:
    h100 = nebius.offers("H100")
    on_demand = [o for o in h100 if not o.reserved]
    assert {(o.region, o.shape) for o in on_demand} == {
        ("eu-north1", "gpu-h100-sxm/1gpu-16vcpu-200gb"), ("eu-north1", "gpu-h100-sxm/8gpu-128vcpu-1600gb"),
        ("eu-west1", "gpu-h100-sxm/1gpu-16vcpu-200gb")}  # sold in Paris too, though sold out: Nebius can't say
    assert all(o.capacity is None and o.available for o in on_demand)  # Nebius publishes no capacity
    # a block states its size in the contract terms (the mock's endpoints give it): its VMs of each shape
    assert all(o.capacity is not None and o.capacity > 0 for o in h100 if o.reserved)
    assert {o.price_per_hour for o in on_demand} == {2.95, 23.60}
    # the configured capacity block (the local profile's contract terms) is a reserved offer at its price
    assert {(o.region, o.shape, o.reservation_id, o.price_per_hour) for o in h100 if o.reserved} == {
        ("eu-north1", "gpu-h100-sxm/1gpu-16vcpu-200gb", H100_BLOCK, 2.10),
        ("eu-north1", "gpu-h100-sxm/8gpu-128vcpu-1600gb", H100_BLOCK, 16.80)}
    h200 = nebius.offers("h200-sxm", 1)
    assert {o.region for o in h200} == {"eu-north1", "eu-west1"} and {o.gpu for o in h200} == {"H200"}
    assert nebius.offers("A100") == []
    with pytest.raises(UsageError, match="known types"):
        nebius.offers("TPU")


def test_spot_offers_are_catalog_shapes_with_a_spot_price_on_preemptible_platforms(nebius: NebiusProvider) -> None:
    assert isinstance(nebius, SupportsSpot)
    spot = nebius.spot_offers("H100")
    assert {(o.region, o.shape, o.price_per_hour) for o in spot} == {
        ("eu-north1", "gpu-h100-sxm/1gpu-16vcpu-200gb", 1.25), ("eu-north1", "gpu-h100-sxm/8gpu-128vcpu-1600gb", 10.00),
        ("eu-west1", "gpu-h100-sxm/1gpu-16vcpu-200gb", 1.25)}
    assert all(o.spot and o.to_json()["spot"] and not o.reserved for o in spot)
    assert not any(o.spot for o in nebius.offers("H100"))
    assert nebius.spot_offers("L40S") == []  # no published spot price


def test_spot_create_is_a_preemptible_instance_at_the_spot_price(nebius: NebiusProvider) -> None:
    """A preemptible VM opts into spot pricing (`follows_spot_price`): Nebius refuses one without a pricing model
    (real-clouds.md §2, the spot row), and so does the mock."""
    vm = nebius.begin_create(spec("spot-1", gpu_count=1, spot=True)).wait(WAIT)
    assert vm.native.spec.preemptible is not None and vm.price_per_hour == 1.25
    assert vm.native.spec.follows_spot_price is not None
    regular = nebius.begin_create(spec("regular-1", gpu_count=1)).wait(WAIT)
    assert regular.native.spec.preemptible is None and regular.price_per_hour == 2.95


@pytest.mark.parametrize("reservation", [block(), ReservationRequest(ReservationMode.AUTO, strict=True)])
def test_spot_cannot_use_capacity_blocks(mock_clouds: Any, nebius: NebiusProvider, reservation) -> None:
    with pytest.raises(UsageError, match="spot instances cannot use capacity blocks"):
        nebius.begin_create(spec("spot-block", spot=True, reservation=reservation))
    assert mock_clouds.world.vms(NEBIUS) == []


def test_state_map() -> None:
    from nebius_sdk.models import Instance, InstanceStatus, InstanceStatusInstanceState, ResourceMetadata
    from vm_core.providers._nebius_map import instance_state

    native = InstanceStatusInstanceState
    expected = {
        native.UNSPECIFIED: InstanceState.UNKNOWN, native.CREATING: InstanceState.CREATING,
        native.STARTING: InstanceState.STARTING, native.RUNNING: InstanceState.RUNNING,
        native.UPDATING: InstanceState.RUNNING, native.STOPPING: InstanceState.STOPPING,
        native.STOPPED: InstanceState.STOPPED, native.DELETING: InstanceState.TERMINATING,
        native.ERROR: InstanceState.ERROR, native(42): InstanceState.UNKNOWN,  # a state newer than this adapter
    }
    for state, normalized in expected.items():
        instance = Instance(metadata=ResourceMetadata(id="computeinstance-x"), status=InstanceStatus(state=state))
        assert instance_state(instance) is normalized, state
    scheduling = Instance(status=InstanceStatus(state=native.STOPPED, reconciling=True))
    assert instance_state(scheduling) is InstanceState.CREATING
    assert instance_state(Instance()) is InstanceState.UNKNOWN  # no status yet


def test_a_failed_creates_instance_that_cannot_be_removed_is_named_with_the_command_that_removes_it(
        nebius: NebiusProvider, mock_clouds: Any) -> None:
    """The cleanup after a failed create deletes the instance Nebius keeps; when the delete fails, the error's
    hint (data, spelled by the CLI) says the instance is still there and how to remove it."""
    vm = nebius.begin_create(spec("husk-kept")).wait(WAIT)

    class FailedCreate:  # the create operation of `vm`, as it looks once it failed
        resource_id = vm.id

        def error(self) -> str:
            return "NotEnoughResources"

    error = CapacityError("no room", provider="nebius")
    mock_clouds.world.configure_faults(NEBIUS, Faults(error_rate=1.0, seed=3))  # every call refused
    try:
        assert nebius._remove_failed(FailedCreate(), error, time.monotonic() + WAIT) is error  # type: ignore[arg-type]
    finally:
        mock_clouds.world.configure_faults(NEBIUS, Faults())
    assert error.hint is not None and render(error.hint).startswith(f"Nebius kept instance {vm.id} after the failed")
    assert render(error.hint).endswith(f"remove it with `vm destroy {vm.id} --provider nebius`")
    assert error.hint.commands == (Command.of("destroy", vm.id, "--provider", "nebius"),)
    nebius.begin_destroy(vm.id).wait(WAIT)
