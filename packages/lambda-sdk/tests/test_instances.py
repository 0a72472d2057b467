"""Instance lifecycle against the in-process Lambda mock, over the wire."""

from __future__ import annotations

import pytest
from lambda_sdk import (
    Conflict,
    Instance,
    InstanceStatus,
    InvalidParameters,
    LambdaClient,
    NotFound,
)

UNKNOWN_ID = "0" * 32


def test_launch_returns_the_id_at_once_and_wait_reaches_active_with_an_ip(client: LambdaClient,
                                                                         launch) -> None:
    op = launch(client, "web-1")
    assert op.id == op.instance_id and len(op.instance_id) == 32
    first = client.get_instance(op.instance_id)
    assert first.name == "web-1" and first.status in (InstanceStatus.BOOTING, InstanceStatus.ACTIVE)
    instance = op.result(timeout=60)
    assert instance.status is InstanceStatus.ACTIVE and instance.ip
    assert instance.region.name == "us-east-1" and instance.instance_type.name == "gpu_1x_a10"
    assert instance.ssh_key_names == ["default"] and instance.is_reserved is False
    assert op.done() and op.result(timeout=60).id == instance.id


def test_booting_instance_has_no_ip_and_unavailable_actions(mock_clouds_factory, make_client, launch) -> None:
    clouds = mock_clouds_factory(providers=("lambda",), time_scale=0.05)  # a 180 s boot takes 9 s
    client = make_client(clouds, time_scale=0.05)
    op = launch(client, "slow")
    instance = client.get_instance(op.instance_id)
    assert instance.status is InstanceStatus.BOOTING and instance.ip is None
    assert not op.done()
    assert instance.actions.restart.available is False
    assert instance.actions.restart.reason_code == "vm-has-not-launched"


def test_list_get_find_and_rename(client: LambdaClient, launch) -> None:
    op = launch(client, "named")
    listed = list(client.list_instances())
    assert [i.id for i in listed] == [op.instance_id]
    assert all(isinstance(i, Instance) for i in listed)
    assert client.find_instance("named").id == op.instance_id
    assert client.find_instance("nobody") is None
    renamed = client.rename_instance(op.instance_id, "renamed")
    assert renamed.name == "renamed" and client.get_instance(op.instance_id).name == "renamed"
    assert client.find_instance("renamed").id == op.instance_id


def test_operation_is_resumable_from_its_id_in_another_client(lambda_clouds, make_client, launch) -> None:
    op = launch(make_client(lambda_clouds), "resumed")
    other = make_client(lambda_clouds)  # e.g. a later process that only stored the id
    instance = other.resume_operation(op.continuation_token()).result(timeout=60)
    assert instance.id == op.instance_id and instance.status is InstanceStatus.ACTIVE


def test_terminate_is_idempotent(client: LambdaClient, launch) -> None:
    op = launch(client, "doomed")
    op.wait(timeout=60)
    terminated = client.terminate_instances([op.instance_id])
    assert [i.id for i in terminated] == [op.instance_id]
    assert terminated[0].status is InstanceStatus.TERMINATING
    # already terminating: Lambda answers a 400; the SDK re-reads and treats it as done
    assert client.terminate_instances([op.instance_id]) == []
    assert client.terminate_instance(UNKNOWN_ID) is None  # never existed
    assert client.terminate_instances([]) == []


def test_terminate_mixed_batch_terminates_the_live_ones(client: LambdaClient, launch) -> None:
    first, second = launch(client, "a"), launch(client, "b")
    client.terminate_instances([first.instance_id])
    terminated = client.terminate_instances([first.instance_id, second.instance_id, UNKNOWN_ID])
    assert [i.id for i in terminated] == [second.instance_id]


