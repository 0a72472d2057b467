"""Channels over the wire: TLS verified against the CA file of SSL_CERT_FILE, a target that cannot be reached failing
at once before the first contact (and retried after it), keepalive, HTTPS_PROXY / NO_PROXY through a small CONNECT
proxy, and where each service is (endpoints)."""

from __future__ import annotations

import datetime
import logging
import select
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from nebius_sdk import NebiusClient, RequestNotSent, RetryPolicy, Unreachable, service_address
from nebius_sdk._transport import KEEPALIVE_OPTIONS, plan_channel, proxy_for

NO_RETRY_WAIT = 2.0  # seconds: the default RetryPolicy's retries alone would take at least 2.8 s
CA_VARIABLES = ("GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", "SSL_CERT_FILE")
PROXY_VARIABLES = ("grpc_proxy", "https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY",
                   "no_grpc_proxy", "no_proxy", "NO_PROXY")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*CA_VARIABLES, *PROXY_VARIABLES):
        monkeypatch.delenv(name, raising=False)


# --------------------------------------------------------------------------------------------- a CA of our own
def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A CA (ca.pem) and a server certificate it signed for `localhost` (key and chain as PEM bytes)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder().subject_name(_name("test CA")).issuer_name(_name("test CA"))
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=7))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder().subject_name(_name("localhost")).issuer_name(ca.subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=7))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    directory = tmp_path_factory.mktemp("pki")
    (directory / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return {"ca": directory / "ca.pem", "tls": (key_pem, cert.public_bytes(serialization.Encoding.PEM))}


@pytest.fixture
def tls_server(fake_factory: Any, pki: dict[str, Any], pb: Any) -> Any:
    server = fake_factory(tls=pki["tls"])
    server.on("InstanceService/Get", lambda r: pb.instance(r.id))
    return server


def test_tls_is_verified_against_the_ca_file_of_ssl_cert_file(
    tls_server: Any, pki: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(pki["ca"]))
    with NebiusClient("t", target=f"localhost:{tls_server.port}", timeout=10.0) as client:
        assert client.get_instance("computeinstance-e00a").metadata.id == "computeinstance-e00a"
    assert tls_server.calls[0].metadata["authorization"] == "Bearer t"


def test_grpc_default_ssl_roots_file_path_comes_first(
    tls_server: Any, pki: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", str(pki["ca"]))
    (tmp_path / "other.pem").write_text("")
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "other.pem"))
    with NebiusClient("t", target=f"localhost:{tls_server.port}", timeout=10.0) as client:
        client.get_instance("computeinstance-e00a")


def test_an_untrusted_certificate_fails_at_once_naming_the_variable(tls_server: Any) -> None:
    started = time.monotonic()
    with NebiusClient("t", target=f"localhost:{tls_server.port}") as client, pytest.raises(Unreachable) as info:
        client.get_instance("computeinstance-e00a")
    assert time.monotonic() - started < NO_RETRY_WAIT
    error = info.value
    assert error.cause.kind.name == "TLS" and "SSL_CERT_FILE" in str(error) and "\n" not in str(error)
    assert error.host == "localhost" and f"localhost:{tls_server.port}" in str(error)
    assert not tls_server.calls


def test_a_ca_variable_naming_no_file_is_refused_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    with pytest.raises(ValueError, match="SSL_CERT_FILE"):
        NebiusClient("t", target="compute.example.com:443")


def test_localhost_is_tls_a_loopback_address_plaintext_and_insecure_overrides() -> None:
    assert plan_channel("localhost:1").tls and plan_channel("compute.api.nebius.cloud:443").tls
    assert not plan_channel("127.0.0.1:1").tls and not plan_channel("[::1]:1").tls
    assert not plan_channel("localhost:1", insecure=True).tls and plan_channel("127.0.0.1:1", insecure=False).tls


# ------------------------------------------------------------------------------------------- unreachable
def test_a_name_that_does_not_resolve_fails_at_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="nebius_sdk")
    started = time.monotonic()
    with NebiusClient("t", target="compute.nowhere.invalid:443") as client, pytest.raises(Unreachable) as info:
        client.get_instance("computeinstance-e00a")
    assert time.monotonic() - started < 10  # generous: the resolver's answer may be slow; once, never retried
    assert info.value.cause.kind.name == "DNS" and info.value.host == "compute.nowhere.invalid"
    assert str(info.value).startswith("cannot reach compute.nowhere.invalid (target compute.nowhere.invalid:443): ")
    assert len([r for r in caplog.records if "attempt" in r.getMessage()]) == 1


