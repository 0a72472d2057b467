"""Small local network fixtures for the tests of cloud_sdk_core.net and of the SDKs' transports: a self-signed
certificate, a TLS front end (optionally forwarding to a plain upstream, such as a mock cloud), a CONNECT proxy that
records where it was asked to go, a server that never answers, and a port where nothing listens."""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import select
import socket
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

# What requests reads from the environment to pick a CA bundle or a proxy: tests clear them all first.
NETWORK_VARIABLES = (
    "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE", "SSL_CERT_DIR",
    "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy",
)  # fmt: skip


def clear_network_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset every variable of NETWORK_VARIABLES for the test."""
    for name in NETWORK_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@dataclass(frozen=True)
class Cert:
    """A self-signed certificate (its own CA) and its key, as PEM files."""

    cert: Path
    key: Path


def make_cert(directory: Path, host: str = "127.0.0.1", stem: str = "server") -> Cert:
    """A self-signed certificate for `host` (an IP address or a DNS name) in `directory`."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    try:
        alt: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        alt = x509.DNSName(host)
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName([alt]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / f"{stem}.pem", directory / f"{stem}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return Cert(cert_path, key_path)


def _pipe(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways between `a` and `b` until either side closes."""
    try:
        while True:
            readable, _, _ = select.select([a, b], [], [], 30)
            if not readable:
                return
            for source in readable:
                other = b if source is a else a
                data = source.recv(65536)
                if not data:
                    return
                other.sendall(data)
    except (OSError, ValueError):  # ValueError: `close()` closed a socket while this thread waited on it
        return
    finally:
        a.close()
        b.close()


class _Server:
    """A listening socket on 127.0.0.1 served by a daemon thread; `handle(conn)` runs per connection."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._closed = False
        self._conns: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self._conns.append(conn)
            threading.Thread(target=self._handle_safely, args=(conn,), daemon=True).start()

    def _handle_safely(self, conn: socket.socket) -> None:
        try:
            self.handle(conn)
        except (OSError, ssl.SSLError):
            conn.close()

    def handle(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Stop listening (new connections are refused) and cut every connection accepted so far."""
        self._closed = True
        with contextlib.suppress(OSError):  # wakes the accept() in progress, which would keep the port listening
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for conn in self._conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    def __enter__(self) -> _Server:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()


class TLSFront(_Server):
    """TLS on 127.0.0.1 with `cert`; each connection is forwarded to the plain `upstream` (host, port), or, with
    none, just handshaken and then held open until the client leaves."""

    def __init__(self, cert: Cert, upstream: tuple[str, int] | None = None) -> None:
        self._context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._context.load_cert_chain(str(cert.cert), str(cert.key))
        self._upstream = upstream
        self.handshakes = 0
        super().__init__()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def handle(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        tls = self._context.wrap_socket(conn, server_side=True)
        self.handshakes += 1
        tls.settimeout(None)
        if self._upstream is None:
            with contextlib.suppress(OSError):
                tls.recv(1)
            tls.close()
            return
        _pipe(tls, socket.create_connection(self._upstream, timeout=10))


class Forwarder(_Server):
    """Plain TCP on 127.0.0.1 forwarded to `upstream` (host, port): close it and the endpoint stops answering."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self._upstream = upstream
        super().__init__()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def handle(self, conn: socket.socket) -> None:
        _pipe(conn, socket.create_connection(self._upstream, timeout=10))


class ConnectProxy(_Server):
    """An HTTP proxy that only tunnels (CONNECT) and records each `host:port` it was asked for in `targets`. With
    `status`, it answers every CONNECT with that status line instead (e.g. "403 Forbidden"). Anything but CONNECT
    is answered 405."""

    def __init__(self, status: str | None = None) -> None:
        self._status = status
        self.targets: list[str] = []
        self.authorizations: list[str] = []  # each CONNECT's Proxy-Authorization ("" when it sent none)
        super().__init__()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def handle(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        header = b""
        while b"\r\n\r\n" not in header:
            chunk = conn.recv(4096)
            if not chunk:
                conn.close()
                return
            header += chunk
        head, rest = header.split(b"\r\n\r\n", 1)
        method, target, _ = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
        if method != "CONNECT":
            conn.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            conn.close()
            return
        self.targets.append(target)
        lines = head.decode("latin-1").split("\r\n")[1:]
        fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
        self.authorizations.append(fields.get("proxy-authorization", ""))
        if self._status is not None:
            conn.sendall(f"HTTP/1.1 {self._status}\r\nContent-Length: 0\r\n\r\n".encode())
            conn.close()
            return
        host, _, port = target.rpartition(":")
        upstream = socket.create_connection((host.strip("[]"), int(port)), timeout=10)
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        if rest:
            upstream.sendall(rest)
        conn.settimeout(None)
        _pipe(conn, upstream)


class Redirector(_Server):
    """Plain HTTP that answers every request `status` (a 3xx) with `Location: location`, recording each
    request's (method, path) in `requests`."""

    def __init__(self, location: str, status: str = "301 Moved Permanently") -> None:
        self._location = location
        self._status = status
        self.requests: list[tuple[str, str]] = []
        super().__init__()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def handle(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            length = next(
                (int(v) for k, _, v in (h.partition(":") for h in lines[1:]) if k.lower() == "content-length"), 0
            )
            while len(body) < length:
                body += conn.recv(4096)
            self.requests.append((method, path))
            fields = f"Location: {self._location}\r\nContent-Length: 0\r\nConnection: close"
            conn.sendall(f"HTTP/1.1 {self._status}\r\n{fields}\r\n\r\n".encode("latin-1"))


class SilentServer(_Server):
    """Accepts connections and never says a word (a TLS handshake or an HTTP request to it gets no answer)."""

    def handle(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            conn.settimeout(30)
            while conn.recv(4096):
                pass
        conn.close()


@contextlib.contextmanager
def closed_port() -> Iterator[int]:
    """A port of 127.0.0.1 bound (so nobody else takes it) but not listening: a connection there is refused."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]
    finally:
        sock.close()
