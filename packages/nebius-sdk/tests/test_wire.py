"""Wire-level tests against a scriptable gRPC server: metadata, deadlines, retries, idempotency, error
decoding, and operation polling edge cases that the mock cloud cannot be told to produce on demand."""

from __future__ import annotations

import logging
import socket
import threading
import time

import grpc
import pytest
from nebius_sdk import (
    AuthError,
    CapacityError,
    Conflict,
    InvalidArgument,
    NebiusClient,
    NotFound,
    OperationFailed,
    OperationTimeout,
    PaginationLoop,
    QuotaError,
    RateLimited,
    RequestNotSent,
    RetryPolicy,
    Unavailable,
)

UNAVAILABLE = grpc.StatusCode.UNAVAILABLE


def _flaky(fail_times: int, response, abort):
    state = {"n": 0}

    def handler(request):
        state["n"] += 1
        if state["n"] <= fail_times:
            raise abort
        return response

    return handler


# ------------------------------------------------------------------------------------------------ metadata
def test_every_call_has_bearer_token_and_deadline(fake, fake_client, pb) -> None:
    fake.on("InstanceService/Get", lambda r: pb.instance(r.id))
    fake_client.get_instance("computeinstance-e00vm1", timeout=3.0)
    [call] = fake.calls
    assert call.metadata["authorization"] == "Bearer secret-token-123"
    assert call.time_remaining is not None and 0 < call.time_remaining < 3.5  # grpc rounds the timeout up
    assert "x-idempotency-key" not in call.metadata


def test_raw_stub_calls_through_the_client_channel_still_get_a_deadline(fake, fake_client, pb) -> None:
    from nebius_sdk._pb.nebius.compute.v1 import GetInstanceRequest, InstanceServiceStub

    fake.on("InstanceService/Get", lambda r: pb.instance(r.id))
    InstanceServiceStub(fake_client._transport.channel).get(GetInstanceRequest(id="x"))
    [call] = fake.calls
    assert call.time_remaining is not None and call.time_remaining < 5.5
    assert call.metadata["authorization"].startswith("Bearer ")


def test_mutating_calls_carry_a_fresh_idempotency_key(fake, fake_client, pb) -> None:
    fake.on("InstanceService/Stop", lambda r: pb.operation(resource_id=r.id))
    fake_client.begin_stop_instance("computeinstance-e00a")
    fake_client.begin_stop_instance("computeinstance-e00a")
    keys = [c.metadata["x-idempotency-key"] for c in fake.calls_to("InstanceService/Stop")]
    assert len(keys) == 2 and keys[0] != keys[1] and all(len(k) == 36 for k in keys)


def test_retried_create_reuses_its_idempotency_key(fake, fake_client, pb) -> None:
    fake.on("InstanceService/Create", _flaky(2, pb.operation(), pb.Abort(UNAVAILABLE, "try again")))
    op = fake_client.begin_create_instance("vm-1", "gpu-h100-sxm", "1gpu-16vcpu-200gb", subnet_id="s")
    assert op.id == "computeoperation-e00op1" and op.resource_id == "computeinstance-e00vm1"
    keys = {c.metadata["x-idempotency-key"] for c in fake.calls_to("InstanceService/Create")}
    assert len(fake.calls_to("InstanceService/Create")) == 3 and len(keys) == 1


def test_create_request_shape(fake, fake_client, pb) -> None:
    fake.on("InstanceService/Create", lambda r: pb.operation())
    fake_client.begin_create_instance(
        "vm-1",
        "gpu-h100-sxm",
        "1gpu-16vcpu-200gb",
        labels={"fleet": "f1"},
        subnet_id="vpcsubnet-e00s",
        reservation=pb.compute_.ReservationPolicyPolicy.STRICT,
        reservation_ids=["capacityblockgroup-e00r"],
    )
    request = fake.calls[0].request
    assert request.metadata.parent_id == "project-e00test" and request.metadata.name == "vm-1"
    assert request.metadata.labels == {"fleet": "f1"} and not request.metadata.id
    assert request.spec.reservation_policy.policy is pb.compute_.ReservationPolicyPolicy.STRICT
    assert request.spec.reservation_policy.reservation_ids == ["capacityblockgroup-e00r"]
    assert request.spec.boot_disk.managed_disk.name == "vm-1-boot"


