"""Helpers for talking to the Nebius mock over the wire with the generated sync stubs (tests, demos).

The generated stubs take only the request message, so authorization, extra metadata and the deadline are
added by a channel interceptor (`connect`).
"""

from __future__ import annotations

import base64
import collections
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import grpc

from ._pb.google.rpc import Status
from ._pb.nebius.billing import v1 as billing_v1
from ._pb.nebius.billing import v1alpha1 as billing_v1alpha1
from ._pb.nebius.common import v1 as common
from ._pb.nebius.compute import v1 as compute
from ._pb.nebius.iam import v1 as iam
from ._pb.nebius.vpc import v1 as vpc
from .errors import STATUS_DETAILS_KEY

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

    from ..core.world import World
    from ..runner import MockClouds

_Request = TypeVar("_Request")

DEFAULT_TIMEOUT = 10.0
TOKEN_AUDIENCE = "token-service.iam.new.nebiuscloud.net"  # what pysdk puts in `aud`
H100 = ("gpu-h100-sxm", "1gpu-16vcpu-200gb")
H100_BLOCK = "capacityblockgroup-e00h100block000001"


class _CallDetails(
    collections.namedtuple("_CallDetails", "method timeout metadata credentials wait_for_ready compression"),
    grpc.ClientCallDetails,
):
    pass


class _Metadata(grpc.UnaryUnaryClientInterceptor):
    """Adds fixed metadata and a default deadline to every unary call."""

    def __init__(self, metadata: Sequence[tuple[str, str]], timeout: float) -> None:
        self._metadata = list(metadata)
        self._timeout = timeout

    def intercept_unary_unary(
        self,
        continuation: Callable[[grpc.ClientCallDetails, _Request], Any],
        details: grpc.ClientCallDetails,
        request: _Request,
    ) -> Any:
        metadata = list(details.metadata or []) + self._metadata
        timeout = details.timeout if details.timeout is not None else self._timeout
        d = details
        return continuation(
            _CallDetails(d.method, timeout, metadata, d.credentials, d.wait_for_ready, d.compression), request
        )


class Client:
    """Stubs of the services over one channel, with fixed metadata."""

    def __init__(self, channel: grpc.Channel, metadata: Sequence[tuple[str, str]], timeout: float) -> None:
        self._base = channel
        self._metadata = list(metadata)
        self._timeout = timeout
        intercepted = grpc.intercept_channel(channel, _Metadata(self._metadata, timeout))
        self.channel = intercepted
        self.instances = compute.InstanceServiceStub(intercepted)
        self.operations = common.OperationServiceStub(intercepted)
        self.platforms = compute.PlatformServiceStub(intercepted)
        self.images = compute.ImageServiceStub(intercepted)
        self.tokens = iam.TokenExchangeServiceStub(intercepted)
        self.projects = iam.ProjectServiceStub(intercepted)
        self.subnets = vpc.SubnetServiceStub(intercepted)
        self.tenants = iam.TenantServiceStub(intercepted)
        self.disks = compute.DiskServiceStub(intercepted)
        self.gpu_clusters = compute.GpuClusterServiceStub(intercepted)
        self.security_groups = vpc.SecurityGroupServiceStub(intercepted)
        self.security_rules = vpc.SecurityRuleServiceStub(intercepted)
        self.calculator_v1alpha1 = billing_v1alpha1.CalculatorServiceStub(intercepted)
        self.calculator = billing_v1.CalculatorServiceStub(intercepted)
        self.pricing_policies = billing_v1.PricingPolicyServiceStub(intercepted)

    def with_metadata(self, *pairs: tuple[str, str]) -> Client:
        """The same channel with more metadata (e.g. `("x-idempotency-key", key)`)."""
        return Client(self._base, self._metadata + list(pairs), self._timeout)

    def wait(self, op: common.Operation, timeout: float = DEFAULT_TIMEOUT) -> common.Operation:
        """Poll OperationService.Get until the operation is done (status set)."""
        deadline = time.monotonic() + timeout
        while op.status is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"operation {op.id} not done after {timeout}s")
            time.sleep(0.01)
            op = self.operations.get(common.GetOperationRequest(id=op.id))
        return op


def connect(
    target: str, token: str | None, timeout: float = DEFAULT_TIMEOUT, root_certificates: bytes | None = None
) -> tuple[grpc.Channel, Client]:
    """A channel to `target` and a Client sending `authorization: Bearer <token>` (if given). The channel is
    plaintext unless `root_certificates` (PEM) are given: then TLS, trusting only them."""
    if root_certificates is None:
        channel = grpc.insecure_channel(target)
    else:
        channel = grpc.secure_channel(target, grpc.ssl_channel_credentials(root_certificates=root_certificates))
    metadata = [("authorization", f"Bearer {token}")] if token is not None else []
    return channel, Client(channel, metadata, timeout)


def rpc_status(error: grpc.RpcError) -> Status | None:
    """The google.rpc.Status a failed call carried in `grpc-status-details-bin`, if any."""
    # The error of a call is also its grpc.Call, whose trailing metadata are (key, value) pairs.
    for key, value in cast(grpc.Call, error).trailing_metadata() or ():
        if key == STATUS_DETAILS_KEY and isinstance(value, bytes):
            return Status.FromString(value)
    return None


