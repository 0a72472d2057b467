"""Nebius mock: OperationService, ListOperationsByParent, list paging and idempotency keys."""

from __future__ import annotations

import uuid

import grpc
import pytest
from mock_clouds.core.models import Provider
from mock_clouds.nebius import testkit
from mock_clouds.nebius._pb.nebius.common import v1 as common
from mock_clouds.nebius._pb.nebius.compute import v1 as compute

CPU_STOPPED = testkit.instance_spec("cpu-d3", "4vcpu-16gb", stopped=True)


def _pages(fetch, page_size: int) -> list[list[str]]:
    """Every page of a listing, following next_page_token until it is ""."""
    pages, token = [], ""
    while True:
        ids, token = fetch(page_size, token)
        pages.append(ids)
        if not token:
            return pages


def _list_instances(nebius):
    def fetch(page_size: int, token: str) -> tuple[list[str], str]:
        request = compute.ListInstancesRequest(
            parent_id=nebius.project, page_size=page_size, page_token=token
        )
        response = nebius.client.instances.list(request)
        return [i.metadata.id for i in response.items], response.next_page_token

    return fetch


def test_get_unknown_operation_is_not_found(nebius):
    missing = "computeoperation-e00doesnotexist000"
    failed = testkit.failure(nebius.client.operations.get, common.GetOperationRequest(id=missing))
    assert failed.code == grpc.StatusCode.NOT_FOUND
    assert failed.error == common.ServiceError(
        service="compute",
        code="ResourceNotFound",
        resource_not_found=common.ResourceNotFound(resource_id=missing),
    )


def test_operation_records_its_request(nebius):
    op = nebius.client.with_metadata(("x-idempotency-key", "key-1")).instances.create(
        testkit.create_request(nebius.project, "recorded", CPU_STOPPED)
    )
    got = nebius.client.operations.get(common.GetOperationRequest(id=op.id))
    assert got.request.type_url == "type.googleapis.com/nebius.compute.v1.CreateInstanceRequest"
    assert got.request.unpack().metadata.name == "recorded"
    assert got.request_headers == {"x-idempotency-key": common.OperationRequestHeader(values=["key-1"])}


def test_list_operations_by_parent_and_by_resource(nebius):
    """ListOperationsByParent lists newest first: SkyPilot reads the first one listed for an instance as its most
    recent (`sky/provision/nebius/utils.py:741`, real-clouds.md Part 2 D10; the proto states no order)."""
    client = nebius.client
    first = client.wait(nebius.create("a", CPU_STOPPED))
    second = client.wait(nebius.create("b", CPU_STOPPED))
    start = client.wait(client.instances.start(compute.StartInstanceRequest(id=first.resource_id)))
    by_parent = client.instances.list_operations_by_parent(
        compute.ListOperationsByParentRequest(parent_id=nebius.project)
    )
    assert [op.id for op in by_parent.operations] == [start.id, second.id, first.id]
    assert all(op.status is not None and op.status.code == 0 for op in by_parent.operations)
    assert by_parent.next_page_token == ""
    by_resource = client.operations.list(common.ListOperationsRequest(resource_id=first.resource_id))
    assert [(op.id, op.description) for op in by_resource.operations] == [
        (first.id, "Create instance"),
        (start.id, "Start instance"),
    ]


def test_operations_of_a_deleted_instance_stay_listed(nebius):
    client = nebius.client
    create = client.wait(nebius.create("gone", CPU_STOPPED))
    delete = client.wait(client.instances.delete(compute.DeleteInstanceRequest(id=create.resource_id)))
    listed = client.operations.list(common.ListOperationsRequest(resource_id=create.resource_id))
    assert [op.id for op in listed.operations] == [create.id, delete.id]
    assert client.operations.get(common.GetOperationRequest(id=delete.id)).status.code == 0


def test_instances_page_in_stable_order(nebius):
    created = [nebius.create(f"vm-{i}", CPU_STOPPED).resource_id for i in range(5)]
    pages = _pages(_list_instances(nebius), 2)
    assert [len(p) for p in pages] == [2, 2, 1]
    assert [i for p in pages for i in p] == created
    assert _pages(_list_instances(nebius), 0) == [created]  # 0 = server default (100)


