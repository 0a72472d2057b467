"""Nebius mock: instance lifecycle, operation states and concurrent-operation rules."""

from __future__ import annotations

import grpc
from mock_clouds.nebius import render, testkit
from mock_clouds.nebius._pb.nebius.common import v1 as common
from mock_clouds.nebius._pb.nebius.compute import v1 as compute

State = compute.InstanceStatusInstanceState
CREATE, START, STOP, DELETE = 120, 60, 30, 30  # scenario durations (seconds before time scaling)


def _status(nebius, instance_id: str) -> tuple[State, bool]:
    status = nebius.get(instance_id).status
    return status.state, status.reconciling


def test_full_lifecycle(nebius):
    client = nebius.client
    op = nebius.create("web-1")
    assert op.id.startswith("computeoperation-e00") and op.resource_id.startswith("computeinstance-e00")
    assert op.description == "Create instance" and op.created_by == "tenant-e00a1b2c3d4e5f6g7h"
    assert op.created_at is not None and op.finished_at is None and op.status is None

    done = client.wait(op)
    assert done.id == op.id and done.status.code == 0 and done.finished_at >= done.created_at
    instance = nebius.get(op.resource_id)
    assert instance.metadata.name == "web-1" and instance.metadata.parent_id == nebius.project
    assert instance.metadata.resource_version == 1
    assert (instance.status.state, instance.status.reconciling) == (State.RUNNING, False)
    by_name = client.instances.get_by_name(common.GetByNameRequest(parent_id=nebius.project, name="web-1"))
    assert by_name.metadata.id == op.resource_id
    listed = client.instances.list(compute.ListInstancesRequest(parent_id=nebius.project))
    assert [i.metadata.id for i in listed.items] == [op.resource_id] and listed.next_page_token == ""

    stopped = client.wait(client.instances.stop(compute.StopInstanceRequest(id=op.resource_id)))
    assert stopped.description == "Stop instance" and stopped.status.code == 0
    assert _status(nebius, op.resource_id) == (State.STOPPED, False)

    started = client.wait(client.instances.start(compute.StartInstanceRequest(id=op.resource_id)))
    assert started.description == "Start instance" and started.status.code == 0
    assert _status(nebius, op.resource_id) == (State.RUNNING, False)

    deleted = client.wait(client.instances.delete(compute.DeleteInstanceRequest(id=op.resource_id)))
    assert deleted.description == "Delete instance" and deleted.status.code == 0
    assert deleted.resource_id == op.resource_id
    for method, request in [
        (client.instances.get, compute.GetInstanceRequest(id=op.resource_id)),
        (client.instances.delete, compute.DeleteInstanceRequest(id=op.resource_id)),
        (client.instances.get_by_name, common.GetByNameRequest(parent_id=nebius.project, name="web-1")),
    ]:
        failed = testkit.failure(method, request)
        assert failed.code == grpc.StatusCode.NOT_FOUND
        assert failed.error.code == "ResourceNotFound"


def test_create_goes_stopped_then_starting_then_running(nebius):
    clock = testkit.FrozenClock(nebius.world)
    op = nebius.create("phases")
    assert _status(nebius, op.resource_id) == (State.STOPPED, True)
    clock.advance(nebius.world.scaled(CREATE * 0.5))
    assert _status(nebius, op.resource_id) == (State.STARTING, True)
    clock.advance(nebius.world.scaled(CREATE * 0.6))
    assert _status(nebius, op.resource_id) == (State.RUNNING, False)
    assert nebius.client.operations.get(common.GetOperationRequest(id=op.id)).status.code == 0


def test_stop_and_start_show_transitional_states(nebius):
    clock = testkit.FrozenClock(nebius.world)
    op = nebius.create("transitions")
    clock.advance(nebius.world.scaled(CREATE + 1))
    nebius.client.instances.stop(compute.StopInstanceRequest(id=op.resource_id))
    assert _status(nebius, op.resource_id) == (State.STOPPING, True)
    clock.advance(nebius.world.scaled(STOP + 1))
    assert _status(nebius, op.resource_id) == (State.STOPPED, False)
    nebius.client.instances.start(compute.StartInstanceRequest(id=op.resource_id))
    assert _status(nebius, op.resource_id) == (State.STARTING, True)
    clock.advance(nebius.world.scaled(START + 1))
    assert _status(nebius, op.resource_id) == (State.RUNNING, False)
    nebius.client.instances.delete(compute.DeleteInstanceRequest(id=op.resource_id))
    assert _status(nebius, op.resource_id) == (State.DELETING, True)


def test_spec_stopped_creates_a_stopped_instance(nebius):
    op = nebius.client.wait(nebius.create("cold", testkit.instance_spec(stopped=True)))
    assert op.status.code == 0
    instance = nebius.get(op.resource_id)
    assert (instance.status.state, instance.status.reconciling) == (State.STOPPED, False)
    assert instance.spec.stopped is True and instance.status.reservation_id == ""
    assert instance.status.network_interfaces[0].public_ip_address is None


