"""`NebiusClient`: a typed client of the Nebius AI Cloud compute API (InstanceService, OperationService,
PlatformService, DiskService, GpuClusterService) over gRPC, with the reads that find where to create: IAM's
TenantService and ProjectService (a tenant's projects and their regions) and VPC's SubnetService (a project's
subnets); VPC's security groups and rules; and billing: the price calculators (list and spot prices of instances)
and spot pricing policies. Each service is called at its own address (`endpoints`); every list is a lazy pager,
every create and delete returns an `Operation` (deletes of what is already gone are finished operations).

Every call has a deadline, carries `authorization: Bearer <token>` from the client's `TokenSource`
(`nebius_sdk.auth`: a token, a token file, a token command or a service account), and is retried on UNAVAILABLE,
DEADLINE_EXCEEDED and rate limits with exponential backoff. Mutating calls (create, start, stop, delete) carry
an `x-idempotency-key` that all retries of that call share, so the server runs them at most once; a create is
never re-sent with a new key. After an error that leaves a create's outcome unknown, look the instance up with
`find_instance(name)`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

import betterproto2
import grpc

from . import specs
from ._backoff import PollPolicy, RetryPolicy
from ._operation import Operation
from ._pager import Pager
from ._pb.google.protobuf import Any as AnyMessage
from ._pb.google.rpc import Status
from ._pb.nebius.billing.v1 import (
    CalculatorServiceStub,
    ComputeInstanceSpec,
    ComputeInstanceSpecV1,
    CreatePricingPolicyRequest,
    DeletePricingPolicyRequest,
    EstimateBatchRequest,
    GetPricingPolicyRequest,
    ListPricingPoliciesRequest,
    MaxPriceV1,
    PricingMethod,
    PricingPolicy,
    PricingPolicyServiceStub,
    PricingPolicySpec,
)
from ._pb.nebius.billing.v1 import ResourceSpec as ResourceSpecV1
from ._pb.nebius.billing.v1alpha1 import CalculatorServiceStub as CalculatorServiceV1Alpha1Stub
from ._pb.nebius.billing.v1alpha1 import EstimateRequest
from ._pb.nebius.billing.v1alpha1 import ResourceSpec as ResourceSpecV1Alpha1
from ._pb.nebius.common.v1 import (
    GetByNameRequest,
    GetOperationRequest,
    ListOperationsRequest,
    OperationServiceStub,
    ResourceMetadata,
)
from ._pb.nebius.common.v1 import Operation as RawOperation
from ._pb.nebius.compute.v1 import (
    BatchGetRequest,
    CreateDiskRequest,
    CreateGpuClusterRequest,
    CreateInstanceRequest,
    DeleteDiskRequest,
    DeleteGpuClusterRequest,
    DeleteInstanceRequest,
    Disk,
    DiskServiceStub,
    DiskSpec,
    DiskSpecDiskType,
    GetDiskRequest,
    GetGpuClusterRequest,
    GetImageLatestByFamilyRequest,
    GetImageRequest,
    GetInstanceRequest,
    GpuCluster,
    GpuClusterServiceStub,
    GpuClusterSpec,
    Image,
    ImageServiceStub,
    Instance,
    InstanceServiceStub,
    InstanceSpec,
    InstanceStatusInstanceState,
    ListDisksRequest,
    ListGpuClustersRequest,
    ListImagesRequest,
    ListInstancesRequest,
    ListOperationsByParentRequest,
    ListPlatformsRequest,
    Platform,
    PlatformServiceStub,
    PreemptibleSpec,
    PreemptibleSpecPreemptionPolicy,
    ReservationPolicy,
    ReservationPolicyPolicy,
    ResourcesSpec,
    SourceImageFamily,
    StartInstanceRequest,
    StopInstanceRequest,
)
from ._pb.nebius.iam.v1 import (
    GetProjectRequest,
    ListProjectsRequest,
    ListTenantsRequest,
    ProjectServiceStub,
    TenantServiceStub,
)
from ._pb.nebius.vpc.v1 import (
    CreateSecurityGroupRequest,
    CreateSecurityRuleRequest,
    DeleteSecurityGroupRequest,
    DeleteSecurityRuleRequest,
    GetSecurityGroupRequest,
    GetSecurityRuleRequest,
    ListSecurityGroupsRequest,
    ListSecurityRulesRequest,
    ListSubnetsRequest,
    SecurityGroup,
    SecurityGroupServiceStub,
    SecurityGroupSpec,
    SecurityRule,
    SecurityRuleServiceStub,
    SecurityRuleSpec,
    SubnetServiceStub,
)
from ._status import status_error
from ._transport import Transport
from .auth import StaticToken, TokenSource
from .endpoints import (
    CALCULATOR,
    COMPUTE,
    DEFAULT_DOMAIN,
    IAM,
    PRICING_POLICIES,
    VPC,
    serves_everything,
    service_address,
    split_host_port,
)
from .errors import APIError, Code, NotFound
from .models import Project, Subnet, Tenant

DEFAULT_TIMEOUT = 20.0  # seconds per call attempt, as in pysdk/gosdk
DEFAULT_PAGE_SIZE = 100
MAX_BATCH_GET = 1000  # BatchGetRequest.instance_ids holds at most 1000 ids
DEFAULT_RETRY = RetryPolicy()
DEFAULT_POLL = PollPolicy()


@dataclass(eq=False, repr=False)
class _EncodedInstancesPage(betterproto2.Message):
    """`ListInstancesResponse` with each instance still encoded. The wire format is the same (an embedded
    message is length-delimited bytes), so the pager learns `next_page_token` and asks for the next page before
    it decodes this one's instances (which costs as long as the server takes to send a page)."""

    items: list[bytes] = betterproto2.field(1, betterproto2.TYPE_BYTES, repeated=True)
    next_page_token: str = betterproto2.field(2, betterproto2.TYPE_STRING)