# ------------------------------------------------------------------------------------------------ retries
def test_reads_retry_unavailable_then_succeed(fake, fake_client, pb) -> None:
    fake.on("InstanceService/Get", _flaky(2, pb.instance(), pb.Abort(UNAVAILABLE, "blip")))
    assert fake_client.get_instance("computeinstance-e00vm1").metadata.name == "vm-1"
    assert len(fake.calls) == 3


def test_retries_are_bounded(fake, fake_client, pb) -> None:
    fake.on(
        "InstanceService/Get", _flaky(99, pb.instance(), pb.Abort(UNAVAILABLE, "down", request_id="rid-9"))
    )
    with pytest.raises(Unavailable) as info:
        fake_client.get_instance("computeinstance-e00vm1")
    assert len(fake.calls) == 3  # max_attempts of the fixture client
    assert info.value.request_id == "rid-9"
    assert info.value.method == "/nebius.compute.v1.InstanceService/Get"


def test_rate_limit_is_retried_then_typed(fake, fake_client, pb) -> None:
    too_many = pb.common_.ServiceError(
        service="compute",
        code="TooManyRequests",
        too_many_requests=pb.common_.TooManyRequests(violation="rps"),
    )
    abort = pb.Abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "slow down", too_many)
    fake.on(
        "InstanceService/List", _flaky(1, pb.compute_.ListInstancesResponse(items=[pb.instance()]), abort)
    )
    assert [i.metadata.id for i in fake_client.list_instances()] == ["computeinstance-e00vm1"]
    fake.on("InstanceService/List", _flaky(99, None, abort))
    with pytest.raises(RateLimited) as info:
        list(fake_client.list_instances())
    assert info.value.retry_after is None and info.value.provider_code == "TooManyRequests"


def test_errors_that_are_not_transient_are_not_retried(fake, fake_client, pb) -> None:
    fake.on("InstanceService/Get", _flaky(99, None, pb.Abort(grpc.StatusCode.NOT_FOUND, "no such instance")))
    with pytest.raises(NotFound):
        fake_client.get_instance("computeinstance-e00zz")
    assert len(fake.calls) == 1


def test_deadline_is_enforced(fake, pb) -> None:
    """A server that never answers in time ends each attempt at its deadline: DEADLINE_EXCEEDED, retried once.
    The handler holds every call until the test ends, and the deadline is long enough for a loaded machine to
    deliver the second attempt to the server before its own deadline (0.1 s was not always enough)."""
    release = threading.Event()

    def slow(request):
        release.wait(30)
        return pb.instance()

    fake.on("InstanceService/Get", slow)
    client = NebiusClient("t", target=fake.target, timeout=1.0, retry=RetryPolicy(max_attempts=2))
    try:
        with client, pytest.raises(Unavailable) as info:
            client.get_instance("computeinstance-e00vm1")
    finally:
        release.set()
    assert info.value.code.name == "DEADLINE_EXCEEDED"
    assert len(fake.calls) == 2


def test_connection_refused_is_request_not_sent() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound but not listening: connections are refused
        client = NebiusClient("t", target=f"127.0.0.1:{port}", retry=RetryPolicy(max_attempts=2))
        with client, pytest.raises(RequestNotSent) as info:
            client.get_instance("computeinstance-e00vm1")
    assert info.value.target == f"127.0.0.1:{port}"
    assert info.value.method == "/nebius.compute.v1.InstanceService/Get"


def test_server_side_unavailable_is_not_request_not_sent(fake, fake_client, pb) -> None:
    fake.on("InstanceService/Get", lambda r: pb.instance())
    fake_client.get_instance("x")  # the channel is connected now
    fake.on("InstanceService/Get", _flaky(99, None, pb.Abort(UNAVAILABLE, "overloaded")))
    with pytest.raises(Unavailable):
        fake_client.get_instance("x")


