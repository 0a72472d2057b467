"""Why a host cannot be reached, said in one short phrase, and the CA bundle to verify TLS against.

Standard library only. An SDK calls `diagnose` when a connection to its API fails before the host has ever answered,
so its error can say *why* (the name does not resolve, nothing listens, the certificate is not trusted, the proxy
refused) instead of quoting a connection pool's traceback. Causes are told apart by exception type and errno, never
by message text.
"""

from __future__ import annotations

import base64
import enum
import errno
import ipaddress
import os
import socket
import ssl
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import SplitResult, unquote, urlsplit

__all__ = [
    "FAIL_FAST",
    "SYSTEM_CA_FILES",
    "Cause",
    "CauseKind",
    "FirstContact",
    "ca_file",
    "diagnose",
    "system_ca_file",
]

#: Where Linux distributions keep their trust store's bundle, in the order nebius pysdk looks for one
#: (Debian/Ubuntu/Alpine, Fedora/RHEL, openSUSE).
SYSTEM_CA_FILES = (
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
)

_MAX_PROXY_HEADER = 64 * 1024


def system_ca_file() -> str | None:
    """The system trust store's CA bundle: the first of `SYSTEM_CA_FILES` that exists, else the bundle OpenSSL was
    built to use (`ssl.get_default_verify_paths().cafile`) if it exists, else None."""
    for path in SYSTEM_CA_FILES:
        if os.path.isfile(path):
            return path
    cafile = ssl.get_default_verify_paths().cafile
    return cafile if cafile and os.path.isfile(cafile) else None


def ca_file(environ: Mapping[str, str], names: Sequence[str]) -> str | None:
    """The CA bundle to verify TLS against: the value of the first variable of `names` that is set (non-empty) in
    `environ`, else `system_ca_file()`, else None (the caller's own default, e.g. certifi).

    A set variable must name a file that exists (or a directory, as requests allows for REQUESTS_CA_BUNDLE);
    otherwise ValueError says which variable names what."""
    for name in names:
        value = environ.get(name, "")
        if value:
            if not os.path.exists(value):
                raise ValueError(f"{name}={value}: no such CA file")
            return value
    return system_ca_file()


class CauseKind(enum.Enum):
    """What kind of failure stopped a connection (or OK: the host answered, TLS verified where asked)."""

    DNS = "dns"
    REFUSED = "refused"
    TIMEOUT = "timeout"
    UNREACHABLE = "unreachable"
    TLS = "tls"
    PROXY = "proxy"
    OK = "ok"


@dataclass(frozen=True)
class Cause:
    """Why `host:port` could not be reached: its `kind` and one short phrase (`text`) fit to end a message with."""

    kind: CauseKind
    text: str

    def __str__(self) -> str:
        return self.text


#: Causes a client should raise at once, without retrying, while its endpoint has never answered: a name that does
#: not resolve, nothing listening, no route, an untrusted certificate or a failing proxy do not pass in seconds.
FAIL_FAST = frozenset({CauseKind.DNS, CauseKind.REFUSED, CauseKind.UNREACHABLE, CauseKind.TLS, CauseKind.PROXY})