@dataclass(eq=False, repr=False)
class InstanceStatusSummary(betterproto2.Message):
    """The two fields of an `InstanceStatus` that say where an instance is in its life: `state`, and
    `reconciling` (an operation is still changing it). Same field numbers as `InstanceStatus`, whose other fields
    (network interfaces, disk attachments, ...) are skipped unread: what `batch_get_instance_statuses` returns."""

    state: InstanceStatusInstanceState = betterproto2.field(
        1, betterproto2.TYPE_ENUM, default_factory=lambda: InstanceStatusInstanceState(0)
    )
    reconciling: bool = betterproto2.field(5, betterproto2.TYPE_BOOL)


@dataclass(eq=False, repr=False)
class _InstanceStatusOnly(betterproto2.Message):
    """`Instance` with only its status summary decoded: the other fields are skipped as unknown (same wire
    format)."""

    status: InstanceStatusSummary | None = betterproto2.field(3, betterproto2.TYPE_MESSAGE, optional=True)


@dataclass(eq=False, repr=False)
class _StatusResult(betterproto2.Message):
    """`BatchGetResponse.BatchGetResult` with the instance decoded as `_InstanceStatusOnly`."""

    instance: _InstanceStatusOnly | None = betterproto2.field(
        1, betterproto2.TYPE_MESSAGE, optional=True, group="result"
    )
    error: Status | None = betterproto2.field(2, betterproto2.TYPE_MESSAGE, optional=True, group="result")


@dataclass(eq=False, repr=False)
class _StatusesResponse(betterproto2.Message):
    """`BatchGetResponse` read through `_StatusResult`."""

    items: dict[str, _StatusResult] = betterproto2.field(
        1, betterproto2.TYPE_MAP, map_meta=betterproto2.map_meta(betterproto2.TYPE_STRING, betterproto2.TYPE_MESSAGE)
    )