def test_a_closed_port_fails_at_once(closed_port: int) -> None:
    started = time.monotonic()
    with NebiusClient("t", target=f"127.0.0.1:{closed_port}") as client, pytest.raises(Unreachable) as info:
        client.get_instance("computeinstance-e00a")
    assert time.monotonic() - started < NO_RETRY_WAIT
    assert info.value.cause.kind.name == "REFUSED" and isinstance(info.value, RequestNotSent)
    assert info.value.method == "/nebius.compute.v1.InstanceService/Get"


def test_after_the_first_contact_a_failed_connection_is_retried(fake_factory: Any, pb: Any) -> None:
    server = fake_factory()
    server.on("InstanceService/Get", lambda r: pb.instance(r.id))
    retry = RetryPolicy(max_attempts=3, initial=0.01, maximum=0.02)
    with NebiusClient("t", target=server.target, timeout=2.0, retry=retry) as client:
        client.get_instance("computeinstance-e00a")
        server.stop()
        with pytest.raises(RequestNotSent) as info:
            client.get_instance("computeinstance-e00a")
    assert not isinstance(info.value, Unreachable)


# ------------------------------------------------------------------------------------------------ keepalive
def test_channels_have_pysdks_keepalive(monkeypatch: pytest.MonkeyPatch) -> None:
    assert dict(KEEPALIVE_OPTIONS) == {
        "grpc.keepalive_time_ms": 20_000, "grpc.keepalive_timeout_ms": 10_000, "grpc.keepalive_permit_without_calls": 1,
    }
    opened: list[dict[str, Any]] = []
    real = grpc.insecure_channel

    def recording(target: str, options: Any = None, **kwargs: Any) -> Any:
        opened.append(dict(options or ()))
        return real(target, options=options, **kwargs)

    monkeypatch.setattr(grpc, "insecure_channel", recording)
    NebiusClient("t", target="127.0.0.1:1").close()
    [options] = opened
    assert dict(KEEPALIVE_OPTIONS).items() <= options.items()
    assert options["grpc.enable_http_proxy"] == 0  # no proxy variable set: grpc looks for none itself


# ---------------------------------------------------------------------------------------------------- proxies
class ConnectProxy:
    """An HTTP proxy on 127.0.0.1 that only tunnels (CONNECT), recording each host:port it was asked for; with
    `status`, it answers that (e.g. "403 Forbidden") instead."""

    def __init__(self, status: str | None = None) -> None:
        self.status = status
        self.targets: list[str] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def close(self) -> None:
        self._listener.close()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._tunnel, args=(conn,), daemon=True).start()

    def _tunnel(self, conn: socket.socket) -> None:
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            request, rest = head.split(b"\r\n\r\n", 1)
            method, target, _ = request.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
            self.targets.append(target)
            if method != "CONNECT" or self.status is not None:
                conn.sendall(f"HTTP/1.1 {self.status or '405 Method Not Allowed'}\r\n\r\n".encode())
                return
            host, _, port = target.rpartition(":")
            with socket.create_connection((host.strip("[]"), int(port)), timeout=10) as upstream:
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                upstream.sendall(rest)
                _pipe(conn, upstream)


def _pipe(a: socket.socket, b: socket.socket) -> None:
    while True:
        readable, _, _ = select.select([a, b], [], [], 30)
        if not readable:
            return
        for source in readable:
            try:
                data = source.recv(65536)
                if not data:
                    return
                (b if source is a else a).sendall(data)
            except OSError:
                return


@pytest.fixture
def proxy() -> Iterator[ConnectProxy]:
    server = ConnectProxy()
    yield server
    server.close()


