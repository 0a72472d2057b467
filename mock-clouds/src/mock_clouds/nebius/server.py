"""The Nebius mock's gRPC server: one grpcio server for every service (`SERVICES`), betterproto2 messages.

Every call goes through `Dispatcher.serve`, which does what `mock_clouds.http` does for the REST mocks plus
the gRPC specifics: `x-request-id`/`x-trace-id` initial metadata, injected latency and errors, strict request
decoding (INVALID_ARGUMENT, never INTERNAL or UNKNOWN), bearer authentication and per-tenant rate limits (not
for the token exchange, which is how a client gets a token), rich error status in `grpc-status-details-bin`,
and dropped responses (the action happened, the client sees UNAVAILABLE). A bug in a handler answers INTERNAL
with an InternalError detail; no call ends in UNKNOWN.

Messages larger than 4 MiB are refused by grpcio itself with RESOURCE_EXHAUSTED (gRPC's own limit; the real
endpoint's limit is not documented).

With `tls` the server listens with TLS (`grpc.ssl_server_credentials`, the certificate of `mock_clouds.tls`);
otherwise in plaintext.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, SupportsBytes

import betterproto2
import grpc

from ..core import ids
from ..core.models import Provider
from ..core.world import World
from . import (
    auth,
    billing,
    disks,
    errors,
    gpu_clusters,
    iam_projects,
    iam_tenants,
    images,
    instances,
    operations,
    platforms,
    render,
    tokens,
    vpc,
    vpc_security,
    wire,
)
from ._pb.nebius.billing import v1 as billing_v1
from ._pb.nebius.billing import v1alpha1 as billing_v1alpha1
from ._pb.nebius.common import v1 as common
from ._pb.nebius.compute import v1 as compute
from ._pb.nebius.iam import v1 as iam
from ._pb.nebius.vpc import v1 as vpc_v1
from .call import Call

if TYPE_CHECKING:
    from ..tls import ServerTls

log = logging.getLogger("mock_clouds.nebius")

NEBIUS = Provider.NEBIUS
MAX_MESSAGE_BYTES = 4 << 20
WORKERS = 64


@dataclass(frozen=True)
class Rpc:
    request: type[betterproto2.Message]
    handler: Callable[[Call, Any], SupportsBytes]  # a message, or a response already encoded (wire.Encoded)
    creates: bool = False  # also draws from the scenario's `create` rate-limit bucket
    public: bool = False  # needs no bearer token (and so has no tenant to rate-limit): the token exchange


SERVICES: dict[str, dict[str, Rpc]] = {
    "nebius.compute.v1.InstanceService": {
        "Get": Rpc(compute.GetInstanceRequest, instances.get),
        "GetByName": Rpc(common.GetByNameRequest, instances.get_by_name),
        "BatchGet": Rpc(compute.BatchGetRequest, instances.batch_get),
        "List": Rpc(compute.ListInstancesRequest, instances.list_instances),
        "ListInstancesByNVLInstanceGroup": Rpc(
            compute.ListInstancesByNvlInstanceGroupRequest, instances.list_by_nvl_instance_group
        ),
        "Create": Rpc(compute.CreateInstanceRequest, instances.create, creates=True),
        "Update": Rpc(compute.UpdateInstanceRequest, instances.update),
        "Delete": Rpc(compute.DeleteInstanceRequest, instances.delete),
        "Start": Rpc(compute.StartInstanceRequest, instances.start),
        "Stop": Rpc(compute.StopInstanceRequest, instances.stop),
        "ListOperationsByParent": Rpc(
            compute.ListOperationsByParentRequest, instances.list_operations_by_parent
        ),
    },
    "nebius.common.v1.OperationService": {
        "Get": Rpc(common.GetOperationRequest, operations.get),
        "List": Rpc(common.ListOperationsRequest, operations.list_operations),
    },
    "nebius.compute.v1.PlatformService": {
        "GetByName": Rpc(common.GetByNameRequest, platforms.get_by_name),
        "List": Rpc(compute.ListPlatformsRequest, platforms.list_platforms),
    },
    "nebius.compute.v1.ImageService": {
        "Get": Rpc(compute.GetImageRequest, images.get),
        "GetByName": Rpc(common.GetByNameRequest, images.get_by_name),
        "GetLatestByFamily": Rpc(compute.GetImageLatestByFamilyRequest, images.get_latest_by_family),
        "List": Rpc(compute.ListImagesRequest, images.list_images),
        "ListPublic": Rpc(compute.ListPublicRequest, images.list_public),
    },
    "nebius.iam.v1.TokenExchangeService": {
        "Exchange": Rpc(iam.ExchangeTokenRequest, tokens.exchange, public=True),
    },
    "nebius.iam.v1.ProjectService": {
        "Get": Rpc(iam.GetProjectRequest, iam_projects.get),
        "GetByName": Rpc(iam.GetProjectByNameRequest, iam_projects.get_by_name),
        "List": Rpc(iam.ListProjectsRequest, iam_projects.list_projects),
    },
    "nebius.vpc.v1.SubnetService": {
        "Get": Rpc(vpc_v1.GetSubnetRequest, vpc.get),
        "GetByName": Rpc(vpc_v1.GetSubnetByNameRequest, vpc.get_by_name),
        "List": Rpc(vpc_v1.ListSubnetsRequest, vpc.list_subnets),
    },
    "nebius.iam.v1.TenantService": {
        "Get": Rpc(iam.GetTenantRequest, iam_tenants.get),
        "List": Rpc(iam.ListTenantsRequest, iam_tenants.list_tenants),
    },
    "nebius.compute.v1.DiskService": {
        "Get": Rpc(compute.GetDiskRequest, disks.get),
        "GetByName": Rpc(common.GetByNameRequest, disks.get_by_name),
        "List": Rpc(compute.ListDisksRequest, disks.list_disks),
        "Create": Rpc(compute.CreateDiskRequest, disks.create),
        "Delete": Rpc(compute.DeleteDiskRequest, disks.delete),
        "ListOperationsByParent": Rpc(compute.ListOperationsByParentRequest, disks.list_operations_by_parent),
    },
    "nebius.compute.v1.GpuClusterService": {
        "Get": Rpc(compute.GetGpuClusterRequest, gpu_clusters.get),
        "GetByName": Rpc(common.GetByNameRequest, gpu_clusters.get_by_name),
        "List": Rpc(compute.ListGpuClustersRequest, gpu_clusters.list_clusters),
        "Create": Rpc(compute.CreateGpuClusterRequest, gpu_clusters.create),
        "Delete": Rpc(compute.DeleteGpuClusterRequest, gpu_clusters.delete),
        "ListOperationsByParent": Rpc(
            compute.ListOperationsByParentRequest, gpu_clusters.list_operations_by_parent
        ),
    },
    "nebius.vpc.v1.SecurityGroupService": {
        "Get": Rpc(vpc_v1.GetSecurityGroupRequest, vpc_security.get_group),
        "GetByName": Rpc(vpc_v1.GetSecurityGroupByNameRequest, vpc_security.get_group_by_name),
        "List": Rpc(vpc_v1.ListSecurityGroupsRequest, vpc_security.list_groups),
        "ListByNetwork": Rpc(vpc_v1.ListSecurityGroupsByNetworkRequest, vpc_security.list_groups_by_network),
        "Create": Rpc(vpc_v1.CreateSecurityGroupRequest, vpc_security.create_group),
        "Delete": Rpc(vpc_v1.DeleteSecurityGroupRequest, vpc_security.delete_group),
    },
    "nebius.vpc.v1.SecurityRuleService": {
        "Get": Rpc(vpc_v1.GetSecurityRuleRequest, vpc_security.get_rule),
        "GetByName": Rpc(vpc_v1.GetSecurityRuleByNameRequest, vpc_security.get_rule_by_name),
        "List": Rpc(vpc_v1.ListSecurityRulesRequest, vpc_security.list_rules),
        "Create": Rpc(vpc_v1.CreateSecurityRuleRequest, vpc_security.create_rule),
        "Delete": Rpc(vpc_v1.DeleteSecurityRuleRequest, vpc_security.delete_rule),
    },
    "nebius.billing.v1alpha1.CalculatorService": {
        "Estimate": Rpc(billing_v1alpha1.EstimateRequest, billing.estimate),
        "EstimateBatch": Rpc(billing_v1alpha1.EstimateBatchRequest, billing.estimate_batch_v1alpha1),
    },
    "nebius.billing.v1.CalculatorService": {
        "EstimateBatch": Rpc(billing_v1.EstimateBatchRequest, billing.estimate_batch),
    },
    "nebius.billing.v1.PricingPolicyService": {
        "Create": Rpc(billing_v1.CreatePricingPolicyRequest, billing.create_policy),
        "Get": Rpc(billing_v1.GetPricingPolicyRequest, billing.get_policy),
        "List": Rpc(billing_v1.ListPricingPoliciesRequest, billing.list_policies),
        "Delete": Rpc(billing_v1.DeletePricingPolicyRequest, billing.delete_policy),
    },
}


class Dispatcher:
    """Runs one RPC with the mock's cross-cutting behaviour around the handler."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.faults = world.faults[NEBIUS]

    def method_handler(self, rpc: Rpc) -> grpc.RpcMethodHandler[bytes, bytes]:
        # No (de)serializers: requests arrive as bytes so that decoding errors stay ours to report.
        return grpc.unary_unary_rpc_method_handler(functools.partial(self.serve, rpc))

    def serve(self, rpc: Rpc, raw: bytes, context: grpc.ServicerContext) -> bytes:
        request_id = str(ids.random_uuid())
        context.send_initial_metadata((("x-request-id", request_id), ("x-trace-id", ids.random_uuid().hex)))
        outcome = self._outcome(rpc, raw, context, request_id)
        if isinstance(outcome, errors.ApiError):
            outcome.abort(context)
        if self.faults.roll_drop():
            errors.unavailable("connection reset by peer").abort(context)
        return outcome

    def _outcome(
        self, rpc: Rpc, raw: bytes, context: grpc.ServicerContext, request_id: str
    ) -> bytes | errors.ApiError:
        try:
            self._inject()
            request = wire.decode(rpc.request, raw)
            metadata = _text_metadata(context)
            call = Call(
                world=self.world,
                owner="" if rpc.public else auth.authenticate(self.world, metadata),
                request_id=request_id,
                metadata=metadata,
                raw=raw,
            )
            if not rpc.public:
                self._rate_limit(call.owner, rpc)
            return bytes(rpc.handler(call, request))
        except errors.ApiError as exc:
            return exc
        except Exception:  # a front-end bug must not surface as UNKNOWN
            log.exception("unhandled error in Nebius mock (request %s)", request_id)
            return errors.internal(request_id)

    def _inject(self) -> None:
        delay = self.faults.latency_seconds()
        if delay:
            time.sleep(delay)
        if self.faults.roll_error():
            raise self.faults.pick(_INJECTED)()

    def _rate_limit(self, owner: str, rpc: Rpc) -> None:
        limits = self.world.config(NEBIUS).rate_limit
        buckets = [("request", limits.request_interval, limits.request_burst)]
        if rpc.creates:
            buckets.append(("create", limits.create_interval, limits.create_burst))
        for bucket, interval, burst in buckets:
            wait = self.world.rate_limiter.acquire(
                (NEBIUS.value, owner, bucket), interval=self.world.scaled(interval), burst=burst
            )
            if wait > 0:
                raise errors.too_many_requests(f"{bucket} rate limit exceeded, retry in {wait:.3f}s")