def test_terminate_mixed_batch_also_terminates_a_preempted_one(lambda_clouds, client: LambdaClient, launch) -> None:
    """Preempted instances still exist and Lambda terminates them: the already-gone fallback must send them."""
    gone, preempted = launch(client, "gone"), launch(client, "preempted")
    preempted.wait(timeout=60)
    lambda_clouds.world.preempt("lambda", preempted.instance_id)
    client.terminate_instances([gone.instance_id])
    terminated = client.terminate_instances([gone.instance_id, preempted.instance_id])  # refused once: 400
    assert [i.id for i in terminated] == [preempted.instance_id]
    assert terminated[0].status is InstanceStatus.TERMINATING


def test_terminate_missing_with_missing_ok_false_raises(client: LambdaClient) -> None:
    with pytest.raises(NotFound):
        client.terminate_instances([UNKNOWN_ID], missing_ok=False)


def test_restart_while_booting_is_a_conflict(mock_clouds_factory, make_client, launch) -> None:
    clouds = mock_clouds_factory(providers=("lambda",), time_scale=0.05)  # a 180 s boot takes 9 s
    client = make_client(clouds, time_scale=0.05)
    op = launch(client, "r")
    with pytest.raises(Conflict) as info:
        client.restart_instances([op.instance_id])
    assert info.value.status == 409 and info.value.code == "global/conflict"


def test_restart_active_instance(client: LambdaClient, launch) -> None:
    op = launch(client, "r")
    op.wait(timeout=60)
    restarted = client.restart_instances([op.instance_id])
    assert [i.id for i in restarted] == [op.instance_id]


def test_get_unknown_and_malformed_ids(client: LambdaClient) -> None:
    with pytest.raises(NotFound) as missing:
        client.get_instance(UNKNOWN_ID)
    assert missing.value.code == "global/object-does-not-exist" and missing.value.method == "GET"
    assert missing.value.url.endswith(f"/instances/{UNKNOWN_ID}")
    with pytest.raises(InvalidParameters) as malformed:
        client.get_instance("ab")
    assert malformed.value.status == 400 and malformed.value.suggestion
    with pytest.raises(ValueError):
        client.get_instance("")


def _visible_after(seconds: float):
    def configure(state) -> None:
        state.providers["lambda"].extra["visibility_delay"] = seconds

    return configure


def test_a_launch_waits_through_the_first_404s_of_an_instance_not_visible_yet(mock_clouds_factory,
                                                                             make_client) -> None:
    """A GET /instances/{id} 404 just after a launch means "not visible yet": dstack keeps waiting for an instance
    its listing does not show (backends/lambdalabs/compute.py, _get_instance_info). The mock hides the new
    instance for 20 s (time scale 0.05: 1 s) and the grace here is 30 s; the launch ends active, not gone."""
    from lambda_sdk import PollPolicy

    clouds = mock_clouds_factory(providers=("lambda",), time_scale=0.05, configure=_visible_after(20.0))
    client = make_client(clouds, time_scale=0.05, poll=PollPolicy(initial=0.01, maximum=0.05, visibility_grace=30.0))
    operation = client.launch_instance(region_name="us-east-1", instance_type_name="gpu_1x_a10",
                                       ssh_key_names=["default"], name="late")
    instance = operation.result(timeout=120)
    assert (instance.id, instance.status.value, instance.name) == (operation.instance_id, "active", "late")


def test_a_launch_whose_instance_never_shows_fails_once_the_grace_is_over(mock_clouds_factory, make_client) -> None:
    """After the grace, a 404 for an instance never seen is "gone": OperationFailed without an instance. The
    mock hides it for an hour at time scale 1; the grace here is 0."""
    from lambda_sdk import OperationFailed, PollPolicy

    clouds = mock_clouds_factory(providers=("lambda",), time_scale=1.0, configure=_visible_after(3600.0))
    client = make_client(clouds, time_scale=1.0, poll=PollPolicy(initial=0.01, maximum=0.05, visibility_grace=0.0))
    operation = client.launch_instance(region_name="us-east-1", instance_type_name="gpu_1x_a10",
                                       ssh_key_names=["default"])
    with pytest.raises(OperationFailed) as err:
        operation.result(timeout=120)
    assert (err.value.instance_id, err.value.status, err.value.instance) == (operation.instance_id, None, None)
