"""Pure unit tests: backoff, pager, target parsing, the error tables, spec builders, client construction."""

from __future__ import annotations

import random
import threading

import nebius_sdk
import pytest
from nebius_sdk import Backoff, Code, Pager, RetryPolicy, errors
from nebius_sdk._status import error_class, operation_error
from nebius_sdk._transport import uses_plaintext
from nebius_sdk.models import (
    AttachedDiskSpecAttachMode,
    InstanceRecoveryPolicy,
    ReservationPolicy,
    ReservationPolicyPolicy,
    ServiceError,
)


# ------------------------------------------------------------------------------------------------ backoff
def test_backoff_grows_exponentially_and_is_capped() -> None:
    backoff = Backoff(initial=1.0, maximum=10.0, multiplier=2.0, jitter=0.0)
    assert [backoff.delay(n) for n in range(1, 7)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    assert backoff.delay(1, retry_after=3.0) == 3.0  # a longer server hint wins


def test_backoff_jitter_stays_within_bounds_and_varies() -> None:
    backoff = Backoff(initial=1.0, maximum=1.0, jitter=0.2)
    rng = random.Random(7)
    delays = [backoff.delay(1, rng=rng) for _ in range(200)]
    assert all(0.8 <= d <= 1.0 for d in delays)
    assert len(set(delays)) > 100


def test_backoff_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        Backoff(initial=2.0, maximum=1.0)
    with pytest.raises(ValueError):
        Backoff(jitter=1.5)
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)


# ------------------------------------------------------------------------------------------------ pager
def _pages(pages: dict[str, tuple[list[int], str]], log: list[str]):
    def fetch(token: str) -> tuple[list[int], str]:
        log.append(token)
        return pages[token]

    return fetch


def test_pager_is_lazy_and_yields_items_across_pages() -> None:
    fetched: list[str] = []
    pager = Pager(_pages({"": ([1, 2], "t1"), "t1": ([3], "t2"), "t2": ([], "")}, fetched))
    assert fetched == []
    assert list(pager) == [1, 2, 3]
    assert fetched == ["", "t1", "t2"]


def test_pager_by_page_exposes_tokens_and_resumes() -> None:
    pager = Pager(_pages({"": ([1, 2], "t1"), "t1": ([3], "")}, []))
    pages = list(pager.by_page())
    assert [(p.items, p.next_token) for p in pages] == [([1, 2], "t1"), ([3], "")]
    assert [list(p) for p in pager.by_page(continuation_token="t1")] == [[3]]


def test_pager_loop_guard_raises_on_repeated_token() -> None:
    pager = Pager(_pages({"": ([1], "a"), "a": ([2], "b"), "b": ([3], "a")}, []))
    with pytest.raises(errors.PaginationLoop) as info:
        list(pager)
    assert info.value.token == "a"


def test_pager_loop_guard_catches_a_token_pointing_at_itself() -> None:
    pager = Pager(_pages({"": ([1], "a"), "a": ([2], "a")}, []))
    with pytest.raises(errors.PaginationLoop):
        list(pager)


def _encoded(pages: dict[str, tuple[list[int], str]], log: list[str], asked_next: threading.Event):
    """A fetch of encoded pages (each item a str) that records its tokens; fetching "t1" sets `asked_next`."""

    def fetch(token: str) -> tuple[list[str], str]:
        log.append(token)
        if token == "t1":
            asked_next.set()
        items, next_token = pages[token]
        return [str(i) for i in items], next_token

    return fetch


def test_pager_with_decode_asks_for_the_next_page_before_decoding_this_one() -> None:
    fetched: list[str] = []
    asked_next = threading.Event()
    decoded: list[bool] = []  # per page: had the next page been asked for when it was decoded?

    def decode(items: list[str]) -> list[int]:
        decoded.append(asked_next.wait(5))
        return [int(i) for i in items]

    pager = Pager(_encoded({"": ([1, 2], "t1"), "t1": ([3], "")}, fetched, asked_next), decode=decode)
    assert fetched == []
    assert list(pager) == [1, 2, 3]
    assert fetched == ["", "t1"]
    assert decoded[0] is True