def test_https_proxy_in_capitals_is_honoured(fake: Any, pb: Any, proxy: ConnectProxy,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    fake.on("InstanceService/Get", lambda r: pb.instance(r.id))
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    target = f"localhost:{fake.port}"
    with NebiusClient("t", target=target, insecure=True, timeout=10.0) as client:
        client.get_instance("computeinstance-e00a")
    assert proxy.targets == [target] and len(fake.calls) == 1


@pytest.mark.parametrize("variable", ["NO_PROXY", "no_proxy"])
def test_no_proxy_hosts_are_reached_directly(fake: Any, pb: Any, proxy: ConnectProxy, variable: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    fake.on("InstanceService/Get", lambda r: pb.instance(r.id))
    monkeypatch.setenv("https_proxy", proxy.url)
    monkeypatch.setenv(variable, "example.com,localhost")
    with NebiusClient("t", target=f"localhost:{fake.port}", insecure=True, timeout=10.0) as client:
        client.get_instance("computeinstance-e00a")
    assert proxy.targets == [] and len(fake.calls) == 1


def test_a_proxy_that_refuses_fails_at_once_naming_it(fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    refusing = ConnectProxy(status="403 Forbidden")
    monkeypatch.setenv("HTTPS_PROXY", refusing.url.replace("http://", "http://user:pa55word@"))
    started = time.monotonic()
    try:
        with NebiusClient("t", target=f"localhost:{fake.port}", insecure=True) as client, \
                pytest.raises(Unreachable) as info:
            client.get_instance("computeinstance-e00a")
    finally:
        refusing.close()
    assert time.monotonic() - started < NO_RETRY_WAIT
    assert info.value.cause.kind.name == "PROXY" and refusing.url in str(info.value)
    assert "pa55word" not in str(info.value) and not fake.calls


@pytest.mark.parametrize(
    ("environ", "target", "expected"),
    [
        ({}, "compute.api.nebius.cloud:443", None),
        ({"HTTPS_PROXY": "proxy:3128"}, "compute.api.nebius.cloud:443", "http://proxy:3128"),
        ({"grpc_proxy": "http://g:1", "https_proxy": "http://h:2"}, "a.example:443", "http://g:1"),
        ({"https_proxy": "http://h:2", "HTTPS_PROXY": "http://H:3"}, "a.example:443", "http://h:2"),
        ({"http_proxy": "http://p:1"}, "a.example:443", "http://p:1"),
        ({"HTTP_PROXY": "http://p:1"}, "a.example:443", None),  # requests uses it for http:// URLs only
        ({"HTTPS_PROXY": "http://p:1"}, "127.0.0.1:5", None),  # a loopback address: never through a proxy
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "*"}, "a.example:443", None),
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": ".nebius.cloud"}, "compute.api.nebius.cloud:443", None),
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "nebius.cloud"}, "compute.api.nebius.cloud:443", None),
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "ebius.cloud"}, "compute.api.nebius.cloud:443", "http://p:1"),
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "a.example:443"}, "a.example:443", None),
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "a.example:80"}, "a.example:443", "http://p:1"),
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "10.0.0.0/8"}, "10.1.2.3:443", None),
        ({"HTTPS_PROXY": "http://p:1", "no_proxy": "x.example", "NO_PROXY": "a.example"}, "a.example:443",
         "http://p:1"),
    ],
)
def test_which_proxy(environ: dict[str, str], target: str, expected: str | None) -> None:
    assert proxy_for(target, environ) == expected


# ---------------------------------------------------------------------------------------------------- endpoints
@pytest.mark.parametrize(
    ("service", "domain", "address"),
    [
        ("compute", "api.nebius.cloud:443", "compute.api.nebius.cloud:443"),
        ("nebius.compute.v1.InstanceService", "api.nebius.cloud:443", "compute.api.nebius.cloud:443"),
        ("nebius.iam.v1.TokenExchangeService", "api.nebius.cloud:443", "tokens.iam.api.nebius.cloud:443"),
        ("nebius.iam.v1.ProjectService", "api.nebius.cloud:443", "cpl.iam.api.nebius.cloud:443"),
        ("nebius.vpc.v1.SubnetService", "api.nebius.cloud:443", "vpc.api.nebius.cloud:443"),
        ("tokens.iam", "api.eu.example", "tokens.iam.api.eu.example:443"),
        ("tokens.iam", "127.0.0.1:50051", "127.0.0.1:50051"),  # the mock clouds: one server for every service
        ("vpc", "localhost:8443", "localhost:8443"),
        ("compute", "[::1]:9", "[::1]:9"),
    ],
)
def test_service_addresses(service: str, domain: str, address: str) -> None:
    assert service_address(service, domain) == address


def test_the_default_compute_target_is_resolved_from_the_domain() -> None:
    with NebiusClient("t") as client:
        assert client.target == "compute.api.nebius.cloud:443"
    with NebiusClient("t", domain="127.0.0.1:7") as client:
        assert client.target == "127.0.0.1:7"
