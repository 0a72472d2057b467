"""Fixtures: a small scriptable gRPC server (for wire-level unit tests) and clients of the mock clouds.

The scriptable server speaks the same generated messages as the SDK; each test installs handlers
(`fake.on("InstanceService/Get", fn)`) and inspects `fake.calls` (method, metadata, deadline, request).
Tests against the real mock use `mock_clouds_factory` from `mock_clouds.testing` (`-p mock_clouds.testing`).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, replace
from typing import Any

import grpc
import pytest
from nebius_sdk import NebiusClient, PollPolicy, RetryPolicy
from nebius_sdk._pb.google.protobuf import Any as AnyMessage
from nebius_sdk._pb.google.rpc import Status
from nebius_sdk._pb.nebius.common import v1 as common
from nebius_sdk._pb.nebius.compute import v1 as compute
from nebius_sdk._pb.nebius.iam import v1 as iam

FAST_RETRY = RetryPolicy(max_attempts=6, initial=0.005, maximum=0.02, multiplier=2.0)
FAST_POLL = PollPolicy(initial=0.005, maximum=0.05, multiplier=1.5)
SUBNET = "vpcsubnet-e00defaultsubnet01"  # the default project's subnet in the default scenario (SubnetService lists it)

# method -> (request type, response type)
_METHODS: dict[str, tuple[type, type]] = {
    "nebius.compute.v1.InstanceService/Get": (compute.GetInstanceRequest, compute.Instance),
    "nebius.compute.v1.InstanceService/GetByName": (common.GetByNameRequest, compute.Instance),
    "nebius.compute.v1.InstanceService/List": (compute.ListInstancesRequest, compute.ListInstancesResponse),
    "nebius.compute.v1.InstanceService/Create": (compute.CreateInstanceRequest, common.Operation),
    "nebius.compute.v1.InstanceService/Delete": (compute.DeleteInstanceRequest, common.Operation),
    "nebius.compute.v1.InstanceService/Start": (compute.StartInstanceRequest, common.Operation),
    "nebius.compute.v1.InstanceService/Stop": (compute.StopInstanceRequest, common.Operation),
    "nebius.compute.v1.InstanceService/ListOperationsByParent": (
        compute.ListOperationsByParentRequest,
        common.ListOperationsResponse,
    ),
    "nebius.common.v1.OperationService/Get": (common.GetOperationRequest, common.Operation),
    "nebius.common.v1.OperationService/List": (common.ListOperationsRequest, common.ListOperationsResponse),
    "nebius.compute.v1.PlatformService/List": (compute.ListPlatformsRequest, compute.ListPlatformsResponse),
    "nebius.compute.v1.PlatformService/GetByName": (common.GetByNameRequest, compute.Platform),
    "nebius.iam.v1.TokenExchangeService/Exchange": (iam.ExchangeTokenRequest, iam.CreateTokenResponse),
}


@dataclass
class Call:
    method: str  # "InstanceService/Get"
    metadata: dict[str, str]
    time_remaining: float | None
    request: Any


class Abort(Exception):
    """Raised by a handler to end the call with a status (and optional ServiceError / request id)."""

    def __init__(
        self, code: grpc.StatusCode, message: str = "", service_error: Any = None, request_id: str = ""
    ):
        super().__init__(message)
        self.code, self.message, self.service_error, self.request_id = (
            code,
            message,
            service_error,
            request_id,
        )


def status_details(code: grpc.StatusCode, message: str, service_error: Any) -> bytes:
    if service_error is None:
        details = []
    else:  # an Any as it is (any type URL), or a message packed under type.googleapis.com
        details = [service_error if isinstance(service_error, AnyMessage) else AnyMessage.pack(service_error)]
    return bytes(Status(code=code.value[0], message=message, details=details))


class FakeServer:
    """`tls` is (private key PEM, certificate chain PEM) to serve TLS instead of plaintext."""

    def __init__(self, host: str = "127.0.0.1", tls: tuple[bytes, bytes] | None = None) -> None:
        self.calls: list[Call] = []
        self._handlers: dict[str, Callable[[Any], Any]] = {}
        self._lock = threading.Lock()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=20))
        self._server.add_generic_rpc_handlers(self._generic_handlers())
        if tls is None:
            self.port = self._server.add_insecure_port(f"{host}:0")
        else:
            self.port = self._server.add_secure_port(f"{host}:0", grpc.ssl_server_credentials([tls]))
        self.target = f"127.0.0.1:{self.port}"
        self._server.start()

    def on(self, method: str, handler: Callable[[Any], Any]) -> None:
        """Install `handler(request) -> response` (or raise Abort) for "Service/Method"."""
        self._handlers[method] = handler

    def calls_to(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def stop(self) -> None:
        self._server.stop(grace=None).wait()

    def _generic_handlers(self) -> list[Any]:
        by_service: dict[str, dict[str, Any]] = {}
        for path, (req_t, resp_t) in _METHODS.items():
            service, method = path.split("/")
            handler = grpc.unary_unary_rpc_method_handler(
                self._dispatcher(f"{service.rsplit('.', 1)[1]}/{method}"),
                request_deserializer=req_t.FromString,
                response_serializer=resp_t.SerializeToString,
            )
            by_service.setdefault(service, {})[method] = handler
        return [grpc.method_handlers_generic_handler(s, h) for s, h in by_service.items()]

    def _dispatcher(self, short: str) -> Callable[[Any, grpc.ServicerContext], Any]:
        def dispatch(request: Any, context: grpc.ServicerContext) -> Any:
            with self._lock:
                self.calls.append(
                    Call(short, dict(context.invocation_metadata()), context.time_remaining(), request)
                )
            handler = self._handlers.get(short)
            if handler is None:
                context.abort(grpc.StatusCode.UNIMPLEMENTED, f"{short} not scripted")
            try:
                return handler(request)
            except Abort as exc:
                if exc.request_id:
                    context.send_initial_metadata((("x-request-id", exc.request_id),))
                if exc.service_error is not None:
                    details = status_details(exc.code, exc.message, exc.service_error)
                    context.set_trailing_metadata((("grpc-status-details-bin", details),))
                context.abort(exc.code, exc.message)

        return dispatch


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    server = FakeServer()
    yield server
    server.stop()


@pytest.fixture
def fake_factory() -> Iterator[Callable[..., FakeServer]]:
    """Start more scriptable servers, e.g. `fake_factory(host="0.0.0.0")`."""
    started: list[FakeServer] = []

    def factory(**kwargs: Any) -> FakeServer:
        started.append(FakeServer(**kwargs))
        return started[-1]

    yield factory
    for server in started:
        server.stop()


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port of 127.0.0.1 that is bound but not listening: connections to it are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@pytest.fixture
def fake_client(fake: FakeServer) -> Iterator[NebiusClient]:
    client = NebiusClient(
        "secret-token-123",
        target=fake.target,
        parent_id="project-e00test",
        timeout=5.0,
        retry=replace(FAST_RETRY, max_attempts=3),
        poll=FAST_POLL,
    )
    yield client
    client.close()


def operation(
    op_id: str = "computeoperation-e00op1",
    resource_id: str = "computeinstance-e00vm1",
    status: Status | None = None,
) -> common.Operation:
    return common.Operation(id=op_id, resource_id=resource_id, description="test", status=status)


def instance(
    instance_id: str = "computeinstance-e00vm1",
    name: str = "vm-1",
    state: compute.InstanceStatusInstanceState = compute.InstanceStatusInstanceState.RUNNING,
):
    return compute.Instance(
        metadata=common.ResourceMetadata(id=instance_id, name=name, parent_id="project-e00test"),
        status=compute.InstanceStatus(state=state),
    )


@pytest.fixture
def pb() -> Any:
    """Message constructors for tests (conftest helpers cannot be imported under --import-mode=importlib)."""

    class _PB:
        common_ = common
        compute_ = compute
        Any_ = AnyMessage
        iam_ = iam
        Status = Status
        Abort = Abort
        operation = staticmethod(operation)
        instance = staticmethod(instance)

    return _PB


# ---------------------------------------------------------------------------------------------- mock clouds
@pytest.fixture
def nebius_mock(start_mock: Callable[..., Any]) -> Any:
    """A fresh in-process mock serving Nebius only (default scenario, test time scale)."""
    return start_mock()


@pytest.fixture
def nebius_endpoint(nebius_mock: Any) -> dict[str, Any]:
    return nebius_mock.endpoints["nebius"]


def make_client(endpoint: dict[str, Any], *, max_attempts: int = 6, **overrides: Any) -> NebiusClient:
    """A client of the mock's endpoint with fast policies; `max_attempts` sets its RetryPolicy's; `credentials`
    replaces the endpoint's token."""
    credentials = overrides.pop("credentials", endpoint.get("token", ""))
    kwargs: dict[str, Any] = dict(
        target=endpoint["target"],
        parent_id=endpoint["project_id"],
        subnet_id=SUBNET,
        timeout=5.0,
        retry=replace(FAST_RETRY, max_attempts=max_attempts),
        poll=FAST_POLL,
    )
    kwargs.update(overrides)
    return NebiusClient(credentials, **kwargs)


@pytest.fixture
def client(nebius_endpoint: dict[str, Any]) -> Iterator[NebiusClient]:
    with make_client(nebius_endpoint) as c:
        yield c


@pytest.fixture
def client_factory() -> Iterator[Callable[..., NebiusClient]]:
    made: list[NebiusClient] = []

    def factory(endpoint: dict[str, Any], **overrides: Any) -> NebiusClient:
        c = make_client(endpoint, **overrides)
        made.append(c)
        return c

    yield factory
    for c in made:
        c.close()


@pytest.fixture
def start_mock(mock_clouds_factory: Callable[..., Any]) -> Callable[..., Any]:
    """Start a customised mock (e.g. `configure=`, `time_scale=`) serving only Nebius."""

    def start(**kwargs: Any) -> Any:
        kwargs.setdefault("providers", ("nebius",))
        return mock_clouds_factory(**kwargs)

    return start