def test_pager_with_decode_raises_a_failed_page_where_it_is_read() -> None:
    def fetch(token: str) -> tuple[list[str], str]:
        if token == "t1":
            raise ConnectionError("page 2 failed")
        return ["1"], "t1"

    pages = Pager(fetch, decode=lambda items: [int(i) for i in items]).by_page()
    assert next(pages).items == [1]
    with pytest.raises(ConnectionError, match="page 2 failed"):
        next(pages)


def test_pager_with_decode_keeps_the_loop_guard() -> None:
    pager = Pager(_encoded({"": ([1], "a"), "a": ([2], "b"), "b": ([3], "a")}, [], threading.Event()),
                  decode=lambda items: [int(i) for i in items])
    with pytest.raises(errors.PaginationLoop) as info:
        list(pager)
    assert info.value.token == "a"


# ------------------------------------------------------------------------------------------------ targets
@pytest.mark.parametrize(
    ("target", "plaintext"),
    [
        ("127.0.0.1:50051", True),
        ("127.3.2.1:1", True),
        ("[::1]:8443", True),
        ("ipv4:127.0.0.1:5", True),
        ("localhost:443", False),  # a name: TLS (the mock clouds with --tls)
        ("dns:///localhost:1", False),
        ("compute.api.nebius.cloud:443", False),
        ("10.0.0.1:443", False),
        ("[2001:db8::1]:443", False),
        ("dns:///compute.api.nebius.cloud:443", False),
    ],
)
def test_only_loopback_ip_targets_are_plaintext(target: str, plaintext: bool) -> None:
    assert uses_plaintext(target) is plaintext


# -------------------------------------------------------------------------------------------- error tables
def _se(**kwargs: object) -> ServiceError:
    return ServiceError(service="compute", **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("code", "service_error", "expected"),
    [
        (Code.NOT_FOUND, None, errors.NotFound),
        (Code.ALREADY_EXISTS, None, errors.AlreadyExists),
        (Code.UNAUTHENTICATED, None, errors.AuthError),
        (Code.PERMISSION_DENIED, None, errors.PermissionDenied),
        (Code.INVALID_ARGUMENT, None, errors.InvalidArgument),
        (Code.UNAVAILABLE, None, errors.Unavailable),
        (Code.DEADLINE_EXCEEDED, None, errors.Unavailable),
        (Code.FAILED_PRECONDITION, None, errors.Conflict),
        (Code.INTERNAL, None, errors.APIError),
        (Code.RESOURCE_EXHAUSTED, None, errors.RateLimited),
        (Code.RESOURCE_EXHAUSTED, {"code": "NotEnoughResources"}, errors.CapacityError),
        (Code.RESOURCE_EXHAUSTED, {"code": "QuotaFailure"}, errors.QuotaError),
        (Code.RESOURCE_EXHAUSTED, {"code": "TooManyRequests"}, errors.RateLimited),
        (Code.FAILED_PRECONDITION, {"code": "OperationConflict"}, errors.Conflict),
    ],
)
def test_rpc_error_table(code: Code, service_error: dict | None, expected: type) -> None:
    se = _se(**service_error) if service_error is not None else None
    assert error_class(code, se, operation=False) is expected


