"""The Lambda adapter's endpoint and what an endpoint that cannot be reached reads as, through the wire: a name
that does not resolve, a refused connection and an untrusted certificate are Transient at once, with the SDK's one
line prefixed by the cloud and a hint of what to check (never to try again)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from vm_core.errors import ConfigError, Transient
from vm_core.provider import DescribesEndpoint
from vm_core.providers import _lambda_map
from vm_core.providers.lambda_cloud import LambdaProvider, plugin

sys.path.insert(0, str(Path(__file__).parents[2] / "cloud-sdk-core" / "tests"))
from sdk_netkit import TLSFront, clear_network_env, closed_port, make_cert  # noqa: E402

KEY = "secret_0123456789abcdef"


@pytest.fixture(autouse=True)
def no_network_env(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_network_env(monkeypatch)


def at(url: str) -> LambdaProvider:
    return plugin.connect({"api_key": KEY, "api_endpoint": url})


def unreachable(provider: LambdaProvider) -> Transient:
    started = time.monotonic()
    with pytest.raises(Transient) as info:
        list(provider.list_instances())
    assert time.monotonic() - started < 2.0  # at once: nothing was retried
    assert KEY not in str(info.value) and "\n" not in info.value.message
    return info.value


def test_the_endpoint_is_described(mock_clouds_factory: Callable[..., Any], connect: Callable[..., Any]) -> None:
    clouds = mock_clouds_factory(providers=("lambda",))
    provider = connect(clouds, "lambda")
    assert isinstance(provider, DescribesEndpoint) and provider.endpoint == clouds.endpoints["lambda"]["url"]
    assert plugin.connect({"api_key": KEY}).endpoint == "https://cloud.lambda.ai/api/v1"


def test_a_name_that_does_not_resolve_is_transient_and_says_so() -> None:
    error = unreachable(at("https://cloud.lambda.example.invalid/api/v1"))
    assert error.exit_code == 8 and error.message.startswith(
        "Lambda Cloud: cannot reach cloud.lambda.example.invalid:443 (https://cloud.lambda.example.invalid/api/v1): "
        "DNS: ")
    assert error.suggestion == "check api_endpoint and this machine's DNS"


def test_a_refused_connection_is_transient_and_says_so() -> None:
    with closed_port() as port:
        error = unreachable(at(f"http://127.0.0.1:{port}/api/v1"))
    assert error.message == (f"Lambda Cloud: cannot reach 127.0.0.1:{port} (http://127.0.0.1:{port}/api/v1): "
                             "connection refused")
    assert error.suggestion == "check api_endpoint and that this machine can reach it"


def test_an_untrusted_certificate_hints_at_ssl_cert_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with TLSFront(make_cert(tmp_path)) as front:
        error = unreachable(at(f"{front.url}/api/v1"))
    assert "TLS: certificate verify failed: self-signed certificate" in error.message
    assert error.suggestion == (
        "set SSL_CERT_FILE (or REQUESTS_CA_BUNDLE) to the CA file that signed the server's certificate")
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    with pytest.raises(ConfigError, match="SSL_CERT_FILE=.*missing.pem: no such CA file"):
        at("https://cloud.lambda.ai/api/v1")


def test_a_connect_error_translates_to_transient_and_plain_request_not_sent_keeps_its_rule() -> None:
    from cloud_sdk_core.net import Cause, CauseKind
    from lambda_sdk import ConnectError, RequestNotSent

    cause = Cause(CauseKind.PROXY, "proxy http://127.0.0.1:3128: connection refused")
    error = _lambda_map.to_vm_error(ConnectError("cannot reach x:443 (https://x/api/v1): " + cause.text, cause=cause,
                                                 endpoint="https://x/api/v1", method="GET", url="https://x/api/v1"))
    assert isinstance(error, Transient) and error.suggestion == "check HTTPS_PROXY and NO_PROXY"
    plain = _lambda_map.to_vm_error(RequestNotSent("request not sent", method="GET", url="https://x/api/v1"))
    assert isinstance(plain, Transient) and plain.message.startswith("cannot reach Lambda Cloud:")
