"""Run the three mock clouds (plus a small admin API) in this process.

`MockClouds` is what `mock-clouds serve` runs in the foreground and what the pytest fixtures start in-process:

    clouds = MockClouds(state_dir).start()      # ports default to free ports
    clouds.endpoints["lambda"]["url"]           # the same document as DIR/endpoints.json
    clouds.stop()                               # persists the world; safe to call twice

With `tls=True` the three clouds serve TLS with a certificate signed by the state dir's own CA (`mock_clouds.tls`:
`ca.pem`, made on first start and reused), and `endpoints.json` says so (see `_endpoints`). The admin API stays
plaintext on loopback.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from .control import ENDPOINTS_FILE
from .core.models import Credential, Provider, WorldState
from .core.store import Snapshotter, load_state, write_atomic
from .core.world import World
from .scenario import load_scenario
from .tls import ServerTls

_FRONT_ENDS = {
    "crusoe": "mock_clouds.crusoe.server",
    "lambda": "mock_clouds.lambda_cloud.server",
    "nebius": "mock_clouds.nebius.server",
}


class _Server(Protocol):
    """A running front end (HTTP or gRPC) or the admin API."""

    @property
    def port(self) -> int: ...

    def stop(self) -> None: ...


class MockClouds:
    def __init__(
        self,
        state_dir: Path | str,
        *,
        scenario: Path | None = None,
        time_scale: float | None = None,
        host: str = "127.0.0.1",
        ports: dict[str, int] | None = None,
        configure: Callable[[WorldState], None] | None = None,
        providers: tuple[str, ...] = ("crusoe", "lambda", "nebius"),
        tls: bool = False,
    ) -> None:
        """`configure` may edit a *fresh* world before it starts (tests use it to shape capacity).

        `providers` limits which clouds are served (all three by default); the admin API always runs. `tls`
        serves the clouds over TLS (HTTPS, gRPC with TLS) instead of plaintext.
        """
        self.state_dir = Path(state_dir)
        self.host = host
        self._ports = {"crusoe": 0, "lambda": 0, "nebius": 0, "admin": 0, **(ports or {})}
        self._scenario = scenario
        self._time_scale = time_scale
        self._configure = configure
        self._providers = providers
        self.tls = tls
        self._tls: ServerTls | None = None
        self._servers: dict[str, _Server] = {}
        self._store: Snapshotter | None = None
        self._stopped = threading.Event()
        self.world: World
        self.endpoints: dict[str, Any] = {}  # the JSON document of endpoints.json

    def start(self) -> MockClouds:
        state = load_state(self.state_dir)
        if state is None:
            state = load_scenario(self._scenario)
            if self._configure is not None:
                self._configure(state)
        if self._time_scale is not None:
            state.time_scale = self._time_scale
        if "nebius" in self._providers:
            from .nebius.keys import ensure_service_accounts

            ensure_service_accounts(state)  # a fresh world (or one made before service accounts) gets them now
        state.extra_state.setdefault("admin_token", secrets.token_urlsafe(24))
        self._store = Snapshotter(self.state_dir, lambda: self.world.snapshot())
        self.world = World(state, on_change=self._store.mark_dirty)
        self._store.flush()
        if self.tls:
            from . import tls

            self._tls = tls.ensure(self.state_dir, self.host)
        self._start_servers()
        self.endpoints = self._endpoints()
        write_atomic(self.state_dir / ENDPOINTS_FILE, json.dumps(self.endpoints, indent=2).encode())
        return self

    def _start_servers(self) -> None:
        import importlib

        from .admin import serve as serve_admin

        for name in self._providers:
            module = importlib.import_module(_FRONT_ENDS[name])
            self._servers[name] = module.serve(self.world, self.host, self._ports[name], self._tls)
        self._servers["admin"] = serve_admin(self, self.host, self._ports["admin"])

    def port(self, name: str) -> int:
        return self._servers[name].port

    def _port_or_0(self, name: str) -> int:
        return self.port(name) if name in self._servers else 0

    def _endpoints(self) -> dict[str, Any]:
        """The document other tools read to find the mocks (written to DIR/endpoints.json, mode 0600).

        With TLS the Crusoe and Lambda URLs are `https://`, the Nebius target names `localhost` (a host name:
        gRPC clients then verify the certificate against it, where an IP literal target means plaintext), and
        the top level says `"tls": true` and `"ca_file"`, the CA certificate to trust.
        """
        state = self.world.state
        crusoe_project = state.providers[Provider.CRUSOE].projects[0]
        crusoe_cred = self._credential(Provider.CRUSOE, crusoe_project.owner)
        lambda_account = state.providers[Provider.LAMBDA].projects[0]
        nebius_projects = state.providers[Provider.NEBIUS].projects
        nebius_tenant = nebius_projects[0].owner
        base = f"{'https' if self._tls else 'http'}://{self.host}"
        document = {
            "pid": os.getpid(),
            "time_scale": state.time_scale,
            "crusoe": {
                "url": f"{base}:{self._port_or_0('crusoe')}/v1alpha5",
                "access_key_id": crusoe_cred.key_id,
                "secret_key": crusoe_cred.secret,
                "project_id": crusoe_project.id,
                "project_name": crusoe_project.name,
                "organization_id": crusoe_project.owner,
            },
            "lambda": {
                "url": f"{base}:{self._port_or_0('lambda')}/api/v1",
                "api_key": self._credential(Provider.LAMBDA, lambda_account.owner).secret,
            },
            "nebius": {
                "target": f"{self._nebius_host()}:{self._port_or_0('nebius')}",
                "token": self._credential(Provider.NEBIUS, nebius_tenant).secret,
                # the default project only, as a real profile's `parent-id`: a client discovers the tenant's other
                # projects (IAM ProjectService) and each project's subnet (VPC SubnetService)
                "project_id": nebius_projects[0].id,
                # mock extension: the terms of the tenant's capacity blocks, which a real customer has from its
                # contract (the Nebius APIs expose no price)
                "capacity_blocks": self._nebius_blocks({p.id for p in nebius_projects if p.owner == nebius_tenant}),
                **self._nebius_service_account(nebius_tenant),
            },
            "admin": {"url": f"http://{self.host}:{self.port('admin')}", "token": state.extra_state["admin_token"]},
        }
        if self._tls is not None:
            document["tls"] = True
            document["ca_file"] = str(self._tls.ca_file)
        top = ("pid", "time_scale", "admin", "tls", "ca_file")
        return {k: v for k, v in document.items() if k in top or k in self._servers}

    def _nebius_host(self) -> str:
        """The host of the Nebius target: `localhost` for a loopback server with TLS (the name its certificate
        holds, and a name, not an IP literal, tells clients to use TLS), else the host it listens on."""
        return "localhost" if self._tls is not None and self.host in ("127.0.0.1", "localhost") else self.host

    def _nebius_service_account(self, tenant: str) -> dict[str, str]:
        """The ids (not the key) of the tenant's service account and its authorized key, when it has one."""
        account = next((a for a in self.world.state.token_service.service_accounts if a.owner == tenant), None)
        if account is None:
            return {}
        return {"service_account_id": account.id, "public_key_id": account.public_key_id}

    def _nebius_blocks(self, projects: set[str]) -> dict[str, dict[str, object]]:
        """Capacity block id -> region, platform, contract price ($/GPU-h) and size (GPUs) of the blocks `projects`
        may use."""
        blocks = self.world.state.providers[Provider.NEBIUS].reservations
        return {b.id: {"region": b.regions[0], "platform": b.family,
                       "price_per_gpu_hour": b.price_cents_per_gpu_hour / 100, "gpus": b.quantity}
                for b in blocks if b.regions and (not b.scopes or projects & set(b.scopes))}

    def _credential(self, provider: Provider, owner: str) -> Credential:
        return next(c for c in self.world.state.credentials[provider] if c.owner == owner)

    def stop(self) -> None:
        """Stop every server, then write the final state. Idempotent."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        for server in self._servers.values():
            server.stop()
        if self._store is not None:
            self._store.close()

    def __enter__(self) -> MockClouds:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