# ------------------------------------------------------------------------------------------------ decoding
def test_trailer_service_error_is_decoded(fake, fake_client, pb) -> None:
    violation = pb.common_.BadRequestViolation(field="spec.reservation_policy", message="ids with FORBID")
    se = pb.common_.ServiceError(
        service="compute", code="BadRequest", bad_request=pb.common_.BadRequest(violations=[violation])
    )
    fake.on(
        "InstanceService/Create",
        _flaky(99, None, pb.Abort(grpc.StatusCode.INVALID_ARGUMENT, "bad", se, "r1")),
    )
    with pytest.raises(InvalidArgument) as info:
        fake_client.begin_create_instance("vm", "p", "q")
    error = info.value
    assert error.violations[0].field == "spec.reservation_policy"
    assert error.request_id == "r1" and error.provider_code == "BadRequest" and error.service == "compute"
    assert "secret-token-123" not in str(error) and "secret-token-123" not in repr(vars(error))


@pytest.mark.parametrize(
    ("code", "detail", "expected"),
    [
        ("RESOURCE_EXHAUSTED", {"not_enough_resources": "NotEnoughResources"}, CapacityError),
        ("RESOURCE_EXHAUSTED", {"quota_failure": "QuotaFailure"}, QuotaError),
        ("FAILED_PRECONDITION", {"operation_conflict": "OperationConflict"}, Conflict),
        ("UNAUTHENTICATED", {}, AuthError),
    ],
)
def test_error_classes_from_the_wire(fake, fake_client, pb, code, detail, expected) -> None:
    kwargs = {}
    for field, provider_code in detail.items():
        detail_type = {
            "not_enough_resources": pb.common_.NotEnoughResources,
            "quota_failure": pb.common_.QuotaFailure,
            "operation_conflict": pb.common_.OperationConflict,
        }[field]
        kwargs = {field: detail_type(), "code": provider_code}
    se = pb.common_.ServiceError(service="compute", **kwargs) if kwargs else None
    fake.on("InstanceService/Start", _flaky(99, None, pb.Abort(getattr(grpc.StatusCode, code), "no", se)))
    with pytest.raises(expected):
        fake_client.begin_start_instance("computeinstance-e00vm1")


def test_delete_of_a_missing_instance_succeeds(fake, fake_client, pb) -> None:
    fake.on("InstanceService/Delete", _flaky(99, None, pb.Abort(grpc.StatusCode.NOT_FOUND, "gone")))
    gone = fake_client.begin_delete_instance("computeinstance-e00gone")
    assert gone.done() and gone.id == "" and gone.resource_id == "computeinstance-e00gone"
    fake_client.delete_instance("computeinstance-e00gone")
    with pytest.raises(NotFound):
        fake_client.begin_delete_instance("computeinstance-e00gone", missing_ok=False)


def test_find_instance_returns_none_on_not_found(fake, fake_client, pb) -> None:
    fake.on("InstanceService/GetByName", _flaky(99, None, pb.Abort(grpc.StatusCode.NOT_FOUND, "no")))
    assert fake_client.find_instance("nope") is None
    assert fake.calls[0].request.parent_id == "project-e00test" and fake.calls[0].request.name == "nope"


def test_server_repeating_a_page_token_is_caught(fake, fake_client, pb) -> None:
    fake.on(
        "InstanceService/List",
        lambda r: pb.compute_.ListInstancesResponse(items=[pb.instance()], next_page_token="same"),
    )
    with pytest.raises(PaginationLoop):
        list(fake_client.list_instances())
    assert len(fake.calls) == 2


# ------------------------------------------------------------------------------------------------ operations
def _op_sequence(pb, final_status, running_polls: int):
    state = {"n": 0}

    def get(request):
        state["n"] += 1
        done = state["n"] > running_polls
        return pb.operation(request.id, status=final_status if done else None)

    return get