def test_detail_oneof_wins_over_a_misleading_code_string() -> None:
    from nebius_sdk._pb.nebius.common.v1 import NotEnoughResources
    from nebius_sdk.models import NotEnoughResourcesViolation

    se = _se(
        code="Whatever", not_enough_resources=NotEnoughResources(violations=[NotEnoughResourcesViolation()])
    )
    assert error_class(Code.RESOURCE_EXHAUSTED, se, operation=False) is errors.CapacityError


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (Code.RESOURCE_EXHAUSTED, errors.CapacityError),
        (Code.INTERNAL, errors.OperationFailed),
        (Code.CANCELLED, errors.OperationFailed),
        (Code.ABORTED, errors.Conflict),
        (Code.PERMISSION_DENIED, errors.PermissionDenied),
    ],
)
def test_operation_status_table(code: Code, expected: type) -> None:
    assert error_class(code, None, operation=True) is expected


def test_operation_error_decodes_service_error_from_status_details() -> None:
    from nebius_sdk._pb.google.protobuf import Any as AnyMessage
    from nebius_sdk._pb.nebius.common.v1 import QuotaFailure, QuotaFailureViolation
    from nebius_sdk.models import Status

    violation = QuotaFailureViolation(quota="compute.instance.gpu.h100", limit="0", requested="1")
    se = _se(code="QuotaFailure", quota_failure=QuotaFailure(violations=[violation]))
    status = Status(
        code=int(Code.RESOURCE_EXHAUSTED), message="quota exceeded", details=[AnyMessage.pack(se)]
    )
    error = operation_error(status, operation_id="computeoperation-e00x")
    assert isinstance(error, errors.QuotaError)
    assert error.operation_id == "computeoperation-e00x"
    assert error.provider_code == "QuotaFailure" and error.service == "compute"
    assert error.violations[0].quota == "compute.instance.gpu.h100"
    assert "computeoperation-e00x" in str(error) and "RESOURCE_EXHAUSTED" in str(error)


def test_unknown_status_code_maps_to_unknown() -> None:
    assert Code(99) is Code.UNKNOWN


def test_every_error_class_descends_from_the_root() -> None:
    exported = [getattr(nebius_sdk, n) for n in nebius_sdk.__all__]
    classes = [c for c in exported if isinstance(c, type) and issubclass(c, Exception)]
    assert len(classes) >= 15
    assert all(issubclass(c, nebius_sdk.NebiusError) for c in classes)


# ------------------------------------------------------------------------------------------------ specs
def test_build_instance_spec_defaults() -> None:
    spec = nebius_sdk.build_instance_spec("gpu-h100-sxm", "1gpu-16vcpu-200gb", subnet_id="vpcsubnet-e00a")
    assert spec.resources.platform == "gpu-h100-sxm" and spec.resources.preset == "1gpu-16vcpu-200gb"
    assert spec.boot_disk.attach_mode is AttachedDiskSpecAttachMode.READ_WRITE
    assert spec.boot_disk.managed_disk.spec.source_image_family.image_family == "ubuntu22.04-cuda12"
    assert spec.boot_disk.managed_disk.spec.size_gibibytes == 100
    [nic] = spec.network_interfaces
    assert (
        nic.subnet_id == "vpcsubnet-e00a" and nic.ip_address is not None and nic.public_ip_address is not None
    )
    assert spec.reservation_policy is None and spec.preemptible is None and not spec.stopped


@pytest.mark.parametrize(
    ("reservation", "ids", "expected"),
    [
        (None, ["capacityblockgroup-e00a"], ReservationPolicy(reservation_ids=["capacityblockgroup-e00a"])),
        (ReservationPolicyPolicy.FORBID, [], ReservationPolicy(policy=ReservationPolicyPolicy.FORBID)),
        (
            ReservationPolicyPolicy.STRICT,
            ["a", "b"],
            ReservationPolicy(policy=ReservationPolicyPolicy.STRICT, reservation_ids=["a", "b"]),
        ),
        (ReservationPolicy(policy=ReservationPolicyPolicy.AUTO), [], ReservationPolicy()),
    ],
)
def test_build_instance_spec_reservation_policy(reservation, ids, expected) -> None:
    spec = nebius_sdk.build_instance_spec("p", "q", reservation=reservation, reservation_ids=ids)
    assert spec.reservation_policy == expected