_INJECTED: list[Callable[[], errors.ApiError]] = [
    lambda: errors.unavailable("service temporarily unavailable"),
    lambda: errors.too_many_requests("request rate limit exceeded"),
]


def _text_metadata(context: grpc.ServicerContext) -> dict[str, str]:
    return {key.lower(): value for key, value in context.invocation_metadata() if isinstance(value, str)}


class NebiusServer:
    """A running mock; `port` is the bound port (useful when 0 was asked for)."""

    def __init__(self, world: World, host: str, port: int, tls: ServerTls | None = None) -> None:
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="nebius"),
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.so_reuseport", 0),  # fail loudly if the port is taken
            ],
        )
        dispatcher = Dispatcher(world)
        self._server.add_generic_rpc_handlers(
            tuple(
                grpc.method_handlers_generic_handler(
                    service, {m: dispatcher.method_handler(r) for m, r in rpcs.items()}
                )
                for service, rpcs in SERVICES.items()
            )
        )
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        if tls is None:
            self.port = self._server.add_insecure_port(address)
        else:
            credentials = grpc.ssl_server_credentials([(tls.key_pem(), tls.cert_pem())])
            self.port = self._server.add_secure_port(address, credentials)
        if not self.port:
            raise OSError(f"cannot bind the Nebius mock to {address}")
        render.warm(world)
        self._server.start()

    def stop(self) -> None:
        self._server.stop(grace=0.2).wait()


def serve(world: World, host: str, port: int, tls: ServerTls | None = None) -> NebiusServer:
    """Start the Nebius mock on host:port (0 = any free port), with TLS when `tls` is given."""
    return NebiusServer(world, host, port, tls)