class NebiusClient:
    """Client of one Nebius compute endpoint. Thread-safe; close it (or use `with`) to release the channel.

    `credentials` is a `TokenSource` (`nebius_sdk.auth`: `StaticToken`, `TokenFile`, `TokenCommand`,
    `ServiceAccount`), or a token string, or None for $NEBIUS_IAM_TOKEN (ValueError when it is unset); the client
    asks it for the token of every call and never closes it. The compute service is `compute.<domain>` (`domain`
    default `api.nebius.cloud:443`; a loopback address or `localhost` serves everything itself), or `target`
    ("host:port") when given; IAM's projects are at `cpl.iam.<domain>` and VPC's subnets at `vpc.<domain>`, or at
    `target` too when it is an IP address or `localhost` (one local server for every service). Each of those
    channels is opened on its first call, with the same credentials, TLS roots, keepalive and proxy as compute's. A
    loopback IP target is plaintext, any host name TLS; `insecure` True or False overrides that. `channel` replaces
    all of this with a channel you own, used for every service (the client then never closes it). `parent_id` is
    the default project for lists, lookups by name and creates; `subnet_id` the default subnet of created
    instances (`list_subnets` finds a project's). `timeout` is the deadline of each
    call attempt; `retry` bounds and spaces the retries of one call; `poll` spaces operation polls and sets the
    default deadline of a wait. Raises ValueError for a CA variable (GRPC_DEFAULT_SSL_ROOTS_FILE_PATH,
    SSL_CERT_FILE) that names no readable file. No network call is made until the first request.
    """

    def __init__(
        self,
        credentials: TokenSource | str | None = None,
        *,
        domain: str = DEFAULT_DOMAIN,
        target: str | None = None,
        channel: grpc.Channel | None = None,
        insecure: bool | None = None,
        parent_id: str = "",
        subnet_id: str = "",
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy = DEFAULT_RETRY,
        poll: PollPolicy = DEFAULT_POLL,
    ) -> None:
        self.credentials = _token_source(credentials)
        self.parent_id = parent_id
        self.subnet_id = subnet_id
        self.poll = poll
        self._domain = domain
        self._insecure = insecure
        self._borrowed = channel is not None
        self._transport = Transport(
            credentials=self.credentials,
            target=target or service_address(COMPUTE, domain),
            channel=channel,
            timeout=timeout,
            retry=retry,
            insecure=insecure,
        )
        self._instances = InstanceServiceStub(self._transport.channel)
        # InstanceService.List with the instances left encoded (see _EncodedInstancesPage)
        self._list_encoded = self._transport.channel.unary_unary(
            "/nebius.compute.v1.InstanceService/List",
            ListInstancesRequest.SerializeToString,
            _EncodedInstancesPage.FromString,
        )
        # InstanceService.BatchGet with only each instance's status decoded (see batch_get_instance_statuses)
        self._batch_get_statuses = self._transport.channel.unary_unary(
            "/nebius.compute.v1.InstanceService/BatchGet",
            BatchGetRequest.SerializeToString,
            _StatusesResponse.FromString,
        )
        self._operations = OperationServiceStub(self._transport.channel)
        self._platforms = PlatformServiceStub(self._transport.channel)
        self._images = ImageServiceStub(self._transport.channel)
        self._disks = DiskServiceStub(self._transport.channel)
        self._gpu_clusters = GpuClusterServiceStub(self._transport.channel)
        # service address -> its transport, opened on first use (`_transport_of`); compute's is there from the start
        self._transports = {self._transport.target: self._transport}
        self._transports_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"NebiusClient(target={self._transport.target!r}, parent_id={self.parent_id!r})"

    @property
    def target(self) -> str:
        """The compute service's `host:port` this client calls."""
        return self._transport.target

    def __enter__(self) -> NebiusClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the channels (those the client opened). Operations keep running in the cloud."""
        with self._transports_lock:
            transports = list(self._transports.values())
        for transport in transports:
            transport.close()

    # ------------------------------------------------------------------ instances: reads
    def get_instance(self, instance_id: str, *, timeout: float | None = None) -> Instance:
        """The instance with this id. Raises `NotFound` if it does not exist (or was deleted)."""
        return self._transport.call(self._instances.get, GetInstanceRequest(id=instance_id), timeout=timeout)

    def find_instance(
        self, name: str, *, parent_id: str = "", timeout: float | None = None
    ) -> Instance | None:
        """The instance named `name` in the project (names are unique per project), or None."""
        request = GetByNameRequest(parent_id=self._parent(parent_id), name=name)
        try:
            return self._transport.call(self._instances.get_by_name, request, timeout=timeout)
        except NotFound:
            return None

    def batch_get_instances(
        self, instance_ids: Sequence[str], *, timeout: float | None = None
    ) -> dict[str, Instance | APIError]:
        """Many instances in one call per 1000 ids (`InstanceService.BatchGet`): each distinct id maps to its
        instance, or to the typed error a `get_instance` of it would raise (`NotFound` for a deleted one,
        `PermissionDenied`, ...). No ids, no call."""
        ids = list(dict.fromkeys(instance_ids))
        found: dict[str, Instance | APIError] = {}
        for start in range(0, len(ids), MAX_BATCH_GET):
            request = BatchGetRequest(instance_ids=ids[start : start + MAX_BATCH_GET])
            response = self._transport.call(self._instances.batch_get, request, timeout=timeout)
            for instance_id, result in response.items.items():
                if result.instance is not None:
                    found[instance_id] = result.instance
                elif result.error is not None:
                    found[instance_id] = status_error(result.error, method="BatchGet", target=instance_id)
        return found

    def batch_get_instance_statuses(
        self, instance_ids: Sequence[str], *, timeout: float | None = None
    ) -> dict[str, InstanceStatusSummary | APIError]:
        """`batch_get_instances` reading only each instance's status summary, `state` and `reconciling` (the same
        call; the rest of each instance is skipped, not decoded: about a sixth of the cost), for following many
        instances at once. An instance without a status maps to an empty summary (state UNSPECIFIED). No ids, no
        call."""
        ids = list(dict.fromkeys(instance_ids))
        found: dict[str, InstanceStatusSummary | APIError] = {}
        for start in range(0, len(ids), MAX_BATCH_GET):
            request = BatchGetRequest(instance_ids=ids[start : start + MAX_BATCH_GET])
            response = self._transport.call(self._batch_get_statuses, request, timeout=timeout)
            for instance_id, result in response.items.items():
                if result.instance is not None:
                    found[instance_id] = result.instance.status or InstanceStatusSummary()
                elif result.error is not None:
                    found[instance_id] = status_error(result.error, method="BatchGet", target=instance_id)
        return found

    def list_instances(self, parent_id: str = "", *, page_size: int = DEFAULT_PAGE_SIZE) -> Pager[Instance]:
        """A lazy pager over the project's instances (nothing is fetched until you iterate)."""
        parent = self._parent(parent_id)

        def fetch(token: str) -> tuple[list[bytes], str]:
            request = ListInstancesRequest(parent_id=parent, page_size=page_size, page_token=token)
            response = self._transport.call(self._list_encoded, request)
            return response.items, response.next_page_token

        return Pager(fetch, decode=lambda encoded: [Instance.FromString(item) for item in encoded])

    # ------------------------------------------------------------------ instances: operations
    def begin_create_instance(
        self,
        name: str,
        platform: str,
        preset: str,
        *,
        parent_id: str = "",
        labels: Mapping[str, str] | None = None,
        subnet_id: str = "",
        boot_disk_gib: int = specs.DEFAULT_BOOT_DISK_GIB,
        image_family: str = specs.DEFAULT_IMAGE_FAMILY,
        image_id: str = "",
        public_ip: bool = True,
        reservation: ReservationPolicy | ReservationPolicyPolicy | None = None,
        reservation_ids: Sequence[str] = (),
        stopped: bool = False,
        preemptible: bool = False,
        spot_pricing_policy_id: str = "",
        cloud_init_user_data: str = "",
        gpu_cluster_id: str = "",
        timeout: float | None = None,
    ) -> Operation[Instance]:
        """Start creating an instance with a managed boot disk and one network interface; return at once.

        `subnet_id` defaults to the client's; without one the server answers `InvalidArgument`.
        The returned operation's `resource_id` is the new instance id. A capacity shortage usually surfaces
        later, from `wait()`/`result()` as `CapacityError` (the instance is then left STOPPED: delete it).
        See `build_instance_spec` for the options; use `begin_create_instance_from_spec` for full control.
        """
        spec = specs.build_instance_spec(
            platform,
            preset,
            subnet_id=subnet_id or self.subnet_id,
            boot_disk=specs.managed_boot_disk(
                name=f"{name}-boot", image_family=image_family, size_gib=boot_disk_gib, image_id=image_id
            ),
            public_ip=public_ip,
            reservation=reservation,
            reservation_ids=reservation_ids,
            stopped=stopped,
            preemptible=preemptible,
            spot_pricing_policy_id=spot_pricing_policy_id,
            cloud_init_user_data=cloud_init_user_data,
            gpu_cluster_id=gpu_cluster_id,
        )
        return self.begin_create_instance_from_spec(
            name, spec, parent_id=parent_id, labels=labels, timeout=timeout
        )

    def begin_create_instance_from_spec(
        self,
        name: str,
        spec: InstanceSpec,
        *,
        parent_id: str = "",
        labels: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Operation[Instance]:
        """Start creating an instance from a complete `InstanceSpec`; return the operation at once.

        Raises `AlreadyExists` if the name is taken in the project, `InvalidArgument` for a bad spec,
        `QuotaError`/`CapacityError` if the server refuses at once.
        """
        metadata = ResourceMetadata(parent_id=self._parent(parent_id), name=name, labels=dict(labels or {}))
        request = CreateInstanceRequest(metadata=metadata, spec=spec)
        raw = self._transport.call(self._instances.create, request, mutating=True, timeout=timeout)
        return self._operation(raw, self._get_instance_result)

    def begin_start_instance(self, instance_id: str, *, timeout: float | None = None) -> Operation[Instance]:
        """Start a STOPPED instance. Raises `NotFound`, or `Conflict` if its state or an operation forbids."""
        request = StartInstanceRequest(id=instance_id)
        raw = self._transport.call(self._instances.start, request, mutating=True, timeout=timeout)
        return self._operation(raw, self._get_instance_result)

    def begin_stop_instance(self, instance_id: str, *, timeout: float | None = None) -> Operation[Instance]:
        """Stop a RUNNING instance. Raises `NotFound`, or `Conflict` if its state or an operation forbids."""
        request = StopInstanceRequest(id=instance_id)
        raw = self._transport.call(self._instances.stop, request, mutating=True, timeout=timeout)
        return self._operation(raw, self._get_instance_result)

    def begin_delete_instance(
        self, instance_id: str, *, missing_ok: bool = True, timeout: float | None = None
    ) -> Operation[None]:
        """Start deleting an instance (and its managed disks); return the operation at once.

        When the instance does not exist and `missing_ok` (the default), returns `Operation.finished(None)`:
        already done, `id == ""`, nothing to wait for. With `missing_ok=False` that case raises `NotFound`.
        """
        request = DeleteInstanceRequest(id=instance_id)
        try:
            raw = self._transport.call(self._instances.delete, request, mutating=True, timeout=timeout)
        except NotFound:
            if missing_ok:
                return Operation.finished(None, resource_id=instance_id, target=self._transport.target)
            raise
        return self._operation(raw, _no_result)

    def delete_instance(
        self, instance_id: str, *, missing_ok: bool = True, wait_timeout: float | None = None
    ) -> None:
        """Delete an instance and block until it is gone. Succeeds if it is already gone (unless `missing_ok`
        is False). Raises the operation's typed error or `OperationTimeout` after `wait_timeout` seconds."""
        self.begin_delete_instance(instance_id, missing_ok=missing_ok).wait(wait_timeout)

    # ------------------------------------------------------------------ operations
    def resume_operation(self, token: str, *, timeout: float | None = None) -> Operation[Instance | None]:
        """Resume an operation (e.g. in another process) from its `continuation_token()`, its id.

        One `OperationService.Get` now. Its `result()` is the instance, or None for a delete or an instance that
        no longer exists. Raises `NotFound` for an unknown id, ValueError for an empty token (a finished
        operation has nothing to resume).
        """
        if not token:
            raise ValueError("an empty continuation token: the operation needed no work, there is nothing to resume")
        return self._operation(self._get_raw_operation(token, timeout, None), self._find_instance_by_id)

    def list_operations_by_parent(
        self, parent_id: str = "", *, page_size: int = DEFAULT_PAGE_SIZE
    ) -> Pager[Operation[Instance | None]]:
        """A lazy pager over the compute operations of a project (InstanceService.ListOperationsByParent), newest
        first as the service lists them."""
        parent = self._parent(parent_id)

        def fetch(token: str) -> tuple[list[Operation[Instance | None]], str]:
            request = ListOperationsByParentRequest(parent_id=parent, page_size=page_size, page_token=token)
            response = self._transport.call(self._instances.list_operations_by_parent, request)
            return self._operations_of(response.operations), response.next_page_token

        return Pager(fetch)

    def list_operations(
        self, resource_id: str, *, page_size: int = DEFAULT_PAGE_SIZE
    ) -> Pager[Operation[Instance | None]]:
        """A lazy pager over the operations of one resource (OperationService.List)."""

        def fetch(token: str) -> tuple[list[Operation[Instance | None]], str]:
            request = ListOperationsRequest(resource_id=resource_id, page_size=page_size, page_token=token)
            response = self._transport.call(self._operations.list, request)
            return self._operations_of(response.operations), response.next_page_token

        return Pager(fetch)

    # ------------------------------------------------------------------ platforms
    def list_platforms(self, parent_id: str = "", *, page_size: int = DEFAULT_PAGE_SIZE) -> Pager[Platform]:
        """A lazy pager over the platforms (and their presets) available to a project."""
        parent = self._parent(parent_id)

        def fetch(token: str) -> tuple[list[Platform], str]:
            request = ListPlatformsRequest(parent_id=parent, page_size=page_size, page_token=token)
            response = self._transport.call(self._platforms.list, request)
            return list(response.items), response.next_page_token

        return Pager(fetch)

    def get_platform(self, name: str, *, parent_id: str = "", timeout: float | None = None) -> Platform:
        """The platform named `name` (e.g. "gpu-h100-sxm"). Raises `NotFound` if there is none."""
        request = GetByNameRequest(parent_id=self._parent(parent_id), name=name)
        return self._transport.call(self._platforms.get_by_name, request, timeout=timeout)

    # ------------------------------------------------------------------ images
    def list_images(self, parent_id: str, *, page_size: int = DEFAULT_PAGE_SIZE) -> Pager[Image]:
        """A lazy pager over the images under `parent_id`: a project's own, or a region's public images under
        `public_images_parent(project_id)` (`ImageService.List`, at compute's address)."""

        def fetch(token: str) -> tuple[list[Image], str]:
            request = ListImagesRequest(parent_id=parent_id, page_size=page_size, page_token=token)
            response = self._transport.call(self._images.list, request)
            return list(response.items), response.next_page_token

        return Pager(fetch)

    def get_image(self, image_id: str, *, timeout: float | None = None) -> Image:
        """The image with this id (`computeimage-...`). Raises `NotFound` if there is none."""
        return self._transport.call(self._images.get, GetImageRequest(id=image_id), timeout=timeout)

    def get_latest_image(self, image_family: str, *, parent_id: str = "", timeout: float | None = None) -> Image:
        """The newest image of a family (`ImageService.GetLatestByFamily`), by default among the public images of
        the client's project's region. Raises `NotFound` for a family there is no image of."""
        parent = parent_id or (public_images_parent(self.parent_id) if self.parent_id else "")
        request = GetImageLatestByFamilyRequest(image_family=image_family, parent_id=parent)
        return self._transport.call(self._images.get_latest_by_family, request, timeout=timeout)

    # ------------------------------------------------------------------ projects and subnets
    def get_project(self, project_id: str, *, timeout: float | None = None) -> Project:
        """The project with this id (IAM `ProjectService.Get`, at `cpl.iam.<domain>`): its name, tenant and region.
        Raises `PermissionDenied` when the credentials may not read it (Nebius answers an unknown id alike)."""
        transport = self._transport_of(IAM)
        request = GetProjectRequest(id=project_id)
        return Project.of(transport.call(ProjectServiceStub(transport.channel).get, request, timeout=timeout))

    def list_projects(self, tenant_id: str, *, page_size: int = DEFAULT_PAGE_SIZE) -> Pager[Project]:
        """A lazy pager over a tenant's projects (IAM `ProjectService.List(parent_id=tenant)`, at
        `cpl.iam.<domain>`); a project's tenant is `get_project(id).tenant_id`. Raises (when iterated)
        `PermissionDenied` for a tenant the credentials may not list."""

        def fetch(token: str) -> tuple[list[Project], str]:
            transport = self._transport_of(IAM)
            request = ListProjectsRequest(parent_id=tenant_id, page_size=page_size, page_token=token)
            response = transport.call(ProjectServiceStub(transport.channel).list, request)
            return [Project.of(item) for item in response.items], response.next_page_token

        return Pager(fetch)

    def list_subnets(self, parent_id: str = "", *, page_size: int = DEFAULT_PAGE_SIZE) -> Pager[Subnet]:
        """A lazy pager over a project's VPC subnets (`SubnetService.List`, at `vpc.<domain>`); a project's own is
        named `default-subnet-...`."""
        parent = self._parent(parent_id)

        def fetch(token: str) -> tuple[list[Subnet], str]:
            transport = self._transport_of(VPC)
            request = ListSubnetsRequest(parent_id=parent, page_size=page_size, page_token=token)
            response = transport.call(SubnetServiceStub(transport.channel).list, request)
            return [Subnet.of(item) for item in response.items], response.next_page_token

        return Pager(fetch)

    # ------------------------------------------------------------------ tenants
    def list_tenants(self, *, page_size: int = DEFAULT_PAGE_SIZE) -> Pager[Tenant]:
        """A lazy pager over the tenants the credentials belong to (IAM `TenantService.List`, at `cpl.iam.<domain>`):
        one for a user's or service account's token; `list_projects(tenant.id)` lists its projects."""

        def fetch(token: str) -> tuple[list[Tenant], str]:
            transport = self._transport_of(IAM)
            request = ListTenantsRequest(page_size=page_size, page_token=token)
            response = transport.call(TenantServiceStub(transport.channel).list, request)
            return [Tenant.of(item) for item in response.items], response.next_page_token

        return Pager(fetch)

    # ------------------------------------------------------------------ disks
    def begin_create_disk(
        self, name: str, size_gib: int, *, image_family: str = "", image_id: str = "", parent_id: str = "",
        disk_type: DiskSpecDiskType = DiskSpecDiskType.NETWORK_SSD, labels: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Operation[Disk]:
        """Start creating a disk (`DiskService.Create`), empty or from an image (`image_id`, else the newest of
        `image_family` in the project's region); boot an instance from it with `specs.existing_boot_disk`. Raises
        `AlreadyExists` for a taken name, `InvalidArgument` for a bad spec."""
        spec = DiskSpec(size_gibibytes=size_gib, type=disk_type)
        if image_id:
            spec.source_image_id = image_id
        elif image_family:
            spec.source_image_family = SourceImageFamily(image_family=image_family)
        request = CreateDiskRequest(metadata=self._metadata(name, parent_id, labels), spec=spec)
        raw = self._transport.call(self._disks.create, request, mutating=True, timeout=timeout)
        return self._operation(raw, self.get_disk)

    def get_disk(self, disk_id: str, *, timeout: float | None = None) -> Disk:
        """The disk with this id. Raises `NotFound` if it does not exist (or was deleted)."""
        return self._transport.call(self._disks.get, GetDiskRequest(id=disk_id), timeout=timeout)

    def list_disks(self, parent_id: str = "", *, page_size: int = DEFAULT_PAGE_SIZE) -> Pager[Disk]:
        """A lazy pager over the project's disks."""
        parent = self._parent(parent_id)

        def fetch(token: str) -> tuple[list[Disk], str]:
            request = ListDisksRequest(parent_id=parent, page_size=page_size, page_token=token)
            response = self._transport.call(self._disks.list, request)
            return list(response.items), response.next_page_token

        return Pager(fetch)

    def begin_delete_disk(self, disk_id: str, *, missing_ok: bool = True,
                          timeout: float | None = None) -> Operation[None]:
        """Start deleting a disk; a missing disk is `Operation.finished(None)` unless `missing_ok` is False (then
        `NotFound`). Raises `Conflict` while an instance uses it."""
        return self._delete(self._disks.delete, DeleteDiskRequest(id=disk_id), disk_id, missing_ok, timeout)

    # ------------------------------------------------------------------ GPU clusters
    def begin_create_gpu_cluster(
        self, name: str, infiniband_fabric: str, *, parent_id: str = "", labels: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Operation[GpuCluster]:
        """Start creating a GPU cluster on an InfiniBand fabric (`GpuClusterService.Create`); 8-GPU instances of the
        fabric's platform join it with `gpu_cluster_id`. Raises `InvalidArgument` for a fabric the project's region
        does not have."""
        spec = GpuClusterSpec(infiniband_fabric=infiniband_fabric)
        request = CreateGpuClusterRequest(metadata=self._metadata(name, parent_id, labels), spec=spec)
        raw = self._transport.call(self._gpu_clusters.create, request, mutating=True, timeout=timeout)
        return self._operation(raw, self.get_gpu_cluster)

    def get_gpu_cluster(self, cluster_id: str, *, timeout: float | None = None) -> GpuCluster:
        """The GPU cluster with this id (its `status.instances`). Raises `NotFound` if there is none."""
        return self._transport.call(self._gpu_clusters.get, GetGpuClusterRequest(id=cluster_id), timeout=timeout)

    def list_gpu_clusters(self, parent_id: str = "", *, page_size: int = DEFAULT_PAGE_SIZE) -> Pager[GpuCluster]:
        """A lazy pager over the project's GPU clusters."""
        parent = self._parent(parent_id)

        def fetch(token: str) -> tuple[list[GpuCluster], str]:
            request = ListGpuClustersRequest(parent_id=parent, page_size=page_size, page_token=token)
            response = self._transport.call(self._gpu_clusters.list, request)
            return list(response.items), response.next_page_token

        return Pager(fetch)

    def begin_delete_gpu_cluster(self, cluster_id: str, *, missing_ok: bool = True,
                                 timeout: float | None = None) -> Operation[None]:
        """Start deleting a GPU cluster; a missing one is `Operation.finished(None)` unless `missing_ok` is False.
        Raises `Conflict` while instances are in it."""
        request = DeleteGpuClusterRequest(id=cluster_id)
        return self._delete(self._gpu_clusters.delete, request, cluster_id, missing_ok, timeout)

    # ------------------------------------------------------------------ security groups and rules
    def begin_create_security_group(
        self, name: str, network_id: str, *, parent_id: str = "", labels: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Operation[SecurityGroup]:
        """Start creating a security group in one of the project's networks (`SecurityGroupService.Create`, at
        `vpc.<domain>`; a subnet's `network_id`)."""
        transport = self._transport_of(VPC)
        request = CreateSecurityGroupRequest(metadata=self._metadata(name, parent_id, labels),
                                             spec=SecurityGroupSpec(network_id=network_id))
        raw = transport.call(SecurityGroupServiceStub(transport.channel).create, request, mutating=True,
                             timeout=timeout)
        return self._operation(raw, self.get_security_group, VPC)

    def get_security_group(self, group_id: str, *, timeout: float | None = None) -> SecurityGroup:
        """The security group with this id. Raises `NotFound` if there is none."""
        transport = self._transport_of(VPC)
        stub = SecurityGroupServiceStub(transport.channel)
        return transport.call(stub.get, GetSecurityGroupRequest(id=group_id), timeout=timeout)

    def list_security_groups(self, parent_id: str = "", *,
                             page_size: int = DEFAULT_PAGE_SIZE) -> Pager[SecurityGroup]:
        """A lazy pager over the project's security groups (each network's default one among them)."""
        parent = self._parent(parent_id)

        def fetch(token: str) -> tuple[list[SecurityGroup], str]:
            transport = self._transport_of(VPC)
            request = ListSecurityGroupsRequest(parent_id=parent, page_size=page_size, page_token=token)
            response = transport.call(SecurityGroupServiceStub(transport.channel).list, request)
            return list(response.items), response.next_page_token

        return Pager(fetch)

    def begin_delete_security_group(self, group_id: str, *, missing_ok: bool = True,
                                    timeout: float | None = None) -> Operation[None]:
        """Start deleting a security group; a missing one is `Operation.finished(None)` unless `missing_ok` is
        False."""
        transport = self._transport_of(VPC)
        stub = SecurityGroupServiceStub(transport.channel)
        request = DeleteSecurityGroupRequest(id=group_id)
        return self._delete(stub.delete, request, group_id, missing_ok, timeout, VPC)

    def begin_create_security_rule(
        self, group_id: str, name: str, spec: SecurityRuleSpec, *, timeout: float | None = None
    ) -> Operation[SecurityRule]:
        """Start creating a rule of a security group (`SecurityRuleService.Create`): at most 8 ports and 8 CIDRs
        per match, else `InvalidArgument`."""
        transport = self._transport_of(VPC)
        request = CreateSecurityRuleRequest(metadata=ResourceMetadata(parent_id=group_id, name=name), spec=spec)
        raw = transport.call(SecurityRuleServiceStub(transport.channel).create, request, mutating=True,
                             timeout=timeout)
        return self._operation(raw, self.get_security_rule, VPC)

    def get_security_rule(self, rule_id: str, *, timeout: float | None = None) -> SecurityRule:
        """The security rule with this id. Raises `NotFound` if there is none."""
        transport = self._transport_of(VPC)
        stub = SecurityRuleServiceStub(transport.channel)
        return transport.call(stub.get, GetSecurityRuleRequest(id=rule_id), timeout=timeout)

    def list_security_rules(self, group_id: str, *, page_size: int = DEFAULT_PAGE_SIZE) -> Pager[SecurityRule]:
        """A lazy pager over a security group's rules."""

        def fetch(token: str) -> tuple[list[SecurityRule], str]:
            transport = self._transport_of(VPC)
            request = ListSecurityRulesRequest(parent_id=group_id, page_size=page_size, page_token=token)
            response = transport.call(SecurityRuleServiceStub(transport.channel).list, request)
            return list(response.items), response.next_page_token

        return Pager(fetch)

    def begin_delete_security_rule(self, rule_id: str, *, missing_ok: bool = True,
                                   timeout: float | None = None) -> Operation[None]:
        """Start deleting a security rule; a missing one is `Operation.finished(None)` unless `missing_ok` is
        False."""
        transport = self._transport_of(VPC)
        stub = SecurityRuleServiceStub(transport.channel)
        return self._delete(stub.delete, DeleteSecurityRuleRequest(id=rule_id), rule_id, missing_ok, timeout, VPC)

    # ------------------------------------------------------------------ prices and pricing policies
    def estimate_instance_price(
        self, platform: str, preset: str, *, preemptible: bool = False, parent_id: str = "",
        timeout: float | None = None,
    ) -> Decimal:
        """The hourly price in USD of one instance of `platform`/`preset` in the project's region, on-demand or
        preemptible (billing `v1alpha1.CalculatorService.Estimate`, at `api.calculator.billing-data-plane.<domain>`,
        as gpuhunt reads it: `hourly_cost.general.total.cost`). Raises `InvalidArgument` for a preset the region
        does not sell, and `APIError` when the answer holds no cost."""
        spec = ResourceSpecV1Alpha1(compute_instance_spec=self._price_request(platform, preset, preemptible,
                                                                              parent_id))
        transport = self._transport_of(CALCULATOR)
        response = transport.call(CalculatorServiceV1Alpha1Stub(transport.channel).estimate,
                                  EstimateRequest(resource_spec=spec), timeout=timeout)
        group = response.hourly_cost
        total = group.general.total if group is not None and group.general is not None else None
        return _decimal(total.cost if total is not None else "", "hourly_cost.general.total.cost")

    def estimate_instance_prices(
        self, shapes: Sequence[tuple[str, str, bool]], *, parent_id: str = "", timeout: float | None = None
    ) -> list[Decimal]:
        """The hourly USD price of each (platform, preset, preemptible), in order, in one call (billing
        `v1.CalculatorService.EstimateBatch` with Any-packed `CreateInstanceRequest`s, as SkyPilot's catalog
        fetcher; each `resource_costs[i].general.total.cost`). No shapes, no call. Raises as
        `estimate_instance_price`."""
        if not shapes:
            return []
        specs_ = [ResourceSpecV1(spec=AnyMessage.pack(self._price_request(p, s, spot, parent_id)))
                  for p, s, spot in shapes]
        transport = self._transport_of(CALCULATOR)
        response = transport.call(CalculatorServiceStub(transport.channel).estimate_batch,
                                  EstimateBatchRequest(resource_specs=specs_), timeout=timeout)
        hourly = [c for c in response.resource_costs if c.aggregation_unit is None
                  or c.aggregation_unit.unit in ("", "hour")]
        if len(hourly) != len(shapes):
            raise APIError(Code.INTERNAL, f"EstimateBatch priced {len(hourly)} of {len(shapes)} instances")
        totals = [c.general.total if c.general is not None else None for c in hourly]
        return [_decimal(t.cost if t is not None else "", "resource_costs.general.total.cost") for t in totals]

    def begin_create_pricing_policy(
        self, name: str, platform: str, max_price: Decimal, *, parent_id: str = "", timeout: float | None = None
    ) -> Operation[PricingPolicy]:
        """Start creating a spot pricing policy (`PricingPolicyService.Create`, at
        `pricing-policies.billing-cpl.<domain>`): preemptible instances of `platform` that name it (spec
        `spot_pricing_policy_id`) pay at most `max_price` USD per GPU-hour. Raises `InvalidArgument`
        (OUT_OF_RANGE) for a price outside the allowed range; a price below the market is accepted and the policy
        blocks scheduling."""
        instance = ComputeInstanceSpec(v1=ComputeInstanceSpecV1(platform=platform))
        spec = PricingPolicySpec(compute_instance_spec=instance,
                                 pricing=PricingMethod(max_price_v1=MaxPriceV1(max_price=str(max_price))))
        transport = self._transport_of(PRICING_POLICIES)
        request = CreatePricingPolicyRequest(metadata=self._metadata(name, parent_id, None), spec=spec)
        raw = transport.call(PricingPolicyServiceStub(transport.channel).create, request, mutating=True,
                             timeout=timeout)
        return self._operation(raw, self.get_pricing_policy, PRICING_POLICIES)

    def get_pricing_policy(self, policy_id: str, *, timeout: float | None = None) -> PricingPolicy:
        """The pricing policy with this id. Raises `NotFound` if there is none."""
        transport = self._transport_of(PRICING_POLICIES)
        stub = PricingPolicyServiceStub(transport.channel)
        return transport.call(stub.get, GetPricingPolicyRequest(id=policy_id), timeout=timeout)

    def list_pricing_policies(self, parent_id: str = "", *,
                              page_size: int = DEFAULT_PAGE_SIZE) -> Pager[PricingPolicy]:
        """A lazy pager over the project's pricing policies."""
        parent = self._parent(parent_id)

        def fetch(token: str) -> tuple[list[PricingPolicy], str]:
            transport = self._transport_of(PRICING_POLICIES)
            request = ListPricingPoliciesRequest(parent_id=parent, page_size=page_size, page_token=token)
            response = transport.call(PricingPolicyServiceStub(transport.channel).list, request)
            return list(response.items), response.next_page_token

        return Pager(fetch)

    def begin_delete_pricing_policy(self, policy_id: str, *, missing_ok: bool = True,
                                    timeout: float | None = None) -> Operation[None]:
        """Start deleting a pricing policy; a missing one is `Operation.finished(None)` unless `missing_ok` is
        False. Raises `Conflict` while instances use it."""
        transport = self._transport_of(PRICING_POLICIES)
        stub = PricingPolicyServiceStub(transport.channel)
        request = DeletePricingPolicyRequest(id=policy_id)
        return self._delete(stub.delete, request, policy_id, missing_ok, timeout, PRICING_POLICIES)

    # ------------------------------------------------------------------ internals
    def _address(self, service: str) -> str:
        """Where `service` is: compute's own target for a borrowed channel or a local server (an IP address or
        `localhost`, which serves every service), else `<service>.<domain>`."""
        target = self._transport.target
        if self._borrowed or serves_everything(split_host_port(target)[0]):
            return target
        return service_address(service, self._domain)

    def _transport_of(self, service: str) -> Transport:
        """The transport of `service`'s address, opened on first use as compute's was (credentials, deadline,
        retries, TLS roots, keepalive, proxy). Raises ValueError when a CA variable names no readable file."""
        address = self._address(service)
        with self._transports_lock:
            transport = self._transports.get(address)
            if transport is None:
                transport = Transport(credentials=self.credentials, target=address, channel=None,
                                      timeout=self._transport.timeout, retry=self._transport.retry,
                                      insecure=self._insecure)
                self._transports[address] = transport
            return transport

    def _parent(self, parent_id: str) -> str:
        parent = parent_id or self.parent_id
        if not parent:
            raise ValueError("parent_id is required (pass it, or set NebiusClient(parent_id=...))")
        return parent

    def _operation(self, raw: RawOperation, result_of: Any, service: str = COMPUTE) -> Operation[Any]:
        """An operation of `service`, polled through that service's OperationService (pysdk routes it alike)."""
        transport = self._transport if service == COMPUTE else self._transport_of(service)
        refresh = self._get_raw_operation if service == COMPUTE else _operation_getter(transport)
        return Operation(
            raw,
            refresh=refresh,
            result_of=result_of,
            poll=self.poll,
            call_timeout=self._transport.timeout,
            target=transport.target,
        )

    def _metadata(self, name: str, parent_id: str, labels: Mapping[str, str] | None) -> ResourceMetadata:
        return ResourceMetadata(parent_id=self._parent(parent_id), name=name, labels=dict(labels or {}))

    def _delete(self, method: Any, request: betterproto2.Message, resource_id: str, missing_ok: bool,
                timeout: float | None, service: str = COMPUTE) -> Operation[None]:
        """A Delete call: its operation, or `Operation.finished(None)` for a missing resource when `missing_ok`."""
        transport = self._transport if service == COMPUTE else self._transport_of(service)
        try:
            raw = transport.call(method, request, mutating=True, timeout=timeout)
        except NotFound:
            if missing_ok:
                return Operation.finished(None, resource_id=resource_id, target=transport.target)
            raise
        return self._operation(raw, _no_result, service)

    def _price_request(self, platform: str, preset: str, preemptible: bool,
                       parent_id: str) -> CreateInstanceRequest:
        spec = InstanceSpec(resources=ResourcesSpec(platform=platform, preset=preset))
        if preemptible:
            spec.preemptible = PreemptibleSpec(on_preemption=PreemptibleSpecPreemptionPolicy.STOP, priority=1)
        return CreateInstanceRequest(metadata=ResourceMetadata(parent_id=self._parent(parent_id)), spec=spec)

    def _operations_of(self, raws: Sequence[RawOperation]) -> list[Operation[Instance | None]]:
        return [self._operation(raw, self._find_instance_by_id) for raw in raws]

    def _get_raw_operation(
        self, operation_id: str, timeout: float | None, max_attempts: int | None
    ) -> RawOperation:
        request = GetOperationRequest(id=operation_id)
        return self._transport.call(self._operations.get, request, timeout=timeout, max_attempts=max_attempts)

    def _get_instance_result(self, instance_id: str) -> Instance:
        return self.get_instance(instance_id)

    def _find_instance_by_id(self, instance_id: str) -> Instance | None:
        try:
            return self.get_instance(instance_id)
        except NotFound:
            return None


def public_images_parent(project_id: str) -> str:
    """Where the public images of a project's region are: `project-{routing code}public-images`, the routing
    code being the three characters after `project-` (`project-e00...` -> `project-e00public-images`)."""
    return f"project-{project_id.removeprefix('project-')[:3]}public-images"


def _no_result(resource_id: str) -> None:
    return None


def _operation_getter(transport: Transport) -> Any:
    """`refresh` of an operation of `transport`'s service: one OperationService.Get there."""
    stub = OperationServiceStub(transport.channel)

    def get(operation_id: str, timeout: float | None, max_attempts: int | None) -> RawOperation:
        request = GetOperationRequest(id=operation_id)
        return transport.call(stub.get, request, timeout=timeout, max_attempts=max_attempts)

    return get


def _decimal(text: str, field: str) -> Decimal:
    """A cost the calculator sent as a decimal string; raises APIError when it is missing or not a number."""
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise APIError(Code.INTERNAL, f"the price estimate has no {field} (got {text!r})") from None
    if not value.is_finite():
        raise APIError(Code.INTERNAL, f"the price estimate's {field} is {text!r}")
    return value


def _token_source(credentials: TokenSource | str | None) -> TokenSource:
    """The client's token source: the one given, a `StaticToken` of a string, else of $NEBIUS_IAM_TOKEN."""
    if credentials is None or credentials == "":
        return StaticToken.from_environment()
    if isinstance(credentials, str):
        return StaticToken(credentials)
    return credentials