def test_wait_raises_capacity_error_from_operation_status(fake, fake_client, pb) -> None:
    from nebius_sdk._pb.google.protobuf import Any as AnyMessage

    violation = pb.common_.NotEnoughResourcesViolation(
        resource_type="virtualMachine", requested="1gpu-16vcpu-200gb"
    )
    se = pb.common_.ServiceError(
        service="compute",
        code="NotEnoughResources",
        not_enough_resources=pb.common_.NotEnoughResources(violations=[violation]),
    )
    status = pb.Status(code=8, message="VM schedule timeout", details=[AnyMessage.pack(se)])
    fake.on("InstanceService/Create", lambda r: pb.operation())
    fake.on("OperationService/Get", _op_sequence(pb, status, running_polls=3))
    op = fake_client.begin_create_instance("vm", "gpu-h100-sxm", "1gpu-16vcpu-200gb")
    with pytest.raises(CapacityError) as info:
        op.wait(timeout=10)
    assert info.value.operation_id == op.id
    assert info.value.violations[0].requested == "1gpu-16vcpu-200gb"
    assert op.done() and not op.successful()
    assert len(fake.calls_to("OperationService/Get")) == 4


def test_wait_survives_transient_poll_failures(fake, fake_client, pb) -> None:
    polls = {"n": 0}

    def get(request):
        polls["n"] += 1
        if polls["n"] % 2:
            raise pb.Abort(UNAVAILABLE, "poll blip")
        return pb.operation(request.id, status=pb.Status(code=0) if polls["n"] > 6 else None)

    fake.on("InstanceService/Stop", lambda r: pb.operation(resource_id=r.id))
    fake.on("OperationService/Get", get)
    fake.on(
        "InstanceService/Get",
        lambda r: pb.instance(r.id, state=pb.compute_.InstanceStatusInstanceState.STOPPED),
    )
    instance = fake_client.begin_stop_instance("computeinstance-e00vm1").result(timeout=10)
    assert instance.status.state is pb.compute_.InstanceStatusInstanceState.STOPPED


def test_wait_has_a_deadline_even_when_polls_hang(fake, pb) -> None:
    def hang(request):
        time.sleep(0.5)
        return pb.operation(request.id)

    fake.on("InstanceService/Start", lambda r: pb.operation(resource_id=r.id))
    fake.on("OperationService/Get", hang)
    with NebiusClient("t", target=fake.target, timeout=5.0, poll=_fast()) as client:
        op = client.begin_start_instance("computeinstance-e00vm1")
        started = time.monotonic()
        with pytest.raises(OperationTimeout) as info:
            op.wait(timeout=0.2)
        assert time.monotonic() - started < 5.0  # bounded by the wait deadline, not the 5 s call timeout
    assert info.value.operation_id == op.id


def test_wait_propagates_non_transient_poll_errors(fake, fake_client, pb) -> None:
    fake.on("InstanceService/Start", lambda r: pb.operation(resource_id=r.id))
    fake.on("OperationService/Get", _flaky(99, None, pb.Abort(grpc.StatusCode.UNAUTHENTICATED, "expired")))
    with pytest.raises(AuthError):
        fake_client.begin_start_instance("computeinstance-e00vm1").wait(timeout=10)


def test_internal_operation_failure_is_operation_failed(fake, fake_client, pb) -> None:
    fake.on("InstanceService/Start", lambda r: pb.operation(resource_id=r.id))
    fake.on("OperationService/Get", _op_sequence(pb, pb.Status(code=13, message="boom"), running_polls=0))
    with pytest.raises(OperationFailed) as info:
        fake_client.begin_start_instance("computeinstance-e00vm1").result(timeout=10)
    assert info.value.message == "boom"


def test_already_finished_operation_needs_no_poll(fake, fake_client, pb) -> None:
    fake.on("InstanceService/Delete", lambda r: pb.operation(resource_id=r.id, status=pb.Status(code=0)))
    op = fake_client.begin_delete_instance("computeinstance-e00vm1")
    assert op is not None and op.done() and op.result(timeout=1) is None
    assert fake.calls_to("OperationService/Get") == []


def test_logs_never_contain_the_token(fake, fake_client, pb, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="nebius_sdk")
    fake.on("InstanceService/Get", _flaky(1, pb.instance(), pb.Abort(UNAVAILABLE, "blip")))
    fake_client.get_instance("computeinstance-e00vm1")
    assert "InstanceService/Get" in caplog.text
    assert "secret-token-123" not in caplog.text