def test_running_instance_reports_addresses_and_disks(nebius):
    scratch = compute.AttachedDiskSpec(
        attach_mode=compute.AttachedDiskSpecAttachMode.READ_WRITE,
        managed_disk=compute.ManagedDisk(name="scratch", spec=compute.DiskSpec(size_gibibytes=100)),
    )
    op = nebius.client.wait(nebius.create("addressed", testkit.instance_spec(secondary_disks=[scratch])))
    status = nebius.get(op.resource_id).status
    nic = status.network_interfaces[0]
    assert nic.index == 0 and nic.name == "eth0"
    assert nic.ip_address.address.startswith("10.") and nic.ip_address.address.endswith("/32")
    assert nic.public_ip_address.address.endswith("/32") and nic.public_ip_address.static is False
    boot, managed = status.disk_attachments
    assert boot == compute.DiskAttachmentStatus(id="computedisk-e00bootdisk0000001")
    assert managed.name == "scratch" and managed.is_managed and managed.id.startswith("computedisk-e00")
    assert nebius.get(op.resource_id).status.disk_attachments == [boot, managed]  # stable ids


def test_second_operation_while_one_runs_is_an_operation_conflict(nebius):
    testkit.FrozenClock(nebius.world)
    op = nebius.create("busy")
    for method, request in [
        (nebius.client.instances.stop, compute.StopInstanceRequest(id=op.resource_id)),
        (nebius.client.instances.start, compute.StartInstanceRequest(id=op.resource_id)),
    ]:
        failed = testkit.failure(method, request)
        assert failed.code == grpc.StatusCode.FAILED_PRECONDITION
        assert failed.error == common.ServiceError(
            service="compute",
            code="OperationConflict",
            operation_conflict=common.OperationConflict(
                conflicting_operation_id=op.id, resource_id=op.resource_id
            ),
        )


def test_stop_of_a_stopped_instance_is_a_bad_resource_state(nebius):
    op = nebius.client.wait(nebius.create("idle", testkit.instance_spec(stopped=True)))
    failed = testkit.failure(nebius.client.instances.stop, compute.StopInstanceRequest(id=op.resource_id))
    assert failed.code == grpc.StatusCode.FAILED_PRECONDITION
    assert failed.error.code == "BadResourceState"
    assert failed.error.bad_resource_state.resource_id == op.resource_id


def test_delete_aborts_the_operation_in_flight(nebius):
    clock = testkit.FrozenClock(nebius.world)
    create = nebius.create("doomed")
    delete = nebius.client.instances.delete(compute.DeleteInstanceRequest(id=create.resource_id))
    aborted = nebius.client.operations.get(common.GetOperationRequest(id=create.id))
    assert aborted.status.code == grpc.StatusCode.ABORTED.value[0] and aborted.finished_at is not None
    assert testkit.service_error(aborted.status) == common.ServiceError(
        service="compute",
        code="OperationAborted",
        operation_aborted=common.OperationAborted(
            operation_id=create.id, aborted_by_operation_id=delete.id, resource_id=create.resource_id
        ),
    )
    again = nebius.client.instances.delete(compute.DeleteInstanceRequest(id=create.resource_id))
    assert again.id == delete.id  # a delete already in flight is returned, not repeated
    clock.advance(nebius.world.scaled(DELETE + 1))
    assert nebius.client.operations.get(common.GetOperationRequest(id=delete.id)).status.code == 0
    failed = testkit.failure(nebius.client.instances.get, compute.GetInstanceRequest(id=create.resource_id))
    assert failed.code == grpc.StatusCode.NOT_FOUND


def test_instances_and_operations_survive_a_restart(mock_clouds_factory, tmp_path):
    first = testkit.Harness(mock_clouds_factory(tmp_path, providers=("nebius",)))
    op = first.client.wait(first.create("durable", testkit.instance_spec(hostname="keeper")))
    first.close()
    first.clouds.stop()
    second = testkit.Harness(mock_clouds_factory(tmp_path, providers=("nebius",)))
    instance = second.get(op.resource_id)
    assert instance.spec.hostname == "keeper" and instance.status.state == State.RUNNING
    assert second.client.operations.get(common.GetOperationRequest(id=op.id)).status.code == 0
    second.close()


def test_a_restarted_server_lists_each_instance_exactly_as_get(mock_clouds_factory, tmp_path):
    """The server encodes every persisted instance before it serves (speed only, render.warm): what it lists
    right after a restart is byte for byte what Get returns, for running and stopped instances alike."""
    first = testkit.Harness(mock_clouds_factory(tmp_path, providers=("nebius",)))
    ops = [first.client.wait(first.create(f"kept-{i}")) for i in range(2)]
    first.client.wait(first.client.instances.stop(compute.StopInstanceRequest(id=ops[0].resource_id)))
    first.close()
    first.clouds.stop()
    second = testkit.Harness(mock_clouds_factory(tmp_path, providers=("nebius",)))
    listed = second.client.instances.list(compute.ListInstancesRequest(parent_id=second.project)).items
    got = {op.resource_id: bytes(second.get(op.resource_id)) for op in ops}
    assert {i.metadata.id: bytes(i) for i in listed} == got
    assert {i.metadata.id: i.status.state for i in listed} == {ops[0].resource_id: State.STOPPED,
                                                               ops[1].resource_id: State.RUNNING}
    assert render.warm(second.world) == 2
    second.close()