def test_paging_survives_deletes_between_pages(nebius):
    created = [nebius.create(f"vm-{i}", CPU_STOPPED).resource_id for i in range(4)]
    fetch = _list_instances(nebius)
    first, token = fetch(2, "")
    nebius.client.wait(nebius.client.instances.delete(compute.DeleteInstanceRequest(id=created[0])))
    rest, last = fetch(2, token)
    assert first == created[:2] and rest == created[2:] and last == ""


def test_operations_page(nebius):
    ids = [nebius.create(f"vm-{i}", CPU_STOPPED).id for i in range(3)]

    def fetch(page_size: int, token: str) -> tuple[list[str], str]:
        request = compute.ListOperationsByParentRequest(
            parent_id=nebius.project, page_size=page_size, page_token=token
        )
        response = nebius.client.instances.list_operations_by_parent(request)
        return [op.id for op in response.operations], response.next_page_token

    newest_first = ids[::-1]
    assert _pages(fetch, 2) == [newest_first[:2], newest_first[2:]]


@pytest.mark.parametrize(
    ("page_size", "page_token", "field"),
    [
        (-1, "", "page_size"),
        (1001, "", "page_size"),
        (10, "not-a-token", "page_token"),
        (10, "é", "page_token"),
    ],
)
def test_bad_paging_arguments_are_invalid(nebius, page_size, page_token, field):
    request = compute.ListInstancesRequest(
        parent_id=nebius.project, page_size=page_size, page_token=page_token
    )
    failed = testkit.failure(nebius.client.instances.list, request)
    assert failed.code == grpc.StatusCode.INVALID_ARGUMENT
    assert [v.field for v in failed.error.bad_request.violations] == [field]


def test_same_idempotency_key_returns_the_same_operation(nebius):
    client = nebius.client.with_metadata(("x-idempotency-key", str(uuid.uuid4())))
    first = client.instances.create(testkit.create_request(nebius.project, "once"))
    again = client.instances.create(testkit.create_request(nebius.project, "once"))
    assert again.id == first.id and again.resource_id == first.resource_id
    listed = nebius.client.instances.list(compute.ListInstancesRequest(parent_id=nebius.project))
    assert [i.metadata.name for i in listed.items] == ["once"]
    assert len(nebius.world.operations(Provider.NEBIUS, resource_id=first.resource_id)) == 1


def test_without_a_key_a_repeated_create_is_already_exists(nebius):
    first = nebius.create("twice")
    failed = testkit.failure(nebius.client.instances.create, testkit.create_request(nebius.project, "twice"))
    assert failed.code == grpc.StatusCode.ALREADY_EXISTS
    assert failed.error == common.ServiceError(
        service="compute",
        code="ResourceAlreadyExists",
        resource_already_exists=common.ResourceAlreadyExists(resource_id=first.resource_id),
    )


def test_idempotency_key_on_stop_and_delete(nebius):
    created = nebius.client.wait(nebius.create("keyed"))
    keyed = nebius.client.with_metadata(("x-idempotency-key", "stop-1"))
    stop = keyed.instances.stop(compute.StopInstanceRequest(id=created.resource_id))
    nebius.client.wait(stop)
    assert keyed.instances.stop(compute.StopInstanceRequest(id=created.resource_id)).id == stop.id
    deleting = nebius.client.with_metadata(("x-idempotency-key", "delete-1"))
    delete = nebius.client.wait(
        deleting.instances.delete(compute.DeleteInstanceRequest(id=created.resource_id))
    )
    replay = deleting.instances.delete(compute.DeleteInstanceRequest(id=created.resource_id))
    assert replay.id == delete.id and replay.status.code == 0


def test_a_listing_shows_each_instance_exactly_as_get_also_after_it_changes(nebius):
    """List reuses each instance's encoding while nothing it is rendered from changed (speed only): before and
    after a change, every listed instance is byte for byte what Get returns."""
    client = nebius.client
    ops = [nebius.create(f"vm-{i}", CPU_STOPPED) for i in range(3)]
    for op in ops:
        client.wait(op)

    def listed() -> dict[str, bytes]:
        request = compute.ListInstancesRequest(parent_id=nebius.project)
        return {i.metadata.id: bytes(i) for i in client.instances.list(request).items}

    def got() -> dict[str, bytes]:
        return {op.resource_id: bytes(nebius.get(op.resource_id)) for op in ops}

    assert listed() == got()
    started = ops[0].resource_id
    client.wait(client.instances.start(compute.StartInstanceRequest(id=started)))
    after = listed()
    assert after == got()
    assert nebius.get(started).status.state == compute.InstanceStatusInstanceState.RUNNING
