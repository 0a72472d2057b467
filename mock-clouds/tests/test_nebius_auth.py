"""Nebius mock: bearer authentication, tenant isolation and response metadata."""

from __future__ import annotations

import grpc
import pytest
from mock_clouds.nebius import testkit
from mock_clouds.nebius._pb.nebius.common import v1 as common
from mock_clouds.nebius._pb.nebius.compute import v1 as compute

OTHER_TENANT = "tenant-e00zz9yy8xx7ww6vv5"
OTHER_PROJECT = "project-e00othertenant0001"


def _assert_unauthenticated(client: testkit.Client, project: str) -> None:
    failed = testkit.failure(client.instances.list, compute.ListInstancesRequest(parent_id=project))
    assert failed.code == grpc.StatusCode.UNAUTHENTICATED
    assert failed.status is not None and failed.status.code == grpc.StatusCode.UNAUTHENTICATED.value[0]


def test_missing_token_is_unauthenticated(nebius):
    _assert_unauthenticated(nebius.connect(None), nebius.project)


def test_wrong_token_is_unauthenticated(nebius):
    _assert_unauthenticated(nebius.connect("ne1-not-a-real-token"), nebius.project)


def test_wrong_scheme_is_unauthenticated(nebius):
    client = nebius.connect(None).with_metadata(("authorization", f"Basic {nebius.token_of(OTHER_TENANT)}"))
    _assert_unauthenticated(client, nebius.project)


def test_secret_never_echoed_in_errors(nebius):
    secret = "ne1-secret-that-must-not-leak"
    failed = testkit.failure(
        nebius.connect(secret).instances.list, compute.ListInstancesRequest(parent_id=nebius.project)
    )
    assert secret not in failed.message


@pytest.mark.parametrize("project", [OTHER_PROJECT, "project-e00doesnotexist00001"])
def test_foreign_or_unknown_project_is_permission_denied(nebius, project):
    calls = [
        (nebius.client.instances.list, compute.ListInstancesRequest(parent_id=project)),
        (nebius.client.instances.get_by_name, common.GetByNameRequest(parent_id=project, name="x")),
        (nebius.client.instances.create, testkit.create_request(project, "intruder")),
        (
            nebius.client.instances.list_operations_by_parent,
            compute.ListOperationsByParentRequest(parent_id=project),
        ),
        (nebius.client.platforms.list, compute.ListPlatformsRequest(parent_id=project)),
    ]
    for method, request in calls:
        failed = testkit.failure(method, request)
        assert failed.code == grpc.StatusCode.PERMISSION_DENIED
        assert failed.error == common.ServiceError(
            service="compute",
            code="PermissionDenied",
            permission_denied=common.PermissionDenied(resource_id=project),
        )


def test_other_tenants_instance_and_operation_are_permission_denied(nebius):
    other = nebius.connect(nebius.token_of(OTHER_TENANT))
    op = other.instances.create(testkit.create_request(OTHER_PROJECT, "theirs"))
    for method, request in [
        (nebius.client.instances.get, compute.GetInstanceRequest(id=op.resource_id)),
        (nebius.client.instances.delete, compute.DeleteInstanceRequest(id=op.resource_id)),
        (nebius.client.instances.stop, compute.StopInstanceRequest(id=op.resource_id)),
        (nebius.client.operations.get, common.GetOperationRequest(id=op.id)),
        (nebius.client.operations.list, common.ListOperationsRequest(resource_id=op.resource_id)),
    ]:
        failed = testkit.failure(method, request)
        assert failed.code == grpc.StatusCode.PERMISSION_DENIED
        assert failed.error is not None and failed.error.code == "PermissionDenied"
    assert (
        other.instances.get(compute.GetInstanceRequest(id=op.resource_id)).metadata.parent_id == OTHER_PROJECT
    )


def test_tenants_see_only_their_own_instances(nebius):
    other = nebius.connect(nebius.token_of(OTHER_TENANT))
    other.instances.create(testkit.create_request(OTHER_PROJECT, "theirs"))
    nebius.create("mine")
    mine = nebius.client.instances.list(compute.ListInstancesRequest(parent_id=nebius.project))
    theirs = other.instances.list(compute.ListInstancesRequest(parent_id=OTHER_PROJECT))
    assert [i.metadata.name for i in mine.items] == ["mine"]
    assert [i.metadata.name for i in theirs.items] == ["theirs"]


def test_responses_and_errors_carry_request_id(nebius):
    method = nebius.client.channel.unary_unary(
        "/nebius.compute.v1.InstanceService/List",
        request_serializer=compute.ListInstancesRequest.SerializeToString,
        response_deserializer=compute.ListInstancesResponse.FromString,
    )
    response, call = method.with_call(compute.ListInstancesRequest(parent_id=nebius.project))
    assert response.items == []
    headers = dict(call.initial_metadata())
    assert len(headers["x-request-id"]) == 36 and headers["x-trace-id"]
    with pytest.raises(grpc.RpcError) as raised:
        method.with_call(compute.ListInstancesRequest(parent_id=OTHER_PROJECT))
    assert "x-request-id" in dict(raised.value.initial_metadata())