class FirstContact:
    """One endpoint of a client: whether it has ever answered, and, while it has not, why it cannot be reached.

    A transport calls `answered()` on every HTTP response and, when a connection fails, `unreachable(...)`: before
    the first answer that diagnoses the endpoint and returns the cause if it is one of FAIL_FAST (the transport
    raises at once); after it, or when the endpoint is reachable now or only slow, None (the transport retries as
    usual). `endpoint` is the URL without any credentials in it. Thread-safe (a flag that only goes up).
    """

    def __init__(self, url: str, *, timeout: float = 1.5) -> None:
        parts = urlsplit(url)
        self.tls = parts.scheme == "https"
        self.host = parts.hostname or ""
        try:
            self.port = parts.port or (443 if self.tls else 80)
        except ValueError:
            self.port = 443 if self.tls else 80
        netloc = parts.netloc.rpartition("@")[2]
        self.endpoint = parts._replace(netloc=netloc, query="", fragment="").geturl()
        self.timeout = timeout
        self._answered = False

    @property
    def has_answered(self) -> bool:
        return self._answered

    def answered(self) -> None:
        """The endpoint sent an HTTP response (any status): from now on its connection failures are transient."""
        self._answered = True

    def unreachable(self, *, ca_file: str | None, proxy: str | None = None, tls: bool | None = None) -> Cause | None:
        """The FAIL_FAST cause that stops the endpoint, if it has never answered; else None (see the class).

        `ca_file` and `proxy` are what the client itself uses; `tls` False skips certificate checks (a client
        that does not verify)."""
        if self._answered or not self.host:
            return None
        cause = diagnose(
            self.host,
            self.port,
            tls=self.tls if tls is None else tls,
            ca_file=ca_file,
            timeout=self.timeout,
            proxy=proxy,
        )
        return cause if cause.kind in FAIL_FAST else None

    def message(self, cause: Cause) -> str:
        """`cannot reach HOST:PORT (ENDPOINT): CAUSE`, one line."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"cannot reach {host}:{self.port} ({self.endpoint}): {cause.text}"


class _Failed(Exception):
    """A step of `diagnose` failed; carries its cause."""

    def __init__(self, cause: Cause) -> None:
        super().__init__(cause.text)
        self.cause = cause


def diagnose(
    host: str, port: int, *, tls: bool, ca_file: str | None, timeout: float = 1.5, proxy: str | None = None
) -> Cause:
    """Try to reach `host:port` once, as an HTTPS (`tls`) or plain HTTP client would, and say what stopped it.

    With `proxy` (an `http://` or `https://` proxy URL), the proxy is reached and asked to CONNECT to the host;
    anything the proxy fails or refuses is `CauseKind.PROXY`, named by the proxy URL without its credentials.
    With `tls`, the certificate is verified against `ca_file` (None: the system's default paths) for `host`.
    Every step shares one budget of about `timeout` seconds (name resolution runs in a daemon thread, as
    getaddrinfo cannot be interrupted). Never raises for a network failure; returns `CauseKind.OK` if all went."""
    deadline = time.monotonic() + timeout
    budget = f"{timeout:g} s"
    try:
        if proxy:
            sock = _through_proxy(proxy, host, port, deadline, budget, ca_file)
        else:
            sock = _connect(host, port, deadline, budget)
        with sock:
            if not tls:
                return Cause(CauseKind.OK, f"{host}:{port} accepts connections")
            _handshake(sock, host, ca_file, deadline, budget).close()
            return Cause(CauseKind.OK, f"{host}:{port} answers TLS with a trusted certificate")
    except _Failed as failed:
        return failed.cause


def _remaining(deadline: float, budget: str) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise _Failed(Cause(CauseKind.TIMEOUT, f"no answer within {budget}"))
    return left


def _resolve(host: str, port: int, deadline: float, budget: str) -> list[tuple[int, int, int, str, tuple[object, ...]]]:
    """The stream addresses of `host`, looked up in a daemon thread so a hanging resolver cannot exceed `deadline`."""
    try:
        ipaddress.ip_address(host)
        literal = True
    except ValueError:
        literal = False
    box: list[object] = []

    def lookup() -> None:
        try:
            box.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except (OSError, UnicodeError) as error:  # UnicodeError: not a name IDNA can encode
            box.append(error)

    if literal:
        lookup()
    else:
        thread = threading.Thread(target=lookup, name=f"resolve {host}", daemon=True)
        thread.start()
        thread.join(_remaining(deadline, budget))
    if not box:
        raise _Failed(Cause(CauseKind.DNS, f"DNS: no answer for {host} within {budget}"))
    found = box[0]
    if isinstance(found, socket.gaierror):
        raise _Failed(_dns_cause(host, found))
    if isinstance(found, UnicodeError):
        raise _Failed(Cause(CauseKind.DNS, f"DNS: {host!r} is not a valid host name"))
    if isinstance(found, OSError):
        raise _Failed(Cause(CauseKind.DNS, f"DNS: {host}: {found.strerror or type(found).__name__}"))
    return found  # type: ignore[return-value]


def _dns_cause(host: str, error: socket.gaierror) -> Cause:
    if error.errno in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)):
        return Cause(CauseKind.DNS, f"DNS: {host} does not resolve")
    if error.errno == socket.EAI_AGAIN:
        return Cause(CauseKind.DNS, f"DNS: {host} could not be looked up (temporary failure in name resolution)")
    return Cause(CauseKind.DNS, f"DNS: {host}: {error.strerror or 'lookup failed'}")


def _connect(host: str, port: int, deadline: float, budget: str) -> socket.socket:
    """A TCP connection to the first address of `host` that accepts one; the last address's failure otherwise."""
    failure = Cause(CauseKind.DNS, f"DNS: {host} has no address")
    for family, kind, proto, _name, address in _resolve(host, port, deadline, budget):
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(_remaining(deadline, budget))
            sock.connect(address)
            return sock
        except _Failed:
            sock.close()
            raise
        except OSError as error:
            sock.close()
            failure = _connect_cause(error, budget)
    raise _Failed(failure)


def _connect_cause(error: OSError, budget: str) -> Cause:
    if isinstance(error, ConnectionRefusedError):
        return Cause(CauseKind.REFUSED, "connection refused")
    if isinstance(error, TimeoutError) or error.errno == errno.ETIMEDOUT:
        return Cause(CauseKind.TIMEOUT, f"no answer within {budget}")
    if error.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
        return Cause(CauseKind.UNREACHABLE, os.strerror(error.errno).lower())
    text = os.strerror(error.errno).lower() if error.errno else type(error).__name__
    return Cause(CauseKind.UNREACHABLE, text)


def _context(ca_file: str | None) -> ssl.SSLContext:
    if ca_file and os.path.isdir(ca_file):
        return ssl.create_default_context(capath=ca_file)
    return ssl.create_default_context(cafile=ca_file)


def _handshake(sock: socket.socket, host: str, ca_file: str | None, deadline: float, budget: str) -> ssl.SSLSocket:
    """`sock` wrapped in TLS for `host`, its certificate verified against `ca_file`."""
    try:
        context = _context(ca_file)
    except (OSError, ssl.SSLError) as error:
        raise _Failed(
            Cause(CauseKind.TLS, f"TLS: cannot load the CA file {ca_file} ({type(error).__name__})")
        ) from None
    try:
        sock.settimeout(_remaining(deadline, budget))
        return context.wrap_socket(sock, server_hostname=host)
    except ssl.SSLCertVerificationError as error:
        trusting = ca_file or "the system's default CA paths"
        reason = error.verify_message or "certificate verify failed"
        raise _Failed(
            Cause(
                CauseKind.TLS,
                f"TLS: certificate verify failed: {reason} (trusting {trusting}; set SSL_CERT_FILE to the CA file "
                "that signed the server's certificate)",
            )
        ) from None
    except ssl.SSLError as error:
        raise _Failed(Cause(CauseKind.TLS, f"TLS: handshake failed: {error.reason or type(error).__name__}")) from None
    except TimeoutError:
        raise _Failed(Cause(CauseKind.TIMEOUT, f"TLS handshake: no answer within {budget}")) from None
    except OSError as error:
        text = os.strerror(error.errno).lower() if error.errno else type(error).__name__
        raise _Failed(Cause(CauseKind.TLS, f"TLS: handshake failed: {text}")) from None


def _through_proxy(
    proxy: str, host: str, port: int, deadline: float, budget: str, ca_file: str | None
) -> socket.socket:
    """A tunnel to `host:port` through the HTTP(S) proxy `proxy` (CONNECT); its failures are `CauseKind.PROXY`."""
    parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    scheme = parts.scheme or "http"
    proxy_host = parts.hostname or ""
    try:
        proxy_port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        raise _Failed(Cause(CauseKind.PROXY, "proxy URL has an invalid port")) from None
    shown = f"{scheme}://{proxy_host}:{proxy_port}"
    try:
        sock = _connect(proxy_host, proxy_port, deadline, budget)
        if scheme == "https":
            sock = _handshake(sock, proxy_host, ca_file, deadline, budget)
    except _Failed as failed:
        raise _Failed(Cause(CauseKind.PROXY, f"proxy {shown}: {failed.cause.text}")) from None
    try:
        status = _connect_request(sock, host, port, deadline, budget, _proxy_authorization(parts))
    except _Failed as failed:
        sock.close()
        raise _Failed(Cause(CauseKind.PROXY, f"proxy {shown}: {failed.cause.text}")) from None
    if not status.startswith("200"):
        sock.close()
        raise _Failed(Cause(CauseKind.PROXY, f"proxy {shown}: CONNECT {host}:{port} answered {status}"))
    return sock


def _proxy_authorization(parts: SplitResult) -> str:
    """The Proxy-Authorization header line for credentials in the proxy URL (as requests sends), else ""."""
    if parts.username is None:
        return ""
    pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
    return f"Proxy-Authorization: Basic {base64.b64encode(pair).decode('ascii')}\r\n"


def _connect_request(
    sock: socket.socket, host: str, port: int, deadline: float, budget: str, authorization: str
) -> str:
    """Send CONNECT for `host:port` and return the proxy's status (`"200 Connection established"`...)."""
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    request = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{authorization}\r\n"
    try:
        sock.settimeout(_remaining(deadline, budget))
        sock.sendall(request.encode("latin-1"))
        header = b""
        while b"\r\n\r\n" not in header and len(header) < _MAX_PROXY_HEADER:
            sock.settimeout(_remaining(deadline, budget))
            chunk = sock.recv(4096)
            if not chunk:
                raise _Failed(Cause(CauseKind.PROXY, "closed the connection without answering CONNECT"))
            header += chunk
    except TimeoutError:
        raise _Failed(Cause(CauseKind.TIMEOUT, f"no answer to CONNECT within {budget}")) from None
    except OSError as error:
        raise _Failed(_connect_cause(error, budget)) from None
    status_line = header.split(b"\r\n", 1)[0].decode("latin-1")
    parts = status_line.split(" ", 1)
    if len(parts) < 2 or not parts[0].startswith("HTTP/"):
        raise _Failed(Cause(CauseKind.PROXY, "answered CONNECT with no HTTP status"))
    return parts[1].strip()
