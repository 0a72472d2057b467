"""The admin API of a running mock-clouds process (loopback only, bearer token from endpoints.json).

It is how `mock-clouds inventory`, `mock-clouds faults` and `mock-clouds status` talk to a detached server:

    GET  /health                 -> {"ok": true, "pid": N}
    GET  /inventory              -> {"instances": [...]}   every instance that exists in any cloud (Crusoe VMs
                                                           with the ssh_public_keys each was created with)
    GET  /faults                 -> {"crusoe": {...}, "lambda": {...}, "nebius": {...}} settings and counters
    POST /faults/{provider}      -> body: any of error_rate, op_failure_rate, latency_ms, drop_rate, seed
    POST /preempt/{provider}/{id} -> the running instance is preempted (stopped by the cloud), as spot capacity is

World clock and billing (mock extensions, `billing_admin.py` has the shapes):

    GET  /clock, POST /clock {"advance_seconds": N}   the world clock, and moving it forward
    GET  /billing[?provider=&since=&until=]            what each cloud would bill, VM by VM and reservation by
                                                       reservation

Nebius IAM (mock extensions, `nebius/admin.py`):

    GET  /nebius/token-exchanges  -> {"count": N, "token_lifetime": S, "expires_in": E, "exchanges": [...]}
    GET  /nebius/token-lifetime   -> {"token_lifetime": S, "expires_in": E}
    POST /nebius/token-lifetime   -> body {"token_lifetime": S}: the lifetime of tokens issued from now on
    GET  /nebius/service-accounts -> {"service_accounts": [{"id", "tenant_id", "public_key_id"}]}
    GET  /nebius/service-accounts/{id}/credentials -> the account's credentials file (holds its private key)
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import TYPE_CHECKING

import msgspec

from .billing_admin import add_routes as add_billing_routes
from .core.faults import FaultInjector
from .core.models import Faults, Provider
from .core.world import WorldError
from .http import BadRequestBody, Handler, HttpServer, Request, Response, Router
from .nebius.admin import add_routes as add_nebius_iam_routes

if TYPE_CHECKING:
    from .runner import MockClouds


class FaultsUpdate(msgspec.Struct, forbid_unknown_fields=True):
    error_rate: float | None = None
    op_failure_rate: float | None = None
    latency_ms: int | None = None
    drop_rate: float | None = None
    seed: int | None = None


def inventory(clouds: MockClouds) -> list[dict[str, object]]:
    """Ground truth for leak checks: every instance not yet deleted, in every cloud."""
    world = clouds.world
    rows = []
    with world.tx():
        for provider in Provider:
            if provider not in world.state.providers:
                continue
            for vm in world.vms(provider):
                rows.append({
                    "provider": provider.value, "id": vm.id, "name": vm.name, "state": vm.state.value,
                    "scope": vm.scope, "region": vm.region, "shape": vm.shape,
                    "reservation_id": vm.reservation_id,
                    **_ssh_key(vm.native),
                    **machine(provider, vm.native),
                    **_fabric(provider, vm.native),
                })
    return rows


def _fabric(provider: Provider, native: dict[str, object]) -> dict[str, object]:
    """Crusoe: `ib_partition_ids`, the IB partitions of the VM's host channel adapters (as the API shows them
    too); nothing on the other clouds."""
    if provider is not Provider.CRUSOE:
        return {}
    adapters = native.get("host_channel_adapters")
    listed = adapters if isinstance(adapters, list) else []
    return {"ib_partition_ids": [str(a.get("transport_partition_id", "")) for a in listed if isinstance(a, dict)]}


def _ssh_key(native: dict[str, object]) -> dict[str, object]:
    """The public keys a VM was created with, none of which its cloud's API shows back as they are:
    `ssh_public_keys` on every cloud (Crusoe: the create's `ssh_public_key`, see crusoe/vmdata.py; Lambda: the
    keys its `ssh_key_names` held at launch; Nebius: the `ssh_authorized_keys` of its cloud-init user data), and
    Crusoe's key also as `ssh_public_key`."""
    key = native.get("ssh_public_key")
    if isinstance(key, str) and key:
        return {"ssh_public_key": key, "ssh_public_keys": [key]}
    listed = native.get("ssh_public_keys")
    if isinstance(listed, list):
        return {"ssh_public_keys": [str(k) for k in listed]}
    spec = native.get("spec")
    if isinstance(spec, dict):
        return {"ssh_public_keys": authorized_keys(str(spec.get("cloudInitUserData", "")))}
    return {"ssh_public_keys": []}


def authorized_keys(user_data: str) -> list[str]:
    """The entries of every `ssh_authorized_keys:` list in cloud-config user data (block lists of plain or
    quoted strings, as vm and the Nebius console write them), also in each `text/cloud-config` part of a MIME
    multi-part message (how vm adds a cloud-config startup script to the login user's); [] for anything else."""
    if user_data.startswith("Content-Type: multipart/"):
        import email

        parts = email.message_from_string(user_data).walk()
        return [key for part in parts if part.get_content_type() == "text/cloud-config"
                for key in authorized_keys(str(part.get_payload()))]
    if not user_data.startswith("#cloud-config"):
        return []
    found: list[str] = []
    lines = user_data.splitlines()
    for number, line in enumerate(lines):
        if line.strip() != "ssh_authorized_keys:":
            continue
        for item in lines[number + 1:]:
            entry = item.strip()
            if not entry.startswith("- "):
                break
            value = entry[2:].strip()
            if value[:1] in "\"'" and value[-1:] == value[:1] and len(value) > 1:
                value = json.loads(value) if value[0] == '"' else value[1:-1]
            found.append(value)
    return found


