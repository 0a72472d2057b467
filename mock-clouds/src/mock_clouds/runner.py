"""Run the three mock clouds (plus a small admin API) in this process.

`MockClouds` is what `mock-clouds serve` runs in the foreground and what the pytest fixtures start in-process:

    clouds = MockClouds(state_dir).start()      # ports default to free ports
    clouds.endpoints["lambda"]["url"]           # the same document as DIR/endpoints.json
    clouds.stop()                               # persists the world; safe to call twice
"""

from __future__ import annotations

import json
import os
import secrets
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, cast

from .control import ENDPOINTS_FILE
from .core.models import Credential, Provider, WorldState
from .core.store import Snapshotter, load_state, write_atomic
from .core.world import World
from .scenario import load_scenario

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
    ) -> None:
        """`configure` may edit a *fresh* world before it starts (tests use it to shape capacity).

        `providers` limits which clouds are served (all three by default); the admin API always runs.
        """
        self.state_dir = Path(state_dir)
        self.host = host
        self._ports = {"crusoe": 0, "lambda": 0, "nebius": 0, "admin": 0, **(ports or {})}
        self._scenario = scenario
        self._time_scale = time_scale
        self._configure = configure
        self._providers = providers
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
        state.extra_state.setdefault("admin_token", secrets.token_urlsafe(24))
        self._store = Snapshotter(self.state_dir, lambda: self.world.snapshot())
        self.world = World(state, on_change=self._store.mark_dirty)
        self._store.flush()
        self._start_servers()
        self.endpoints = self._endpoints()
        write_atomic(self.state_dir / ENDPOINTS_FILE, json.dumps(self.endpoints, indent=2).encode())
        return self

    def _start_servers(self) -> None:
        import importlib

        from .admin import serve as serve_admin

        for name in self._providers:
            module = importlib.import_module(_FRONT_ENDS[name])
            self._servers[name] = module.serve(self.world, self.host, self._ports[name])
        self._servers["admin"] = serve_admin(self, self.host, self._ports["admin"])

    def port(self, name: str) -> int:
        return self._servers[name].port

    def _port_or_0(self, name: str) -> int:
        return self.port(name) if name in self._servers else 0

    def _endpoints(self) -> dict[str, Any]:
        """The document other tools read to find the mocks (written to DIR/endpoints.json, mode 0600)."""
        state = self.world.state
        crusoe_project = state.providers[Provider.CRUSOE].projects[0]
        crusoe_cred = self._credential(Provider.CRUSOE, crusoe_project.owner)
        lambda_account = state.providers[Provider.LAMBDA].projects[0]
        nebius_projects = state.providers[Provider.NEBIUS].projects
        nebius_tenant = nebius_projects[0].owner
        base = f"http://{self.host}"
        document = {
            "pid": os.getpid(),
            "time_scale": state.time_scale,
            "crusoe": {
                "url": f"{base}:{self._port_or_0('crusoe')}/v1alpha5",
                "access_key_id": crusoe_cred.key_id,
                "secret_key": crusoe_cred.secret,
                "project_id": crusoe_project.id,
                "organization_id": crusoe_project.owner,
            },
            "lambda": {
                "url": f"{base}:{self._port_or_0('lambda')}/api/v1",
                "api_key": self._credential(Provider.LAMBDA, lambda_account.owner).secret,
            },
            "nebius": {
                "target": f"{self.host}:{self._port_or_0('nebius')}",
                "token": self._credential(Provider.NEBIUS, nebius_tenant).secret,
                "project_id": nebius_projects[0].id,
                "subnet_id": self._nebius_subnet(nebius_projects[0].id),
                # mock extension: a tenant has one project per region, as on the real cloud
                "projects": {p.region: p.id for p in nebius_projects if p.owner == nebius_tenant},
                # mock extension: the terms of the tenant's capacity blocks, which a real customer has from its
                # contract (the Nebius APIs expose no price)
                "capacity_blocks": self._nebius_blocks({p.id for p in nebius_projects if p.owner == nebius_tenant}),
            },
            "admin": {"url": f"{base}:{self.port('admin')}", "token": state.extra_state["admin_token"]},
        }
        return {k: v for k, v in document.items() if k in ("pid", "time_scale", "admin") or k in self._servers}

    def _nebius_blocks(self, projects: set[str]) -> dict[str, dict[str, object]]:
        """Capacity block id -> region, platform and contract price ($/GPU-h) of the blocks `projects` may use."""
        blocks = self.world.state.providers[Provider.NEBIUS].reservations
        return {b.id: {"region": b.regions[0], "platform": b.family,
                       "price_per_gpu_hour": b.price_cents_per_gpu_hour / 100}
                for b in blocks if b.regions and (not b.scopes or projects & set(b.scopes))}

    def _nebius_subnet(self, project_id: str) -> str:
        """The default subnet of a Nebius project (instances need one for their network interface)."""
        # seed data of the scenario: a list of {"id", "project", ...} objects
        subnets = cast("list[dict[str, str]]", self.world.state.providers[Provider.NEBIUS].extra.get("subnets", []))
        return next((s["id"] for s in subnets if s.get("project") == project_id), "")

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
