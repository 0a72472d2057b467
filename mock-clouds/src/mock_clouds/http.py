"""A small HTTP layer for the REST mocks: stdlib ThreadingHTTPServer, a regex router, msgspec JSON.

The server applies fault injection around the application (latency, injected errors, dropped responses) so the
front ends only describe their API. A front end implements `RestApp`.

With an `ssl.SSLContext` the server speaks HTTPS: the listening socket is wrapped, and each connection's TLS
handshake runs in that connection's own thread (never in the accepting loop, which a slow client would stall).
A client that fails the handshake (it does not trust the certificate, or speaks plain HTTP) is routine.
"""

from __future__ import annotations

import logging
import re
import ssl
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, Protocol, TypeVar, overload

import msgspec

from .core.faults import FaultInjector

log = logging.getLogger("mock_clouds.http")
T = TypeVar("T")

MAX_BODY_BYTES = 1 << 20
# Before a 413 goes out, what the client keeps sending of an oversized body is read and discarded (up to this
# size, until it pauses), like nginx's lingering close: a client still sending would otherwise see the
# connection reset instead of the answer.
MAX_DRAIN_BYTES = 64 << 20
DRAIN_IDLE_SECONDS = 0.5


class BadRequestBody(ValueError):
    """The body is not valid JSON or not the expected type."""


@dataclass
class Request:
    method: str
    path: str
    raw_query: str
    headers: dict[str, str]  # lower-case names
    body: bytes = b""
    params: dict[str, str] = field(default_factory=dict)  # path parameters from the router

    @property
    def query(self) -> dict[str, list[str]]:
        return urllib.parse.parse_qs(self.raw_query, keep_blank_values=True)

    def query_one(self, name: str, default: str = "") -> str:
        values = self.query.get(name)
        return values[-1] if values else default

    @overload
    def json(self) -> Any: ...

    @overload
    def json(self, type_: type[T]) -> T: ...

    def json(self, type_: Any = Any) -> Any:
        """Decode the body as JSON into `type_`; raises BadRequestBody with a readable reason."""
        if not self.body.strip():
            raise BadRequestBody("request body is empty")
        try:
            return msgspec.json.decode(self.body, type=type_)
        except msgspec.DecodeError as exc:
            raise BadRequestBody(str(exc)) from exc


@dataclass
class Response:
    status: int
    payload: Any = None
    headers: dict[str, str] = field(default_factory=dict)

    def body(self) -> bytes:
        return b"" if self.payload is None else msgspec.json.encode(self.payload)


Handler = Callable[[Request], Response]


H = TypeVar("H")  # what a route leads to: a Handler, or a front end's own handler type


class Router(Generic[H]):
    def __init__(self) -> None:
        self._routes: list[tuple[str, re.Pattern[str], H]] = []

    def add(self, method: str, pattern: str, handler: H) -> None:
        """`pattern` uses `{name}` for one path segment, e.g. "/projects/{project_id}/compute/vms/types"."""
        regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", pattern)
        self._routes.append((method, re.compile(f"^{regex}$"), handler))

    def resolve(self, method: str, path: str) -> tuple[H | None, dict[str, str], bool]:
        """(handler, params, path_known). path_known is True when the path exists for another method."""
        path_known = False
        for route_method, regex, handler in self._routes:
            match = regex.match(path)
            if match:
                if route_method == method:
                    return handler, {k: urllib.parse.unquote(v) for k, v in match.groupdict().items()}, True
                path_known = True
        return None, {}, path_known


class RestApp(Protocol):
    faults: FaultInjector

    def handle(self, request: Request) -> Response:
        """Serve one request; never raises for bad input."""
        ...

    def reject(self, status: int, message: str) -> Response:
        """A provider-shaped error for problems found before routing (size, framing, unknown path)."""
        ...

    def injected_fault(self, status: int) -> Response:
        """A provider-shaped 429/500/503 for an injected error."""
        ...


INJECTED_STATUSES = [500, 503, 429]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    timeout = 30
    app: RestApp  # set on the subclass made per server

    def setup(self) -> None:
        """Set the timeout and streams, then finish the TLS handshake of an HTTPS connection (in this thread)."""
        super().setup()
        if isinstance(self.connection, ssl.SSLSocket):
            self.connection.do_handshake()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        log.debug("%s %s", self.address_string(), format % args)

    def _serve(self) -> None:
        request = self._read_request()
        if request is None:
            return
        faults = self.app.faults
        delay = faults.latency_seconds()
        if delay:
            time.sleep(delay)
        if faults.roll_error():
            self._send(self.app.injected_fault(faults.pick(INJECTED_STATUSES)))
            return
        try:
            response = self.app.handle(request)
        except Exception:  # a bug in a front end must not kill the server thread
            log.exception("unhandled error serving %s %s", request.method, request.path)
            response = self.app.injected_fault(500)
        if faults.roll_drop():
            self.close_connection = True
            self.connection.shutdown(2)  # the action happened; the client gets no answer
            return
        self._send(response)

    def _read_request(self) -> Request | None:
        url = urllib.parse.urlsplit(self.path)
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            length = int(headers.get("content-length", "0") or "0")
        except ValueError:
            length = -1
        if length < 0 or "transfer-encoding" in headers:
            self.close_connection = True
            self._send(self.app.reject(400, "invalid Content-Length"))
            return None
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            self._drain(min(length, MAX_DRAIN_BYTES))
            self._send(self.app.reject(413, f"request body larger than {MAX_BODY_BYTES} bytes"))
            return None
        body = self.rfile.read(length) if length else b""
        return Request(method=self.command, path=url.path, raw_query=url.query, headers=headers, body=body)

    def _drain(self, length: int) -> None:
        """Discard up to `length` bytes of body; stops when the client pauses. The connection is closed after."""
        self.connection.settimeout(DRAIN_IDLE_SECONDS)
        try:
            while length > 0 and (chunk := self.rfile.read1(min(length, 1 << 16))):
                length -= len(chunk)
        except OSError:
            pass  # paused or gone: the 413 goes out (or fails) either way
        finally:
            self.connection.settimeout(self.timeout)

    def _send(self, response: Response) -> None:
        body = response.body()
        self.send_response(response.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:
            self.send_header("Connection", "close")  # or the client reuses the socket and loses its next request
        for name, value in response.headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _serve


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512  # listen backlog: bursts of hundreds of new connections must not be reset

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up or resets its connection is routine (clients time out, faults drop
        answers): note it at debug level instead of printing a traceback; anything else is still reported."""
        if isinstance(sys.exc_info()[1], ConnectionError | ssl.SSLError | TimeoutError):
            log.debug("connection from %s closed by the client or failed its TLS handshake", client_address)
            return
        super().handle_error(request, client_address)


class HttpServer:
    """A RestApp served on host:port (0 = any free port) from a background thread; HTTPS with `tls`."""

    def __init__(self, app: RestApp, host: str = "127.0.0.1", port: int = 0,
                 tls: ssl.SSLContext | None = None) -> None:
        handler = type("BoundHandler", (_Handler,), {"app": app})
        self._server = _Server((host, port), handler)
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True,
                                                  do_handshake_on_connect=False)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"http-{port}", daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
