"""Nebius mock: InstanceService.Update (full replace under X-ResetMask, resource_version, immutables)."""

from __future__ import annotations

import grpc
from mock_clouds.nebius import testkit
from mock_clouds.nebius._pb.nebius.common import v1 as common
from mock_clouds.nebius._pb.nebius.compute import v1 as compute

State = compute.InstanceStatusInstanceState


def _created(nebius, name: str, **spec_fields) -> compute.Instance:
    op = nebius.client.wait(nebius.create(name, testkit.instance_spec(**spec_fields)))
    return nebius.get(op.resource_id)


def _resources(platform: str, preset: str) -> compute.InstanceSpec:
    return compute.InstanceSpec(resources=compute.ResourcesSpec(platform=platform, preset=preset))


def _update(instance_id: str, spec=None, **metadata) -> compute.UpdateInstanceRequest:
    return compute.UpdateInstanceRequest(
        metadata=common.ResourceMetadata(id=instance_id, **metadata), spec=spec
    )


def test_update_labels_completes_at_once_and_bumps_the_version(nebius):
    instance = _created(nebius, "labelled")
    op = nebius.client.instances.update(_update(instance.metadata.id, labels={"team": "ml"}))
    assert op.description == "Update instance" and op.status.code == 0 and op.finished_at is not None
    updated = nebius.get(instance.metadata.id)
    assert updated.metadata.labels == {"team": "ml"} and updated.metadata.resource_version == 2
    assert updated.status.state == State.RUNNING and updated.spec == instance.spec


def test_default_values_keep_current_fields_unless_reset(nebius):
    instance = _created(nebius, "masked", hostname="box-1")
    client = nebius.client
    client.instances.update(_update(instance.metadata.id, spec=compute.InstanceSpec(), labels={"a": "1"}))
    assert nebius.get(instance.metadata.id).spec.hostname == "box-1"
    resetting = client.with_metadata(("x-resetmask", "spec.hostname, metadata.labels"))
    resetting.instances.update(_update(instance.metadata.id, spec=compute.InstanceSpec()))
    updated = nebius.get(instance.metadata.id)
    assert updated.spec.hostname == "" and updated.metadata.labels == {}
    assert updated.spec.resources == instance.spec.resources


def test_grouped_reset_mask_as_the_official_sdk_writes_it(nebius):
    """The SDK groups paths under a common prefix; every grouped path is reset, others are kept."""
    instance = _created(nebius, "grouped", hostname="box-2", cloud_init_user_data="#cloud-config")
    mask = 'metadata.(labels),spec.(cloud_init_user_data,"hostname",network_interfaces.*.(name,subnet_id))'
    resetting = nebius.client.with_metadata(("x-resetmask", mask))
    resetting.instances.update(_update(instance.metadata.id, spec=compute.InstanceSpec()))
    updated = nebius.get(instance.metadata.id)
    assert (updated.spec.hostname, updated.spec.cloud_init_user_data) == ("", "")
    assert updated.spec.resources == instance.spec.resources
    assert updated.spec.network_interfaces == instance.spec.network_interfaces  # only inner fields named


# The X-ResetMask the official SDK (`nebius` 0.6.29, `get_full_update_reset_mask().marshal()`) sends for an update
# of a fetched instance whose interface no longer has a public address.
_PYSDK_MASK = (
    "metadata.(created_at,labels,updated_at),spec.(boot_disk.(device_id,existing_disk,managed_disk),"
    "cloud_init_user_data,filesystems,follows_spot_price,hostname,local_disks,"
    "network_interfaces.*.(aliases,public_ip_address,security_groups),nvl_instance_group_id,on_demand,preemptible,"
    "reservation_policy,resources,secondary_disks,spot_pricing_policy,stopped)"
)


