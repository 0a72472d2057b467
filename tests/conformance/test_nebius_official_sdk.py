"""Nebius' own Python SDK (`nebius` on PyPI) against the Nebius mock."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from mock_clouds.core.models import RateLimit, WorldState
from mock_clouds.nebius.testkit import H100, H100_BLOCK
from mock_clouds.runner import MockClouds
from nebius.aio.service_error import RequestError
from nebius.aio.token.static import Bearer
from nebius.aio.token.token import Token
from nebius.api.nebius.common.v1 import GetByNameRequest, ResourceMetadata
from nebius.api.nebius.compute.v1 import (
    AttachedDiskSpec,
    BatchGetRequest,
    CreateInstanceRequest,
    DeleteInstanceRequest,
    ExistingDisk,
    FollowsSpotPriceSpec,
    GetInstanceRequest,
    Instance,
    InstanceServiceClient,
    InstanceSpec,
    InstanceStatus,
    IPAddress,
    ListInstancesRequest,
    ListOperationsByParentRequest,
    ListPlatformsRequest,
    NetworkInterfaceSpec,
    PlatformServiceClient,
    PreemptibleSpec,
    PublicIPAddress,
    ReservationPolicy,
    ResourcesSpec,
    StartInstanceRequest,
    StopInstanceRequest,
    UpdateInstanceRequest,
)
from nebius.base.options import INSECURE
from nebius.base.resolver import Constant
from nebius.sdk import SDK

State = InstanceStatus.InstanceState
SUBNET = "vpcsubnet-e00defaultsubnet01"
BOOT_DISK = "computedisk-e00bootdisk0000001"
DEADLINE = 30.0


class Nebius:
    """The official SDK pointed at the mock (plaintext: the SDK's INSECURE address option)."""

    def __init__(self, clouds: MockClouds, token: str | None = None) -> None:
        endpoint = clouds.endpoints["nebius"]
        self.clouds = clouds
        self.project = str(endpoint["project_id"])
        target = str(endpoint["target"])
        self.sdk = SDK(
            credentials=Bearer(Token(token or str(endpoint["token"]))),
            resolver=Constant(target),
            address_options={target: [(INSECURE, True)]},
            user_agent_prefix="vm-conformance/1.0",
        )
        self.instances = InstanceServiceClient(self.sdk)

    def close(self) -> None:
        self.sdk.sync_close()

    def create(self, name: str, **spec_fields: object):
        request = CreateInstanceRequest(
            metadata=ResourceMetadata(parent_id=self.project, name=name), spec=_spec(**spec_fields)
        )
        return self.instances.create(request).wait()

    def get(self, instance_id: str) -> Instance:
        return self.instances.get(GetInstanceRequest(id=instance_id)).wait()

    def wait_state(self, instance_id: str, state: State) -> Instance:
        deadline = time.monotonic() + DEADLINE
        while (instance := self.get(instance_id)).status.state != state:
            assert time.monotonic() < deadline, f"{instance_id} stuck in {instance.status.state}"
            time.sleep(0.02)
        return instance


def _spec(**fields: object) -> InstanceSpec:
    spec = InstanceSpec(
        resources=ResourcesSpec(platform=H100[0], preset=H100[1]),
        network_interfaces=[NetworkInterfaceSpec(subnet_id=SUBNET, name="eth0", ip_address=IPAddress())],
        boot_disk=AttachedDiskSpec(
            attach_mode=AttachedDiskSpec.AttachMode.READ_WRITE, existing_disk=ExistingDisk(id=BOOT_DISK)
        ),
    )
    for name, value in fields.items():
        setattr(spec, name, value)
    return spec


@pytest.fixture
def nebius(mock_clouds_factory) -> Iterator[Nebius]:
    client = Nebius(mock_clouds_factory(providers=("nebius",)))
    yield client
    client.close()


def test_full_lifecycle(nebius: Nebius) -> None:
    op = nebius.create("conformance", hostname="box-1")
    op.sync_wait()
    assert op.successful() and op.resource_id.startswith("computeinstance-")
    instance = nebius.wait_state(op.resource_id, State.RUNNING)
    assert instance.spec.hostname == "box-1" and instance.status.network_interfaces[0].ip_address.address
    by_name = nebius.instances.get_by_name(GetByNameRequest(parent_id=nebius.project, name="conformance")).wait()
    assert by_name.metadata.id == op.resource_id
    listed = nebius.instances.list(ListInstancesRequest(parent_id=nebius.project)).wait()
    assert [i.metadata.id for i in listed.items] == [op.resource_id]

    nebius.instances.stop(StopInstanceRequest(id=op.resource_id)).wait().sync_wait()
    assert nebius.get(op.resource_id).status.state == State.STOPPED
    nebius.instances.start(StartInstanceRequest(id=op.resource_id)).wait().sync_wait()
    nebius.wait_state(op.resource_id, State.RUNNING)

    operations = nebius.instances.list_operations_by_parent(
        ListOperationsByParentRequest(parent_id=nebius.project)
    ).wait()
    assert {o.resource_id for o in operations.operations} == {op.resource_id}
    # newest first: SkyPilot takes the first listed as the most recent (sky/provision/nebius/utils.py:741)
    assert [o.description for o in operations.operations] == ["Start instance", "Stop instance", "Create instance"]

    nebius.instances.delete(DeleteInstanceRequest(id=op.resource_id)).wait().sync_wait()
    with pytest.raises(RequestError) as missing:
        nebius.get(op.resource_id)
    assert missing.value.status.code.name == "NOT_FOUND"


def test_update_resets_the_fields_the_sdk_names_in_its_reset_mask(nebius: Nebius) -> None:
    """The SDK sends the whole message and an X-ResetMask in its grouped syntax naming every default-valued
    field, so clearing a field is a full replace with that field empty."""
    op = nebius.create("update-me", hostname="box-2", cloud_init_user_data="#cloud-config\n")
    op.sync_wait()
    instance = nebius.get(op.resource_id)
    instance.metadata.labels["team"] = "ml"
    instance.spec.hostname = ""
    update = nebius.instances.update(UpdateInstanceRequest(metadata=instance.metadata, spec=instance.spec))
    update.wait().sync_wait()
    updated = nebius.get(op.resource_id)
    assert updated.spec.hostname == "" and updated.spec.cloud_init_user_data == "#cloud-config\n"
    assert dict(updated.metadata.labels) == {"team": "ml"}
    assert updated.metadata.resource_version == instance.metadata.resource_version + 1

    updated.metadata.labels.clear()
    updated.spec.cloud_init_user_data = ""
    nebius.instances.update(UpdateInstanceRequest(metadata=updated.metadata, spec=updated.spec)).wait().sync_wait()
    cleared = nebius.get(op.resource_id)
    assert dict(cleared.metadata.labels) == {} and cleared.spec.cloud_init_user_data == ""
    assert cleared.spec.resources.preset == H100[1]  # untouched fields keep their value


def test_update_that_clears_the_public_address_removes_it(nebius: Nebius) -> None:
    """The SDK's grouped X-ResetMask names `spec.(...network_interfaces.*.(aliases,public_ip_address,...))`; lists
    are replaced whole, so an interface sent without `public_ip_address` loses its address (research nebius.md §7:
    "lists/maps replaced wholesale")."""
    nic = NetworkInterfaceSpec(
        subnet_id=SUBNET, name="eth0", ip_address=IPAddress(), public_ip_address=PublicIPAddress()
    )
    op = nebius.create("public", network_interfaces=[nic])
    op.sync_wait()
    instance = nebius.wait_state(op.resource_id, State.RUNNING)
    assert instance.status.network_interfaces[0].public_ip_address.address
    instance.spec.network_interfaces[0].public_ip_address = None
    nebius.instances.update(UpdateInstanceRequest(metadata=instance.metadata, spec=instance.spec)).wait().sync_wait()
    updated = nebius.get(op.resource_id)
    assert "public_ip_address" not in str(updated.spec.network_interfaces[0])
    assert updated.status.network_interfaces[0].public_ip_address.address == ""


def test_stale_resource_version_is_refused(nebius: Nebius) -> None:
    op = nebius.create("versioned")
    op.sync_wait()
    instance = nebius.get(op.resource_id)
    instance.metadata.resource_version += 5
    with pytest.raises(RequestError) as refused:
        nebius.instances.update(UpdateInstanceRequest(metadata=instance.metadata, spec=instance.spec)).wait()
    assert refused.value.status.code.name == "ABORTED"


def test_batch_get(nebius: Nebius) -> None:
    op = nebius.create("batched")
    missing = "computeinstance-e00doesnotexist000"
    answer = nebius.instances.batch_get(BatchGetRequest(instance_ids=[op.resource_id, missing])).wait()
    assert answer.items[op.resource_id].instance.metadata.name == "batched"
    assert answer.items[missing].error.code.name == "NOT_FOUND"  # decoded by the SDK like a failed call


def test_preemptible_pricing_model_round_trips(nebius: Nebius) -> None:
    op = nebius.create(
        "spot",
        preemptible=PreemptibleSpec(on_preemption=PreemptibleSpec.PreemptionPolicy.STOP),
        follows_spot_price=FollowsSpotPriceSpec(),
    )
    instance = nebius.get(op.resource_id)
    assert instance.spec.follows_spot_price is not None and instance.spec.on_demand is None
    assert instance.spec.preemptible.on_preemption == PreemptibleSpec.PreemptionPolicy.STOP


def test_a_preemptible_instance_without_pricing_model_is_refused(nebius: Nebius) -> None:
    """Live: `INVALID_ARGUMENT: spec.pricing_model - pricing model must be specified for a preemptible instance`
    (real-clouds.md §2, the spot row)."""
    with pytest.raises(RequestError) as refused:
        nebius.create("no-model", preemptible=PreemptibleSpec(on_preemption=PreemptibleSpec.PreemptionPolicy.STOP))
    assert refused.value.status.code.name == "INVALID_ARGUMENT"
    assert "spec.pricing_model - pricing model must be specified for a preemptible instance" in str(refused.value)


def test_platforms_state_the_memory_of_one_gpu_as_gpuhunt_matches_it(nebius: Nebius) -> None:
    """gpuhunt keeps a platform's GPUs only when `spec.gpu_memory_gigabytes` equals the GPU's memory
    (gpuhunt `src/gpuhunt/providers/nebius.py:168-179`, which reads it through this SDK; real-clouds.md D5)."""
    listed = PlatformServiceClient(nebius.sdk).list(ListPlatformsRequest(parent_id=nebius.project, page_size=999))
    memory = {p.metadata.name: p.spec.gpu_memory_gigabytes for p in listed.wait().items}
    assert (memory["gpu-h100-sxm"], memory["gpu-h200-sxm"], memory["gpu-l40s-a"], memory["cpu-d3"]) == (80, 141, 48, 0)


def test_strict_reservation_places_the_instance_in_the_capacity_block(nebius: Nebius) -> None:
    policy = ReservationPolicy(policy=ReservationPolicy.Policy.STRICT, reservation_ids=[H100_BLOCK])
    op = nebius.create("reserved", reservation_policy=policy)
    op.sync_wait()
    instance = nebius.wait_state(op.resource_id, State.RUNNING)
    assert instance.status.reservation_id == H100_BLOCK


def test_errors_map_to_grpc_codes(nebius: Nebius) -> None:
    with pytest.raises(RequestError) as missing:
        nebius.get("computeinstance-e00doesnotexist000")
    assert missing.value.status.code.name == "NOT_FOUND"

    with pytest.raises(RequestError) as invalid:
        nebius.create("bad", resources=ResourcesSpec(platform="gpu-x999", preset="1gpu"))
    assert invalid.value.status.code.name == "INVALID_ARGUMENT"

    nebius.create("twin")
    with pytest.raises(RequestError) as duplicate:
        nebius.create("twin")
    assert duplicate.value.status.code.name == "ALREADY_EXISTS"


def test_a_second_operation_while_one_runs_is_refused(mock_clouds_factory) -> None:
    slow = Nebius(mock_clouds_factory(providers=("nebius",), time_scale=1.0))  # a create takes minutes
    try:
        creating = slow.create("busy")
        with pytest.raises(RequestError) as busy:
            slow.instances.stop(StopInstanceRequest(id=creating.resource_id)).wait()
        assert busy.value.status.code.name == "FAILED_PRECONDITION"
    finally:
        slow.close()


def test_bad_token_is_unauthenticated(mock_clouds_factory) -> None:
    stranger = Nebius(mock_clouds_factory(providers=("nebius",)), token="not-a-token")
    try:
        with pytest.raises(RequestError) as refused:
            stranger.instances.list(ListInstancesRequest(parent_id=stranger.project)).wait()
        assert refused.value.status.code.name == "UNAUTHENTICATED"
    finally:
        stranger.close()


def test_rate_limited_calls_are_waited_out(mock_clouds_factory) -> None:
    """Over the per-tenant limit the mock answers RESOURCE_EXHAUSTED with a TooManyRequests detail. The SDK
    retries at once (and logs it); once its attempts are spent the caller waits and calls again, so every call of
    a quick burst ends in success."""
    interval = 1.0  # one call a second: the calls of the burst come much faster than that

    def configure(state: WorldState) -> None:
        state.providers["nebius"].rate_limit = RateLimit(request_interval=interval, create_interval=0.0)

    clouds = mock_clouds_factory(providers=("nebius",), time_scale=1.0, configure=configure)
    refusals = _count_refusals(clouds)
    limited = Nebius(clouds)
    try:
        for _ in range(3):
            _waiting_out_rate_limits(
                lambda: limited.instances.list(ListInstancesRequest(parent_id=limited.project)).wait(), interval
            )
    finally:
        limited.close()
    assert refusals  # the server did refuse some of them: the SDK waited and retried


def _waiting_out_rate_limits(call: Callable[[], Any], interval: float) -> Any:
    deadline = time.monotonic() + DEADLINE
    while True:
        try:
            return call()
        except RequestError as exc:
            if exc.status.code.name != "RESOURCE_EXHAUSTED" or time.monotonic() > deadline:
                raise
            time.sleep(interval)


def _count_refusals(clouds: MockClouds) -> list[float]:
    """Waits the mock's rate limiter answered (server side), recorded as they happen."""
    limiter = clouds.world.rate_limiter
    acquire = limiter.acquire
    refusals: list[float] = []

    def counting(*args: Any, **kwargs: Any) -> float:
        wait = acquire(*args, **kwargs)
        if wait:
            refusals.append(wait)
        return wait

    limiter.acquire = counting  # type: ignore[method-assign]
    return refusals