def test_reservation_policy_survives_the_wire() -> None:
    from nebius_sdk.models import InstanceSpec

    spec = nebius_sdk.build_instance_spec(
        "p", "q", reservation=ReservationPolicyPolicy.STRICT, reservation_ids=["x"]
    )
    decoded = InstanceSpec.parse(bytes(spec))
    assert decoded.reservation_policy.policy is ReservationPolicyPolicy.STRICT
    assert decoded.reservation_policy.reservation_ids == ["x"]


def test_build_instance_spec_preemptible_and_existing_disk() -> None:
    spec = nebius_sdk.build_instance_spec(
        "p",
        "q",
        preemptible=True,
        boot_disk=nebius_sdk.existing_boot_disk("computedisk-e00d"),
        public_ip=False,
    )
    assert spec.preemptible is not None and spec.recovery_policy is InstanceRecoveryPolicy.FAIL
    assert spec.boot_disk.existing_disk.id == "computedisk-e00d" and spec.boot_disk.managed_disk is None
    assert spec.network_interfaces[0].public_ip_address is None


def test_a_preemptible_spec_opts_into_a_spot_pricing_model() -> None:
    """The API refuses a preemptible VM without a pricing model (real-clouds.md §2, the spot row: "pricing model
    must be specified for a preemptible instance"); SkyPilot `sky/provision/nebius/utils.py:709` and dstack
    `backends/nebius/resources.py:390-391` send `follows_spot_price`. A pricing policy id replaces it."""
    from nebius_sdk.models import InstanceSpec

    follows = InstanceSpec.parse(bytes(nebius_sdk.build_instance_spec("p", "q", preemptible=True)))
    assert follows.follows_spot_price is not None and follows.spot_pricing_policy is None
    capped = nebius_sdk.build_instance_spec("p", "q", preemptible=True, spot_pricing_policy_id="pricingpolicy-e00a")
    assert capped.spot_pricing_policy.id == "pricingpolicy-e00a" and capped.follows_spot_price is None
    regular = nebius_sdk.build_instance_spec("p", "q")
    assert (regular.follows_spot_price, regular.spot_pricing_policy, regular.on_demand) == (None, None, None)


# ------------------------------------------------------------------------------------------------ client
def test_client_reads_token_from_environment_and_hides_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEBIUS_IAM_TOKEN", "env-secret-token")
    client = nebius_sdk.NebiusClient(target="127.0.0.1:1", parent_id="project-e00x")
    try:
        assert "env-secret-token" not in repr(client)
        assert "env-secret-token" not in repr(vars(client))
    finally:
        client.close()


def test_client_without_token_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NEBIUS_IAM_TOKEN", raising=False)
    with pytest.raises(ValueError, match="NEBIUS_IAM_TOKEN"):
        nebius_sdk.NebiusClient(target="127.0.0.1:1")


def test_parent_is_required_for_project_scoped_calls() -> None:
    with (
        nebius_sdk.NebiusClient("t", target="127.0.0.1:1") as client,
        pytest.raises(ValueError, match="parent_id"),
    ):
        client.list_instances()


# ------------------------------------------------------------------------------------------ forward compat
def test_unknown_enum_values_and_fields_from_a_newer_server_are_tolerated() -> None:
    from nebius_sdk.models import Instance, InstanceState, InstanceStatus, instance_state

    newer = bytes([0x08, 99]) + bytes([0xF8, 0x3E, 0x01])  # state = 99, plus unknown field 999 = 1
    status = InstanceStatus.parse(newer)
    assert status.state not in list(InstanceState) and status.state.value == 99
    assert "UNKNOWN" in repr(status.state)
    assert bytes(status) == newer  # the unknown field survives a round trip
    assert instance_state(Instance(status=status)).value == 99
    assert instance_state(Instance()) is InstanceState.UNSPECIFIED