def machine(provider: Provider, native: dict[str, object]) -> dict[str, object]:
    """What the VM was created with, as its create request said (mock extension): `image` (Crusoe's `name:tag`,
    Lambda's image id, "" for its default; Nebius's family or image id), `disk_gib` (the boot disk Nebius was
    asked for; None where the create has no size) and `startup_script_sha256`/`startup_script_bytes` (the SHA-256
    and size of Crusoe's `startup_script`, Lambda's `user_data` or Nebius's `cloud_init_user_data`; "" and 0
    without one)."""
    if provider is Provider.NEBIUS:
        return _nebius_machine(native)
    if provider is Provider.CRUSOE:
        image, digest, size = native.get("image", ""), native.get("startup_script_sha256", ""), \
            native.get("startup_script_bytes", 0)
    else:
        image, digest, size = native.get("image_id", ""), native.get("user_data_sha256", ""), \
            native.get("user_data_bytes", 0)
    return {"image": image, "disk_gib": None, "startup_script_sha256": digest, "startup_script_bytes": size}


def _nebius_machine(native: dict[str, object]) -> dict[str, object]:
    spec = native.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    disk = ((spec.get("bootDisk") or {}).get("managedDisk") or {}).get("spec") or {}
    image = disk.get("sourceImageId") or (disk.get("sourceImageFamily") or {}).get("imageFamily", "")
    size = disk.get("sizeGibibytes")
    script = str(spec.get("cloudInitUserData", "")).encode()
    return {
        "image": image, "disk_gib": int(size) if size is not None else None,
        "startup_script_sha256": hashlib.sha256(script).hexdigest() if script else "",
        "startup_script_bytes": len(script),
    }


def update_faults(clouds: MockClouds, provider: Provider, update: FaultsUpdate) -> Faults:
    """Merge `update` into the provider's fault settings; rates must lie in [0, 1]."""
    current = clouds.world.state.providers[provider].faults
    changes = {k: v for k, v in msgspec.structs.asdict(update).items() if v is not None}
    for name in ("error_rate", "op_failure_rate", "drop_rate"):
        if name in changes and not 0.0 <= changes[name] <= 1.0:
            raise ValueError(f"{name} must be between 0 and 1")
    if changes.get("latency_ms", 0) < 0:
        raise ValueError("latency_ms must not be negative")
    faults = msgspec.structs.replace(current, **changes)
    clouds.world.configure_faults(provider, faults)
    return faults


class AdminApp:
    def __init__(self, clouds: MockClouds) -> None:
        self.clouds = clouds
        self.faults = FaultInjector(Faults())  # the admin API itself never injects faults
        self.router: Router[Handler] = Router()
        self.router.add("GET", "/health", lambda r: Response(200, {"ok": True, "pid": clouds.endpoints.get("pid")}))
        self.router.add("GET", "/inventory", lambda r: Response(200, {"instances": inventory(clouds)}))
        self.router.add("GET", "/faults", self._get_faults)
        self.router.add("POST", "/faults/{provider}", self._post_faults)
        self.router.add("POST", "/preempt/{provider}/{vm_id}", self._post_preempt)
        add_nebius_iam_routes(self.router, clouds)
        add_billing_routes(self.router, clouds)

    def handle(self, request: Request) -> Response:
        token = self.clouds.world.state.extra_state.get("admin_token", "")
        supplied = request.headers.get("authorization", "").removeprefix("Bearer ")
        if not hmac.compare_digest(str(token).encode(), supplied.encode()):
            return self.reject(401, "missing or wrong admin token")
        handler, params, known = self.router.resolve(request.method, request.path)
        if handler is None:
            return self.reject(405 if known else 404, f"no route {request.method} {request.path}")
        request.params = params
        return handler(request)

    def _get_faults(self, request: Request) -> Response:
        world = self.clouds.world
        body = {
            p: {**msgspec.structs.asdict(world.state.providers[p].faults), "injected": world.faults[p].counts}
            for p in world.state.providers
        }
        return Response(200, body)

    def _post_faults(self, request: Request) -> Response:
        try:
            provider = Provider(request.params["provider"])
            update = request.json(FaultsUpdate)
            faults = update_faults(self.clouds, provider, update)
        except (ValueError, BadRequestBody) as exc:
            return self.reject(400, str(exc))
        return Response(200, msgspec.structs.asdict(faults))

    def _post_preempt(self, request: Request) -> Response:
        try:
            provider = Provider(request.params["provider"])
        except ValueError as exc:
            return self.reject(400, str(exc))
        world = self.clouds.world
        try:
            with world.tx():
                vm = world.preempt(provider, request.params["vm_id"])
                return Response(200, {"id": vm.id, "state": vm.state.value, "preempted": vm.preempted})
        except WorldError as exc:
            return self.reject(404 if exc.kind == "not_found" else 409, exc.message)

    def reject(self, status: int, message: str) -> Response:
        return Response(status, {"error": message})

    def injected_fault(self, status: int) -> Response:
        return self.reject(status, "internal error")


def serve(clouds: MockClouds, host: str, port: int) -> HttpServer:
    return HttpServer(AdminApp(clouds), host, port)