def _fast():
    from nebius_sdk import PollPolicy

    return PollPolicy(initial=0.01, maximum=0.05)


# ------------------------------------------------------------------------------------------------ channels
def _non_loopback_ipv4() -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent for a UDP connect
        except OSError:
            return None
        address = probe.getsockname()[0]
    return None if address.startswith("127.") else address


def test_remote_targets_use_tls_and_loopback_targets_plaintext(fake_factory, pb) -> None:
    address = _non_loopback_ipv4()
    if address is None:
        pytest.skip("this host has no non-loopback IPv4 address")
    server = fake_factory(host="0.0.0.0")  # a plaintext server reachable on every interface
    server.on("InstanceService/Get", lambda r: pb.instance(r.id))
    with NebiusClient("t", target=f"127.0.0.1:{server.port}") as local:
        assert local.get_instance("computeinstance-e00vm1").metadata.id == "computeinstance-e00vm1"
    remote = NebiusClient("t", target=f"{address}:{server.port}", timeout=5.0, retry=RetryPolicy(max_attempts=1))
    with remote, pytest.raises(RequestNotSent):  # the TLS handshake with a plaintext server fails
        remote.get_instance("computeinstance-e00vm1")
    assert len(server.calls) == 1


def test_borrowed_channel_is_used_and_left_open(fake, pb) -> None:
    fake.on("InstanceService/Get", lambda r: pb.instance(r.id))
    channel = grpc.insecure_channel(fake.target)
    with NebiusClient("borrowed-token", channel=channel, target=fake.target) as client:
        client.get_instance("computeinstance-e00vm1")
    assert fake.calls[0].metadata["authorization"] == "Bearer borrowed-token"
    from nebius_sdk._pb.nebius.compute.v1 import GetInstanceRequest, InstanceServiceStub

    InstanceServiceStub(channel).get(GetInstanceRequest(id="x"))  # still open after client.close()
    channel.close()
    assert len(fake.calls) == 2


@pytest.mark.parametrize("prefix", ["type.googleapis.com/", "types.nebius.example/", "example.org/a/b/"])
def test_a_service_error_is_recognised_under_any_type_url_prefix(fake, fake_client, pb, prefix) -> None:
    """A detail's type is the last '/'-separated part of its type URL, as protobuf defines it and as the vendor's
    SDK resolves it (pysdk `nebius/base/protos/registry.py`; real-clouds.md Part 3 R2): a QuotaFailure under another
    prefix is a QuotaError, not a RateLimited retry."""
    quota = pb.common_.ServiceError(
        service="compute", code="QuotaFailure", quota_failure=pb.common_.QuotaFailure(
            violations=[pb.common_.QuotaFailureViolation(quota="compute.instance.gpu.h100", limit="0", requested="1")]
        ),
    )
    detail = pb.Any_(type_url=f"{prefix}nebius.common.v1.ServiceError", value=bytes(quota))
    fake.on("InstanceService/Create", _flaky(99, None, pb.Abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "quota", detail)))
    with pytest.raises(QuotaError) as info:
        fake_client.begin_create_instance("vm", "gpu-h100-sxm", "1gpu-16vcpu-200gb", subnet_id="vpcsubnet-e00a")
    assert info.value.violations[0].quota == "compute.instance.gpu.h100"
    assert len(fake.calls_to("InstanceService/Create")) == 1  # refused for quota: not retried


def test_a_detail_of_an_unknown_type_is_skipped(fake, fake_client, pb) -> None:
    """Whatever its prefix, a type the SDK does not know leaves the code alone to decide (RESOURCE_EXHAUSTED on an
    RPC: rate limited)."""
    detail = pb.Any_(type_url="type.googleapis.com/example.v1.Unknown", value=b"\x08\x01")
    fake.on("InstanceService/Get", _flaky(99, None, pb.Abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "slow", detail)))
    with pytest.raises(RateLimited):
        fake_client.get_instance("computeinstance-e00vm1")