def service_error(status: Status | None) -> common.ServiceError | None:
    """The first nebius.common.v1.ServiceError among the status details."""
    for detail in status.details if status is not None else []:
        unpacked = detail.unpack()
        if isinstance(unpacked, common.ServiceError):
            return unpacked
    return None


def instance_spec(platform: str = H100[0], preset: str = H100[1], **fields: Any) -> compute.InstanceSpec:
    """A minimal valid spec: one NIC on the default subnet and an existing boot disk."""
    return compute.InstanceSpec(
        resources=compute.ResourcesSpec(platform=platform, preset=preset),
        network_interfaces=[
            compute.NetworkInterfaceSpec(
                subnet_id="vpcsubnet-e00defaultsubnet01",
                name="eth0",
                ip_address=compute.IpAddress(),
                public_ip_address=compute.PublicIpAddress(),
            )
        ],
        boot_disk=compute.AttachedDiskSpec(
            attach_mode=compute.AttachedDiskSpecAttachMode.READ_WRITE,
            existing_disk=compute.ExistingDisk(id="computedisk-e00bootdisk0000001"),
        ),
        **fields,
    )


def create_request(
    parent_id: str, name: str, spec: compute.InstanceSpec | None = None, **labels: str
) -> compute.CreateInstanceRequest:
    return compute.CreateInstanceRequest(
        metadata=common.ResourceMetadata(parent_id=parent_id, name=name, labels=labels),
        spec=spec or instance_spec(),
    )


def subject_jwt(credentials: dict[str, Any], *, now: float | None = None, key: RSAPrivateKey | None = None,
                **changes: Any) -> str:
    """The JWT pysdk signs from a service account credentials file (`{"subject-credentials": {...}}`): RS256,
    `kid` = public key id, `iss = sub` = service account id, the token service's `aud`, `iat` = now, `exp` a
    minute later. `changes` replace header fields (`kid`, `alg`) or claims, or remove them (None); `key` signs
    instead of the file's private key. Written from the JWT and pysdk specs, not from the mock's verifier."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    subject = credentials["subject-credentials"]
    now = time.time() if now is None else now
    header: dict[str, Any] = {"alg": "RS256", "typ": "JWT", "kid": subject["kid"]}
    claims: dict[str, Any] = {"iss": subject["iss"], "sub": subject["sub"], "aud": TOKEN_AUDIENCE,
                              "exp": int(now) + 60, "iat": int(now)}
    for name, value in changes.items():
        target = header if name in ("kid", "alg") else claims
        if value is None:
            target.pop(name, None)
        else:
            target[name] = value
    signing_input = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
    signer = key or serialization.load_pem_private_key(subject["private-key"].encode(), password=None)
    if not isinstance(signer, rsa.RSAPrivateKey):
        raise TypeError("a service account's key is an RSA key")
    signature = signer.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input}.{_b64url(signature)}"


def exchange_request(subject_token: str, **fields: Any) -> iam.ExchangeTokenRequest:
    """The ExchangeTokenRequest pysdk sends for `subject_token`; `fields` override its fields."""
    return iam.ExchangeTokenRequest(**{
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "requested_token_type": "urn:ietf:params:oauth:token-type:access_token",
        "subject_token": subject_token,
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        **fields,
    })


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass
class Failure:
    """A failed call, with its rich status decoded."""

    code: grpc.StatusCode
    message: str
    status: Status | None
    error: common.ServiceError | None


def failure(method: Callable[[Any], Any], request: Any) -> Failure:
    """Call `method(request)`, which must fail, and decode the failure."""
    try:
        result = method(request)
    except grpc.RpcError as exc:
        status = rpc_status(exc)
        return Failure(exc.code(), exc.details() or "", status, service_error(status))
    raise AssertionError(f"call succeeded unexpectedly: {result!r}")


class FrozenClock:
    """Replaces `world.now` so a test decides when simulated operations come due."""

    def __init__(self, world: World) -> None:
        self.now = time.time()
        world.now = self  # type: ignore[method-assign]

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Harness:
    """A started MockClouds serving Nebius, with an authorized client for the default tenant."""

    def __init__(self, clouds: MockClouds) -> None:
        endpoint = clouds.endpoints["nebius"]
        self.clouds = clouds
        self.world = clouds.world
        self.target: str = endpoint["target"]
        ca_file = clouds.endpoints.get("ca_file")
        self.root_certificates = Path(ca_file).read_bytes() if ca_file else None  # a TLS server's CA
        self.project: str = endpoint["project_id"]
        projects = self.world.state.providers["nebius"].projects
        tenant = next(p.owner for p in projects if p.id == self.project)
        # region -> project of the default project's tenant (what a client learns from ProjectService)
        self.projects = {p.region: p.id for p in projects if p.owner == tenant}
        self._channels: list[grpc.Channel] = []
        self.client = self.connect(endpoint["token"])

    def connect(self, token: str | None) -> Client:
        channel, client = connect(self.target, token, root_certificates=self.root_certificates)
        self._channels.append(channel)
        return client

    def token_of(self, tenant: str) -> str:
        return next(c.secret for c in self.world.state.credentials["nebius"] if c.owner == tenant)

    def create(self, name: str, spec: compute.InstanceSpec | None = None, project: str = "") -> common.Operation:
        return self.client.instances.create(create_request(project or self.project, name, spec))

    def get(self, instance_id: str) -> compute.Instance:
        return self.client.instances.get(compute.GetInstanceRequest(id=instance_id))

    def close(self) -> None:
        for channel in self._channels:
            channel.close()
