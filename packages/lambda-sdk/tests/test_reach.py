"""How the transport reaches Lambda, through the wire: TLS verified against REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE /
SSL_CERT_FILE / the system bundle, HTTPS_PROXY honoured, redirects not followed (a redirected launch must not
become a GET), and an endpoint that has never answered failing at once with one line saying why (ConnectError),
without retries, while an endpoint that has answered keeps its retries.

The TLS endpoint is a local TLS front end with a self-signed certificate forwarding to the in-process Lambda mock;
the proxy a local CONNECT proxy that records where it was asked to go."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from cloud_sdk_core.net import CauseKind, system_ca_file
from lambda_sdk import APIError, ConnectError, LambdaClient, RequestNotSent, RetryPolicy
from sdk_netkit import Cert, ConnectProxy, Forwarder, Redirector, TLSFront, clear_network_env, closed_port, make_cert

QUICK = 2.0  # seconds: a first contact that cannot succeed fails within this
RETRY = RetryPolicy(max_attempts=5, initial=0.05, maximum=0.05)  # would retry for a while if it retried
KEY = "secret_0123456789abcdef"


@pytest.fixture(autouse=True)
def no_network_env(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_network_env(monkeypatch)


@pytest.fixture
def cert(tmp_path: Path) -> Cert:
    return make_cert(tmp_path)


def mock_address(clouds: Any) -> tuple[str, int]:
    mock = urlsplit(clouds.endpoints["lambda"]["url"])
    return mock.hostname or "", mock.port or 80


@pytest.fixture
def tls_front(lambda_clouds: Any, cert: Cert) -> Iterator[TLSFront]:
    with TLSFront(cert, upstream=mock_address(lambda_clouds)) as front:
        yield front


def dead_client(base_url: str) -> LambdaClient:
    return LambdaClient(KEY, base_url=base_url, rate_limit=None, retry=RETRY)


def failing_fast(client: LambdaClient, caplog: pytest.LogCaptureFixture) -> ConnectError:
    """The ConnectError of a first read, checked to come at once, unretried, as one line with no secret."""
    caplog.set_level(logging.DEBUG, logger="lambda_sdk")
    started = time.monotonic()
    with pytest.raises(ConnectError) as info:
        client.list_regions().to_list()
    assert time.monotonic() - started < QUICK
    assert "retrying" not in caplog.text
    error = info.value
    assert isinstance(error, RequestNotSent) and "\n" not in str(error) and KEY not in str(error)
    return error


def test_a_name_that_does_not_resolve_fails_at_once(caplog: pytest.LogCaptureFixture) -> None:
    error = failing_fast(dead_client("https://cloud.example.invalid/api/v1"), caplog)
    assert error.cause.kind is CauseKind.DNS and error.endpoint == "https://cloud.example.invalid/api/v1"
    assert str(error).startswith("cannot reach cloud.example.invalid:443 (https://cloud.example.invalid/api/v1): DNS:")


def test_a_refused_connection_fails_at_once(caplog: pytest.LogCaptureFixture) -> None:
    with closed_port() as port:
        error = failing_fast(dead_client(f"http://127.0.0.1:{port}/api/v1"), caplog)
    assert str(error) == f"cannot reach 127.0.0.1:{port} (http://127.0.0.1:{port}/api/v1): connection refused"
    assert error.method == "GET" and error.url.endswith("/regions")


def test_once_the_endpoint_answered_a_refused_connection_is_retried(
    lambda_clouds: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with Forwarder(mock_address(lambda_clouds)) as front:
        client = LambdaClient(lambda_clouds.endpoints["lambda"]["api_key"], base_url=f"{front.url}/api/v1",
                              rate_limit=None, retry=RetryPolicy(max_attempts=3, initial=0.01, maximum=0.01))
        assert client.list_regions().to_list()
    caplog.set_level(logging.DEBUG, logger="lambda_sdk")
    with pytest.raises(RequestNotSent) as info:
        client.list_regions().to_list()
    assert not isinstance(info.value, ConnectError) and caplog.text.count("after RequestNotSent") == 2


def test_an_untrusted_certificate_fails_at_once_naming_the_bundle(
    tls_front: TLSFront, caplog: pytest.LogCaptureFixture
) -> None:
    error = failing_fast(dead_client(f"{tls_front.url}/api/v1"), caplog)
    assert error.cause.kind is CauseKind.TLS
    assert "certificate verify failed: self-signed certificate" in str(error)
    assert (system_ca_file() or "/certifi/") in str(error) and "set SSL_CERT_FILE" in str(error)


@pytest.mark.parametrize("variable", ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"])
def test_a_ca_bundle_from_the_environment_is_trusted(
    lambda_clouds: Any, tls_front: TLSFront, cert: Cert, variable: str, monkeypatch: pytest.MonkeyPatch,
    make_client: Callable[..., LambdaClient],
) -> None:
    monkeypatch.setenv(variable, str(cert.cert))
    client = make_client(lambda_clouds, base_url=f"{tls_front.url}/api/v1")
    assert "gpu_1x_a10" in client.instance_types()


def test_a_ca_variable_naming_no_file_is_a_value_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    with pytest.raises(ValueError, match="SSL_CERT_FILE=.*missing.pem: no such CA file"):
        LambdaClient(KEY)
    assert LambdaClient(KEY, base_url="http://127.0.0.1:1/api/v1")  # a plain-HTTP endpoint needs no CA bundle


def test_https_proxy_is_used_and_no_proxy_honoured(
    lambda_clouds: Any, tls_front: TLSFront, cert: Cert, monkeypatch: pytest.MonkeyPatch,
    make_client: Callable[..., LambdaClient],
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(cert.cert))
    with ConnectProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        assert make_client(lambda_clouds, base_url=f"{tls_front.url}/api/v1").list_regions().to_list()
        assert proxy.targets == [f"127.0.0.1:{tls_front.port}"]
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        assert make_client(lambda_clouds, base_url=f"{tls_front.url}/api/v1").list_regions().to_list()
        assert len(proxy.targets) == 1  # bypassed


def test_the_environment_is_read_when_the_client_is_made_and_netrc_never(
    lambda_clouds: Any, tls_front: TLSFront, cert: Cert, monkeypatch: pytest.MonkeyPatch,
    make_client: Callable[..., LambdaClient], tmp_path: Path,
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(cert.cert))
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password not-the-key\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))  # requests would send this login instead of the API key
    client = make_client(lambda_clouds, base_url=f"{tls_front.url}/api/v1")
    with ConnectProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)  # set once the client exists: not read
        assert client.list_regions().to_list()  # authenticated by its API key
        assert proxy.targets == []


def test_a_proxy_that_refuses_fails_at_once_naming_it(
    tls_front: TLSFront, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with closed_port() as port:
        monkeypatch.setenv("HTTPS_PROXY", f"http://someone:pw@127.0.0.1:{port}")
        error = failing_fast(dead_client(f"{tls_front.url}/api/v1"), caplog)
    assert error.cause.kind is CauseKind.PROXY
    assert str(error).endswith(f"proxy http://127.0.0.1:{port}: connection refused") and "pw" not in str(error)


def test_a_redirected_launch_is_not_followed(caplog: pytest.LogCaptureFixture) -> None:
    with Redirector("http://127.0.0.1:1/elsewhere") as server:
        client = dead_client(f"{server.url}/api/v1")
        with pytest.raises(APIError) as info:
            client.launch_instance(region_name="us-east-1", instance_type_name="gpu_1x_a10", ssh_key_names=["k"])
    assert server.requests == [("POST", "/api/v1/instance-operations/launch")]  # once, and still a POST
    assert info.value.status == 301 and "redirected to http://127.0.0.1:1/elsewhere" in str(info.value)
