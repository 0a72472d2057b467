"""Entry point used by `mock_clouds.runner`: serve the Lambda Cloud mock on host:port (0 = a free port)."""

from __future__ import annotations

from ..core.world import World
from ..http import HttpServer
from ..tls import ServerTls
from .app import LambdaApp


def serve(world: World, host: str, port: int, tls: ServerTls | None = None) -> HttpServer:
    """HTTPS with `tls`, else plain HTTP."""
    return HttpServer(LambdaApp(world), host, port, tls.ssl_context() if tls else None)