def test_clearing_the_public_address_under_the_official_sdks_mask_removes_it(nebius):
    """Lists are replaced whole (research nebius.md §7), so an interface sent without `public_ip_address`, under
    the grouped mask pysdk writes, has no public address afterwards, in its spec and its status."""
    instance = _created(nebius, "public-ip")
    assert instance.spec.network_interfaces[0].public_ip_address is not None
    spec = compute.InstanceSpec.FromString(bytes(instance.spec))
    spec.network_interfaces[0].public_ip_address = None
    resetting = nebius.client.with_metadata(("x-resetmask", _PYSDK_MASK))
    op = resetting.instances.update(_update(instance.metadata.id, spec=spec))
    assert op.status.code == 0
    updated = nebius.get(instance.metadata.id)
    assert updated.spec.network_interfaces[0].public_ip_address is None
    assert updated.status.network_interfaces[0].public_ip_address is None
    assert updated.spec.resources == instance.spec.resources


def test_malformed_reset_mask_is_invalid_argument(nebius):
    instance = _created(nebius, "badmask", hostname="box-3")
    resetting = nebius.client.with_metadata(("x-resetmask", "spec.(hostname"))
    request = _update(instance.metadata.id, spec=compute.InstanceSpec())
    failed = testkit.failure(resetting.instances.update, request)
    assert failed.code == grpc.StatusCode.INVALID_ARGUMENT and failed.error is not None
    assert "expected ')'" in str(failed.error.to_dict())
    assert nebius.get(instance.metadata.id).spec.hostname == "box-3"


def test_stale_resource_version_is_aborted(nebius):
    instance = _created(nebius, "versioned")
    request = _update(instance.metadata.id, resource_version=7, labels={"x": "y"})
    failed = testkit.failure(nebius.client.instances.update, request)
    assert failed.code == grpc.StatusCode.ABORTED
    assert failed.error.code == "ResourceConflict"
    assert failed.error.resource_conflict.resource_id == instance.metadata.id


def test_immutable_platform_is_invalid(nebius):
    instance = _created(nebius, "fixed")
    spec = compute.InstanceSpec(
        resources=compute.ResourcesSpec(platform="gpu-h200-sxm", preset="1gpu-16vcpu-200gb")
    )
    failed = testkit.failure(nebius.client.instances.update, _update(instance.metadata.id, spec))
    assert failed.code == grpc.StatusCode.INVALID_ARGUMENT
    assert [v.field for v in failed.error.bad_request.violations] == ["spec.resources.platform"]


def test_preset_change_needs_a_stopped_instance(nebius):
    instance = _created(nebius, "resized")
    bigger = compute.InstanceSpec(
        resources=compute.ResourcesSpec(platform="gpu-h100-sxm", preset="8gpu-128vcpu-1600gb")
    )
    request = _update(instance.metadata.id, bigger)
    failed = testkit.failure(nebius.client.instances.update, request)
    assert failed.code == grpc.StatusCode.FAILED_PRECONDITION and failed.error.code == "BadResourceState"

    client = nebius.client
    client.wait(client.instances.stop(compute.StopInstanceRequest(id=instance.metadata.id)))
    assert client.instances.update(request).status.code == 0
    assert nebius.get(instance.metadata.id).status.state == State.STOPPED
    client.wait(client.instances.start(compute.StartInstanceRequest(id=instance.metadata.id)))
    started = nebius.get(instance.metadata.id)
    assert started.spec.resources.preset == "8gpu-128vcpu-1600gb" and started.status.state == State.RUNNING


def test_update_requires_the_id(nebius):
    failed = testkit.failure(nebius.client.instances.update, compute.UpdateInstanceRequest())
    assert failed.code == grpc.StatusCode.INVALID_ARGUMENT
    assert [v.field for v in failed.error.bad_request.violations] == ["metadata.id"]


def test_update_while_an_operation_runs_is_a_conflict(nebius):
    testkit.FrozenClock(nebius.world)
    op = nebius.create("busy")
    failed = testkit.failure(nebius.client.instances.update, _update(op.resource_id, labels={"a": "b"}))
    assert failed.code == grpc.StatusCode.FAILED_PRECONDITION
    assert failed.error.operation_conflict.conflicting_operation_id == op.id
