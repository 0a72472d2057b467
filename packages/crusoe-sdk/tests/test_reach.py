"""How the transport reaches Crusoe, through the wire: TLS verified against REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE /
SSL_CERT_FILE / the system bundle, HTTPS_PROXY honoured, redirects not followed, and an endpoint that has never
answered failing at once with one line saying why (ConnectError), without retries.

The TLS endpoint is a local TLS front end with a self-signed certificate forwarding to the in-process Crusoe mock;
the proxy a local CONNECT proxy that records where it was asked to go."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from cloud_sdk_core.net import CauseKind, system_ca_file
from crusoe_sdk import APIError, ConnectError, CrusoeClient, RequestNotSent, RetryPolicy
from crusoe_testkit import DEFAULT_PROJECT, client_for, create
from sdk_netkit import Cert, ConnectProxy, Redirector, TLSFront, clear_network_env, closed_port, make_cert

QUICK = 2.0  # seconds: a first contact that cannot succeed fails within this
RETRY = RetryPolicy(max_attempts=5, initial=0.05, maximum=0.05)  # would retry for a while if it retried


@pytest.fixture(autouse=True)
def no_network_env(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_network_env(monkeypatch)


@pytest.fixture
def cert(tmp_path: Path) -> Cert:
    return make_cert(tmp_path)


@pytest.fixture
def tls_front(clouds: Any, cert: Cert) -> Iterator[TLSFront]:
    mock = urlsplit(clouds.endpoints["crusoe"]["url"])
    with TLSFront(cert, upstream=(mock.hostname or "", mock.port or 80)) as front:
        yield front


def failing_fast(client: CrusoeClient, caplog: pytest.LogCaptureFixture) -> ConnectError:
    """The ConnectError of a first read, checked to come at once, unretried, as one line with no secret."""
    caplog.set_level(logging.DEBUG, logger="crusoe_sdk")
    started = time.monotonic()
    with pytest.raises(ConnectError) as info:
        client.list_locations().to_list()
    assert time.monotonic() - started < QUICK
    assert "retrying" not in caplog.text
    error = info.value
    assert isinstance(error, RequestNotSent) and "\n" not in str(error)
    assert client._transport._secret_key not in str(error) and client._transport._access_key_id not in str(error)
    return error


def test_a_name_that_does_not_resolve_fails_at_once(clouds: Any, caplog: pytest.LogCaptureFixture) -> None:
    client = client_for(clouds, base_url="https://api.example.invalid/v1alpha5", retry=RETRY)
    error = failing_fast(client, caplog)
    assert error.cause.kind is CauseKind.DNS and error.endpoint == "https://api.example.invalid/v1alpha5"
    assert str(error).startswith("cannot reach api.example.invalid:443 (https://api.example.invalid/v1alpha5): DNS: ")


def test_a_refused_connection_fails_at_once(clouds: Any, caplog: pytest.LogCaptureFixture) -> None:
    with closed_port() as port:
        client = client_for(clouds, base_url=f"http://127.0.0.1:{port}/v1alpha5", retry=RETRY)
        error = failing_fast(client, caplog)
    assert str(error) == f"cannot reach 127.0.0.1:{port} (http://127.0.0.1:{port}/v1alpha5): connection refused"
    assert error.method == "GET" and error.url.endswith("/locations")


def test_an_untrusted_certificate_fails_at_once_naming_the_bundle(
    clouds: Any, tls_front: TLSFront, caplog: pytest.LogCaptureFixture
) -> None:
    client = client_for(clouds, base_url=f"{tls_front.url}/v1alpha5", retry=RETRY)
    error = failing_fast(client, caplog)
    trusting = system_ca_file() or "/certifi/"
    assert error.cause.kind is CauseKind.TLS
    assert "certificate verify failed: self-signed certificate" in str(error) and trusting in str(error)
    assert "set SSL_CERT_FILE" in str(error)


@pytest.mark.parametrize("variable", ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"])
def test_a_ca_bundle_from_the_environment_is_trusted(
    clouds: Any, tls_front: TLSFront, cert: Cert, variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, str(cert.cert))
    with client_for(clouds, base_url=f"{tls_front.url}/v1alpha5") as client:
        assert "us-east1-a" in client.list_locations().to_list()
        vm = create(client, "over-tls-1").result()
        assert client.get_instance(vm.id).name == "over-tls-1"


def test_a_ca_variable_naming_no_file_is_a_value_error(
    clouds: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    with pytest.raises(ValueError, match="SSL_CERT_FILE=.*missing.pem: no such CA file"):
        client_for(clouds, base_url="https://api.example.com/v1alpha5")
    assert client_for(clouds).list_locations().to_list()  # a plain-HTTP endpoint needs no CA bundle


def test_https_proxy_is_used_and_no_proxy_honoured(
    clouds: Any, tls_front: TLSFront, cert: Cert, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(cert.cert))
    with ConnectProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        with client_for(clouds, base_url=f"{tls_front.url}/v1alpha5") as client:
            assert client.list_locations().to_list()
        assert proxy.targets == [f"127.0.0.1:{tls_front.port}"]
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        with client_for(clouds, base_url=f"{tls_front.url}/v1alpha5") as client:
            assert client.list_locations().to_list()
        assert len(proxy.targets) == 1  # bypassed


def test_the_environment_is_read_when_the_client_is_made_and_netrc_never(
    clouds: Any, tls_front: TLSFront, cert: Cert, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(cert.cert))
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password not-the-key\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))  # requests would send this login instead of the signed header
    with client_for(clouds, base_url=f"{tls_front.url}/v1alpha5") as client, ConnectProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)  # set once the client exists: not read
        assert client.list_locations().to_list()  # authenticated by its signature
        assert proxy.targets == []


def test_many_calls_at_once_keep_their_connections(clouds: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="urllib3")
    with client_for(clouds) as client, ThreadPoolExecutor(max_workers=32) as pool:
        assert all(pool.map(lambda _: client.list_locations().to_list(), range(96)))
    assert not [r for r in caplog.records if "Connection pool is full" in r.getMessage()]


def test_a_proxy_that_refuses_fails_at_once_naming_it(
    clouds: Any, tls_front: TLSFront, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with closed_port() as port:
        monkeypatch.setenv("HTTPS_PROXY", f"http://someone:pw@127.0.0.1:{port}")
        error = failing_fast(client_for(clouds, base_url=f"{tls_front.url}/v1alpha5", retry=RETRY), caplog)
    assert error.cause.kind is CauseKind.PROXY
    assert str(error).endswith(f"proxy http://127.0.0.1:{port}: connection refused") and "pw" not in str(error)


def test_a_proxy_refusing_the_tunnel_fails_at_once(
    clouds: Any, tls_front: TLSFront, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with ConnectProxy(status="403 Forbidden") as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        error = failing_fast(client_for(clouds, base_url=f"{tls_front.url}/v1alpha5", retry=RETRY), caplog)
    assert error.cause.kind is CauseKind.PROXY and "answered 403 Forbidden" in str(error)


def test_a_redirect_is_not_followed(clouds: Any) -> None:
    with Redirector("http://127.0.0.1:1/elsewhere") as server:
        client = client_for(clouds, base_url=f"{server.url}/v1alpha5", retry=RETRY)
        with pytest.raises(APIError) as info:
            create(client, "redirected-1")
    assert server.requests == [("POST", f"/v1alpha5/projects/{DEFAULT_PROJECT}/compute/vms/instances")]  # once, a POST
    assert info.value.status == 301 and "redirected to http://127.0.0.1:1/elsewhere" in str(info.value)
