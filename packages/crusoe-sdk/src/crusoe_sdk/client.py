"""`CrusoeClient`: the one public client of the Crusoe Cloud REST API (v1alpha5).

Verbs: `get_x` raises NotFound when x is missing; `find_x` returns None; `list_xs` returns a lazy Pager;
`begin_x` starts an asynchronous operation and returns an Operation at once (it never waits); `delete_x`
blocks until x is gone and succeeds when x was already missing (unless `missing_ok=False`).

Creates and instance actions are never retried after they may have reached the server (Crusoe has no
idempotency key): after RequestNotSent nothing happened; after NoResponse or a 5xx, call `find_instance(name)`
before creating again.
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import quote

import msgspec

from . import _errormap, errors
from ._backoff import PollPolicy, RetryPolicy
from ._operation import Operation
from ._pager import Page, Pager
from ._transport import Transport
from .models import (
    Capacity,
    CreateInstanceRequest,
    DiskAttachment,
    HostChannelAdapterRequest,
    Image,
    Instance,
    InstanceAction,
    InstanceState,
    ItemsPage,
    OperationEnvelope,
    OperationRecord,
    OperationState,
    Project,
    Quota,
    QuotasResponse,
    Reservation,
    ReservationSpecification,
    VMType,
)
from .resources import (
    CreateDiskRequest,
    Disk,
    IBNetwork,
    IBPartition,
    OrgQuota,
    OrgQuotasResponse,
    SSHKey,
    SSHKeyEnvelope,
    VPCSubnet,
)

if TYPE_CHECKING:
    import requests

T = TypeVar("T")

DEFAULT_BASE_URL = "https://api.cloud.crusoe.ai/v1alpha5"
# A project given as a canonical UUID is used as is; anything else is a name (Terraform: uuid.Parse, else by name).
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_VM_OPERATIONS = "compute/vms/instances/operations"
_DISK_OPERATIONS = "storage/disks/operations"
DEFAULT_SORT = "created_at"  # the API has no deterministic default order: pages would skip or repeat VMs


class CrusoeClient:
    """A client of one Crusoe endpoint with one access key.

    Credentials come from the arguments or CRUSOE_ACCESS_KEY_ID / CRUSOE_SECRET_KEY; `base_url` from the
    argument, CRUSOE_API_ENDPOINT, or the public endpoint. The default project, as Crusoe's CLI and Terraform
    provider choose it: `project` (else CRUSOE_DEFAULT_PROJECT), a UUID used as is or a project name looked up;
    with neither, the only project the key can see. `project_id` is a project id used as is (it wins over
    CRUSOE_DEFAULT_PROJECT). Construction makes no network call: the `project_id` property resolves the project
    on first use. Nothing is read from files. Raises ValueError when credentials are missing, the secret is not
    base64url, both `project` and `project_id` are given, or a CA variable names no file. Every request has a
    timeout (`timeout` seconds).

    Thread-safety: as safe as the `requests.Session` it uses (pass one session per thread if in doubt); the
    project is resolved once, under a lock.
    """

    def __init__(
        self,
        access_key_id: str | None = None,
        secret_key: str | None = None,
        *,
        base_url: str | None = None,
        project: str | None = None,
        project_id: str | None = None,
        organization_id: str | None = None,
        session: requests.Session | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        poll: PollPolicy | None = None,
        _sleep: Callable[[float], None] = time.sleep,
        _rng: random.Random | None = None,
    ) -> None:
        access_key_id = access_key_id or os.environ.get("CRUSOE_ACCESS_KEY_ID", "")
        secret_key = secret_key or os.environ.get("CRUSOE_SECRET_KEY", "")
        if not access_key_id or not secret_key:
            raise ValueError("Crusoe credentials missing: pass access_key_id= and secret_key=, or set "
                             "CRUSOE_ACCESS_KEY_ID and CRUSOE_SECRET_KEY")
        self._transport = Transport(
            base_url=base_url or os.environ.get("CRUSOE_API_ENDPOINT") or DEFAULT_BASE_URL,
            access_key_id=access_key_id,
            secret_key=secret_key,
            session=session,
            timeout=timeout,
            retry=retry or RetryPolicy(),
            sleep=_sleep,
            rng=_rng,
        )
        if project and project_id:
            raise ValueError("pass project= (a name or UUID) or project_id= (an id), not both")
        self._project_id: str | None = project_id or None
        self._project = project_id or (project or os.environ.get("CRUSOE_DEFAULT_PROJECT") or "").strip()
        self._project_lock = threading.Lock()
        self._organization_id = organization_id
        self._poll = poll or PollPolicy()
        self._sleep = _sleep
        self._rng = _rng

    @property
    def base_url(self) -> str:
        return self._transport.base_url

    @property
    def project(self) -> str:
        """The project as given (a name or UUID, or the id passed as `project_id`); "" when none was."""
        return self._project

    @property
    def project_id(self) -> str:
        """The id of the client's default project, resolved once on first use and then kept (see the class).

        A UUID is used as is; a name is looked up (`GET /organizations/projects?project_name=`); no project means
        the only one the key can see. Raises ProjectUnresolved when that finds none or several, and the errors of
        `list_projects` (ConnectError, AuthError...) when the lookup fails (it is then tried again next time)."""
        if self._project_id is None:
            with self._project_lock:
                if self._project_id is None:
                    self._project_id = self._resolve_project(self._project)
        return self._project_id

    def _resolve_project(self, wanted: str) -> str:
        if _UUID.fullmatch(wanted):
            return wanted
        if wanted:
            found = [p for p in self.list_projects(name=wanted) if p.name == wanted]
            if len(found) == 1:
                return self._chosen(found[0])
            visible = found or self.list_projects().to_list()
            raise errors.ProjectUnresolved(
                f"{_project_count(found)} named {wanted!r} among the projects this key can see: "
                f"{errors.project_listing(visible)}; pass project= (a name or UUID) or set CRUSOE_DEFAULT_PROJECT",
                wanted=wanted, projects=visible)
        visible = self.list_projects().to_list()
        if len(visible) == 1:
            return self._chosen(visible[0])
        raise errors.ProjectUnresolved(
            f"no project chosen and this key can see {_project_count(visible)}: {errors.project_listing(visible)}; "
            "pass project= (a name or UUID) or set CRUSOE_DEFAULT_PROJECT", wanted="", projects=visible)

    def _chosen(self, project: Project) -> str:
        """`project`'s id, its organisation remembered (saving `organization_id()` a read)."""
        if not self._organization_id and project.organization_id:
            self._organization_id = project.organization_id
        return project.id

    def __repr__(self) -> str:
        return f"CrusoeClient(base_url={self.base_url!r}, project={self.project!r})"

    def close(self) -> None:
        """Close the HTTP session if the client created it."""
        self._transport.close()

    def __enter__(self) -> CrusoeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------------------------ plumbing
    def _get(self, path: str, into: type[T], query: dict[str, str] | None = None, project: str = "") -> T:
        return self._transport.request("GET", path, query=query, idempotent=True, into=into, project=project)

    def _project_of(self, project_id: str | None) -> str:
        """`project_id` when given, else the client's project (resolved on first use: see `project_id`)."""
        return project_id or self.project_id

    def _vms(self, project_id: str | None, *parts: str) -> tuple[str, str]:
        """(project id, path) of `/projects/{p}/compute/vms/<parts...>`."""
        project = self._project_of(project_id)
        tail = "".join(f"/{_segment(part)}" for part in parts)
        return project, f"/projects/{_segment(project)}/compute/vms{tail}"

    def _single_page(self, path: str | Callable[[], tuple[str, str]], into: type[ItemsPage[T]],
                     query: dict[str, str] | None = None) -> Pager[T]:
        """A pager over an endpoint that returns everything in one `{"items": [...]}` response. `path` is the
        path, or a function giving (project, path) when the first page is fetched (the project is resolved then,
        so the pager stays lazy)."""
        def fetch(_token: str | None) -> Page[T]:
            project, where = ("", path) if isinstance(path, str) else path()
            return Page(self._get(where, into, query, project=project).items)

        return Pager(fetch, description=path if isinstance(path, str) else into.__name__)

    # ------------------------------------------------------------------------------------------ projects
    def list_projects(self, *, organization_id: str | None = None, name: str | None = None) -> Pager[Project]:
        """Projects the key can see, optionally of one organisation or with one name. Lazy; one page."""
        query = _drop_empty({"org_id": organization_id or "", "project_name": name or ""})
        return self._single_page("/organizations/projects", ItemsPage[Project], query)

    def get_project(self, project_id: str | None = None) -> Project:
        """One project (default: the client's). Raises NotFound, or ProjectUnavailable for another org's."""
        project = self._project_of(project_id)
        return self._get(f"/organizations/projects/{_segment(project)}", Project, project=project)

    def organization_id(self) -> str:
        """The organisation of the client: the constructor's, else read once from the default project."""
        if not self._organization_id:
            self._organization_id = self.get_project().organization_id
        return self._organization_id

    # ------------------------------------------------------------------------------------------ catalogue
    def list_locations(self) -> Pager[str]:
        """Location names such as `us-east1-a` (not project-scoped)."""
        return self._single_page("/locations", ItemsPage[str])

    def list_capacities(
        self, *, types: Iterable[str] = (), locations: Iterable[str] = ()
    ) -> Pager[Capacity]:
        """Hardware availability per (type, location), optionally filtered. Capacity is not quota."""
        query = _drop_empty({"product_name": _csv(types), "location": _csv(locations)})
        return self._single_page("/capacities", ItemsPage[Capacity], query)

    def list_images(self, *, product_group: str = "") -> Pager[Image]:
        """Public images (not project-scoped), optionally for one product group (`h100`)."""
        return self._single_page("/compute/images", ItemsPage[Image], _drop_empty({"product_group": product_group}))

    def get_image(self, image_id: str) -> Image:
        """Raises NotFound for an unknown id."""
        return self._get(f"/compute/images/{image_id}", Image)

    def list_vm_types(self, *, project_id: str | None = None) -> Pager[VMType]:
        """Instance types the project can use."""
        return self._single_page(lambda: self._vms(project_id, "types"), ItemsPage[VMType])

    def list_quotas(self, *, project_id: str | None = None) -> Pager[Quota]:
        """The project's quotas (max/used/available per instance family)."""
        def fetch(_token: str | None) -> Page[Quota]:
            project = self._project_of(project_id)
            return Page(self._get(f"/projects/{_segment(project)}/quotas", QuotasResponse, project=project).quotas)

        return Pager(fetch, description="quotas")

    # ------------------------------------------------------------------------------------------ instances
    def list_instances(
        self,
        *,
        ids: Iterable[str] = (),
        names: Iterable[str] = (),
        types: Iterable[str] = (),
        locations: Iterable[str] = (),
        states: Iterable[InstanceState | str] = (),
        sort: str | None = DEFAULT_SORT,
        page_size: int | None = None,
        project_id: str | None = None,
    ) -> Pager[Instance]:
        """VMs of the project matching every given filter, lazily paged over `limit`/`next_token`.

        `sort` defaults to `created_at` because the API has no stable default order; pass None to omit it.
        """
        query = _drop_empty({
            "ids": _csv(ids), "names": _csv(names), "types": _csv(types), "locations": _csv(locations),
            "states": _csv(_wire(s) for s in states), "sort": sort or "",
            "limit": str(page_size) if page_size else "",
        })

        def fetch(token: str | None) -> Page[Instance]:
            project, path = self._vms(project_id, "instances")  # resolved on the first fetch: the pager stays lazy
            query_page = {**query, **({"next_token": token} if token else {})}
            page = self._get(path, ItemsPage[Instance], query_page, project=project)
            return Page(page.items, page.next_page_token)

        return Pager(fetch, description=f"instances of project {project_id or self.project or '(default)'}")

    def get_instance(self, instance_id: str, *, project_id: str | None = None) -> Instance:
        """One VM. Raises NotFound when it does not exist (on the real API also briefly after a create)."""
        project, path = self._vms(project_id, "instances", instance_id)
        return self._get(path, Instance, project=project)

    def find_instance(self, name: str, *, project_id: str | None = None) -> Instance | None:
        """The oldest VM named exactly `name`, or None. Use it to reconcile after an ambiguous create."""
        matches = self.list_instances(names=[name], project_id=project_id)
        return next((vm for vm in matches if vm.name == name), None)

    def begin_create_instance(
        self,
        *,
        name: str,
        type: str,
        location: str,
        ssh_public_key: str,
        image: str = "",
        custom_image: str = "",
        reservation_specification: ReservationSpecification | None = None,
        startup_script: str = "",
        shutdown_script: str = "",
        disks: Iterable[DiskAttachment] = (),
        host_channel_adapters: Iterable[HostChannelAdapterRequest] = (),
        maintenance_policy: str = "",
        project_id: str | None = None,
    ) -> Operation[Instance]:
        """Ask for a VM; returns at once with an Operation whose `resource_id` is the new VM's id.

        Without `reservation_specification` the server's default (`lowest_cost`) applies; a `ById` is ignored
        by the real backend (lowest_cost again): the result's `reservation_id` says where the VM is. Never retried after
        it may have reached the server (see the module docstring). `result()` raises CapacityError when the
        cloud is out of stock; the VM then does not exist. `disks` attaches data disks (`attachment_type` data);
        `host_channel_adapters` puts an InfiniBand type on an IB partition (`HostChannelAdapterRequest(id)`).
        """
        project, path = self._vms(project_id, "instances")
        reservation = reservation_specification.to_wire() if reservation_specification else {}
        request = CreateInstanceRequest(
            name=name, type=type, location=location, ssh_public_key=ssh_public_key, image=image,
            custom_image=custom_image, startup_script=startup_script, shutdown_script=shutdown_script,
            disks=list(disks), host_channel_adapters=list(host_channel_adapters),
            maintenance_policy=maintenance_policy,
            reservation_specification=reservation,
        )
        envelope = self._transport.request(
            "POST", path, body=request, idempotent=False, into=OperationEnvelope, project=project
        )
        return self._operation(envelope.operation, project, self._instance_result(project))

    def begin_start_instance(self, instance_id: str, *, project_id: str | None = None) -> Operation[Instance]:
        """START a stopped VM; it tries to take back its reservation. Raises Conflict unless stopped."""
        return self._action(instance_id, InstanceAction.START, project_id)

    def begin_stop_instance(self, instance_id: str, *, project_id: str | None = None) -> Operation[Instance]:
        """STOP a running VM; this releases its reserved capacity. Raises Conflict unless running."""
        return self._action(instance_id, InstanceAction.STOP, project_id)

    def begin_reset_instance(self, instance_id: str, *, project_id: str | None = None) -> Operation[Instance]:
        """RESET: a hard reset of a running VM (the real API's only reboot-like action)."""
        return self._action(instance_id, InstanceAction.RESET, project_id)

    def begin_reserve_instance(
        self, instance_id: str, reservation_id: str, *, project_id: str | None = None
    ) -> Operation[Instance]:
        """RESERVE: ask to move the VM into a reservation. Synchronous on Crusoe: the operation is already done.
        Deprecated by Crusoe: the backend ignores the reservation id, as at create (Terraform warns "The requested
        reservation_id was ignored by the backend"); the result's `reservation_id` says where the VM is."""
        return self._action(instance_id, InstanceAction.RESERVE, project_id, reservation_id=reservation_id)

    def begin_unreserve_instance(
        self, instance_id: str, *, project_id: str | None = None
    ) -> Operation[Instance]:
        """UNRESERVE: move the VM out of its reservation to on-demand. Synchronous (already done)."""
        return self._action(instance_id, InstanceAction.UNRESERVE, project_id)

    def _action(self, instance_id: str, action: InstanceAction, project_id: str | None,
                **extra: str) -> Operation[Instance]:
        project, path = self._vms(project_id, "instances", instance_id)
        body = {"action": action.value, **extra}
        envelope = self._transport.request(
            "PATCH", path, body=body, idempotent=False, into=OperationEnvelope, project=project
        )
        return self._operation(envelope.operation, project, self._instance_result(project))

    def begin_delete_instance(
        self, instance_id: str, *, missing_ok: bool = True, project_id: str | None = None
    ) -> Operation[None]:
        """Ask to delete a VM (its OS disk goes with it; data disks stay).

        When the VM does not exist: with `missing_ok` (default) returns `Operation.finished` — already
        SUCCEEDED, `id == ""`; otherwise raises NotFound. Deleting a VM that is being deleted returns the
        delete in progress. Retried like a read: a repeated DELETE is harmless.
        """
        project, path = self._vms(project_id, "instances", instance_id)
        try:
            envelope = self._transport.request(
                "DELETE", path, idempotent=True, into=OperationEnvelope, project=project
            )
        except errors.NotFound:
            if not missing_ok:
                raise
            return Operation.finished(instance_id, None, project_id=project)
        return self._operation(envelope.operation, project, lambda _record: None)

    def delete_instance(
        self, instance_id: str, *, missing_ok: bool = True, timeout: float | None = None,
        project_id: str | None = None,
    ) -> None:
        """Delete a VM and block until it is gone (OperationTimeout after `timeout`)."""
        self.begin_delete_instance(instance_id, missing_ok=missing_ok, project_id=project_id).result(timeout)

    # ------------------------------------------------------------------------------------------ operations
    def get_operation(self, operation_id: str, *, project_id: str | None = None) -> OperationRecord:
        """The current record of a VM operation.

        Raises OperationUnavailable (403) when the operation is unknown, expired, or not started by this key.
        """
        return self._read_operation(operation_id, self._project_of(project_id), None)

    def _read_operation(self, operation_id: str, project: str, deadline: float | None,
                        where: str = _VM_OPERATIONS) -> OperationRecord:
        path = f"/projects/{_segment(project)}/{where}/{_segment(operation_id)}"
        try:
            return self._transport.request(
                "GET", path, idempotent=True, into=OperationRecord, deadline=deadline
            )
        except errors.PermissionDenied as exc:
            raise errors.OperationUnavailable(
                f"operation {operation_id} does not exist, has expired, or was not started by this key "
                f"(server said: {exc.message})",
                status=exc.status, code=exc.code, request_id=exc.request_id, method=exc.method, url=exc.url,
            ) from exc

    def list_operations(
        self, *, resource_id: str | None = None, states: Iterable[OperationState | str] = (),
        project_id: str | None = None,
    ) -> Pager[OperationRecord]:
        """VM operations of the project, optionally of one resource and in some states."""
        query = _drop_empty({"resource_id": resource_id or "", "state": _csv(_wire(s) for s in states)})
        return self._single_page(lambda: self._vms(project_id, "instances", "operations"), ItemsPage[OperationRecord],
                                 query)

    def resume_operation(self, token: str) -> Operation[Instance | None]:
        """Resume polling an operation started earlier, possibly by another process. Reads it once now.

        `token` is an `Operation.continuation_token()` ("<project id>/<operation id>"), or a bare operation id
        of this client's project. `result()` returns the Instance the operation reported, or None when its
        result is empty (deletes). Raises ValueError for an empty token (a finished operation has nothing to
        resume) and OperationUnavailable for an unknown one.
        """
        project_id, _, operation_id = token.rpartition("/")
        if not operation_id:
            raise ValueError("an empty continuation token: the operation needed no work, there is nothing to resume")
        project = self._project_of(project_id or None)
        record = self.get_operation(operation_id, project_id=project)
        return self._operation(record, project, _instance_or_none)

    def _operation(self, record: OperationRecord, project: str,
                   resolve: Callable[[OperationRecord], T], where: str = _VM_OPERATIONS) -> Operation[T]:
        op_id = record.operation_id
        return Operation(
            record,
            project_id=project,
            refresh=lambda deadline: self._read_operation(op_id, project, deadline, where),
            resolve=resolve,
            fail=lambda final: _errormap.from_operation(
                final, method="GET", url=f"{self.base_url}/projects/{_segment(project)}/{where}/{_segment(op_id)}"
            ),
            policy=self._poll,
            sleep=self._sleep,
            rng=self._rng,
        )

    def _instance_result(self, project: str) -> Callable[[OperationRecord], Instance]:
        """The VM an operation produced: from its result, else read by the operation's resource id."""

        def resolve(record: OperationRecord) -> Instance:
            return _instance_or_none(record) or self.get_instance(record.resource_id, project_id=project)

        return resolve

    # ------------------------------------------------------------------------------------------ reservations
    def list_reservations(
        self, *, status: str | None = None, organization_id: str | None = None
    ) -> Pager[Reservation]:
        """Reservations of the organisation (default: discovered from the client's project)."""
        org = organization_id or self.organization_id()
        path = f"/organizations/{_segment(org)}/reservations"
        return self._single_page(path, ItemsPage[Reservation], _drop_empty({"status": status or ""}))

    def get_reservation(self, reservation_id: str, *, organization_id: str | None = None) -> Reservation:
        """One reservation (the API answers with a one-item list). Raises NotFound."""
        org = organization_id or self.organization_id()
        path = f"/organizations/{_segment(org)}/reservations/{_segment(reservation_id)}"
        found = [r for r in self._get(path, ItemsPage[Reservation]).items if r.id == reservation_id]
        if not found:
            raise errors.NotFound(f"reservation {reservation_id} not in the response", status=200,
                                  code="not_found", method="GET", url=self.base_url + path)
        return found[0]


    # ------------------------------------------------------------------------------------------ disks
    def _project_path(self, project_id: str | None, *parts: str) -> tuple[str, str]:
        """(project id, path) of `/projects/{p}/<parts...>` (the project resolved now)."""
        project = self._project_of(project_id)
        return project, f"/projects/{_segment(project)}" + "".join(f"/{_segment(part)}" for part in parts)

    def list_disks(self, *, ids: Iterable[str] = (), names: Iterable[str] = (), location: str = "",
                   project_id: str | None = None) -> Pager[Disk]:
        """Disks of the project (data disks; OS disks come with their VMs), optionally filtered. Lazy; one page."""
        query = _drop_empty({"disk_ids": _csv(ids), "disk_names": _csv(names), "location": location})
        return self._single_page(lambda: self._project_path(project_id, "storage", "disks"), ItemsPage[Disk], query)

    def get_disk(self, disk_id: str, *, project_id: str | None = None) -> Disk:
        """Raises NotFound when the disk does not exist."""
        project, path = self._project_path(project_id, "storage", "disks", disk_id)
        return self._get(path, Disk, project=project)

    def begin_create_disk(self, *, name: str, size: str, location: str, type: str = "persistent-ssd",
                          block_size: int = 4096, project_id: str | None = None) -> Operation[Disk]:
        """Ask for a disk (`size` like "100GiB"); returns at once with an Operation whose `resource_id` is the
        disk's id. Never retried after it may have been handled (like a VM create)."""
        project, path = self._project_path(project_id, "storage", "disks")
        body = CreateDiskRequest(name=name, size=size, location=location, type=type, block_size=block_size)
        envelope = self._transport.request("POST", path, body=body, idempotent=False, into=OperationEnvelope,
                                           project=project)
        return self._operation(envelope.operation, project, self._disk_result(project), _DISK_OPERATIONS)

    def begin_delete_disk(self, disk_id: str, *, missing_ok: bool = True,
                          project_id: str | None = None) -> Operation[None]:
        """Ask to delete a disk (it must not be attached: BadRequest). A missing disk gives an already finished
        Operation (`missing_ok`, the default) or NotFound."""
        project, path = self._project_path(project_id, "storage", "disks", disk_id)
        try:
            envelope = self._transport.request("DELETE", path, idempotent=True, into=OperationEnvelope,
                                               project=project)
        except errors.NotFound:
            if not missing_ok:
                raise
            return Operation.finished(disk_id, None, project_id=project)
        return self._operation(envelope.operation, project, lambda _record: None, _DISK_OPERATIONS)

    def delete_disk(self, disk_id: str, *, missing_ok: bool = True, timeout: float | None = None,
                    project_id: str | None = None) -> None:
        """Delete a disk and block until it is gone (OperationTimeout after `timeout`)."""
        self.begin_delete_disk(disk_id, missing_ok=missing_ok, project_id=project_id).result(timeout)

    def _disk_result(self, project: str) -> Callable[[OperationRecord], Disk]:
        def resolve(record: OperationRecord) -> Disk:
            if isinstance(record.result, dict) and record.result.get("id"):
                return msgspec.convert(record.result, Disk, strict=False)
            return self.get_disk(record.resource_id, project_id=project)

        return resolve

    # ------------------------------------------------------------------------------------------ networking
    def list_ib_networks(self, *, project_id: str | None = None) -> Pager[IBNetwork]:
        """The InfiniBand networks the project can use, one per location, with the VM types each hosts."""
        return self._single_page(lambda: self._project_path(project_id, "networking", "ib-networks"),
                                 ItemsPage[IBNetwork])

    def list_ib_partitions(self, *, project_id: str | None = None) -> Pager[IBPartition]:
        return self._single_page(lambda: self._project_path(project_id, "networking", "ib-partitions"),
                                 ItemsPage[IBPartition])

    def get_ib_partition(self, partition_id: str, *, project_id: str | None = None) -> IBPartition:
        """Raises NotFound when the partition does not exist."""
        project, path = self._project_path(project_id, "networking", "ib-partitions", partition_id)
        return self._get(path, IBPartition, project=project)

    def create_ib_partition(self, *, name: str, ib_network_id: str, project_id: str | None = None) -> IBPartition:
        """Make an IB partition on a network (synchronous: the answer is the partition). Names are unique in a
        project (BadRequest otherwise). Never retried after it may have been handled: on NoResponse, look for
        the name in `list_ib_partitions`."""
        project, path = self._project_path(project_id, "networking", "ib-partitions")
        body = {"name": name, "ib_network_id": ib_network_id}
        return self._transport.request("POST", path, body=body, idempotent=False, into=IBPartition, project=project)

    def delete_ib_partition(self, partition_id: str, *, missing_ok: bool = True,
                            project_id: str | None = None) -> None:
        """Delete an IB partition (synchronous). BadRequest while a VM uses it; a missing one is fine unless
        `missing_ok=False` (NotFound)."""
        project, path = self._project_path(project_id, "networking", "ib-partitions", partition_id)
        try:
            self._transport.request("DELETE", path, idempotent=True, into=dict, project=project)
        except errors.NotFound:
            if not missing_ok:
                raise

    def list_vpc_subnets(self, *, project_id: str | None = None) -> Pager[VPCSubnet]:
        """The project's VPC subnets (each location has a default one)."""
        return self._single_page(lambda: self._project_path(project_id, "networking", "vpc-subnets"),
                                 ItemsPage[VPCSubnet])

    # ------------------------------------------------------------------------------------------ account
    def list_ssh_keys(self) -> Pager[SSHKey]:
        """The caller's SSH keys (not project-scoped)."""
        return self._single_page("/users/ssh-keys", ItemsPage[SSHKey])

    def create_ssh_key(self, *, name: str, public_key: str) -> SSHKey:
        """Register a public key (BadRequest for a malformed key or a name in use)."""
        body = {"name": name, "public_key": public_key}
        return self._transport.request("POST", "/users/ssh-keys", body=body, idempotent=False,
                                       into=SSHKeyEnvelope).ssh_key

    def delete_ssh_key(self, key_id: str, *, missing_ok: bool = True) -> None:
        """Remove a key; a missing one is fine unless `missing_ok=False` (NotFound)."""
        try:
            self._transport.request("DELETE", "/users/ssh-keys", query={"id": key_id}, idempotent=True, into=dict)
        except errors.NotFound:
            if not missing_ok:
                raise

    def list_org_quotas(self, *, organization_id: str | None = None) -> Pager[OrgQuota]:
        """The organisation's quotas (default: the client's organisation)."""
        def fetch(_token: str | None) -> Page[OrgQuota]:
            org = organization_id or self.organization_id()
            return Page(self._get(f"/organizations/{_segment(org)}/quotas", OrgQuotasResponse).quotas)

        return Pager(fetch, description="organisation quotas")


# ---------------------------------------------------------------------------------------------- helpers
def _project_count(projects: list[Project]) -> str:
    return {0: "no project", 1: "one project"}.get(len(projects), f"{len(projects)} projects")


def _segment(value: str) -> str:
    """One path segment; ValueError for an empty id (it would address a different resource)."""
    if not value:
        raise ValueError("an id in the path is empty")
    return quote(value, safe="")


def _wire(value: InstanceState | OperationState | str) -> str:
    return value.value if isinstance(value, InstanceState | OperationState) else value


def _csv(values: Iterable[str]) -> str:
    """Crusoe's multi-value filter form `a,b`. ValueError if a value contains a comma."""
    items = list(values)
    if any("," in item for item in items):
        raise ValueError(f"filter values cannot contain ',': {items}")
    return ",".join(items)


def _drop_empty(query: dict[str, str]) -> dict[str, str]:
    return {key: value for key, value in query.items() if value}


def _instance_or_none(record: OperationRecord) -> Instance | None:
    """The Instance in an operation's result, or None when the result is empty or not an instance."""
    if not record.result:
        return None
    try:
        return msgspec.convert(record.result, Instance, strict=False)
    except msgspec.ValidationError:
        return None

