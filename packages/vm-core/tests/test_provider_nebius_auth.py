"""The Nebius adapter's credentials and endpoint over the wire against the Nebius mock: exactly one credential kind
(token, token_file, token_command, a service account's credentials file or key), service accounts exchanged at the
mock's TokenExchangeService, the API domain and the compute target it resolves to, TLS trusted through
SSL_CERT_FILE, and what an unreachable endpoint or refused credentials become (without any secret)."""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from mock_clouds.control import exchange_count, nebius_service_account_credentials
from vm_core.errors import AuthError, ConfigError, Transient
from vm_core.providers.nebius import NebiusProvider, plugin

FAST_FAILURE = 2.0  # seconds: an unreachable endpoint fails at once, without the SDK's retries


@pytest.fixture(autouse=True)
def no_ambient_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NEBIUS_IAM_TOKEN", "SSL_CERT_FILE", "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", "HTTPS_PROXY",
                 "https_proxy", "grpc_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def nebius_with(mock_clouds: Any, connect: Callable[..., Any]) -> Callable[..., NebiusProvider]:
    """A provider of the mock's tenant with the mock's static token replaced by other credentials."""
    made: list[NebiusProvider] = []

    def make(**credentials: Any) -> NebiusProvider:
        provider: NebiusProvider = connect(mock_clouds, "nebius", token="", **credentials)
        made.append(provider)
        return provider

    yield make  # type: ignore[misc]
    for provider in made:
        provider.close()


@pytest.fixture
def credentials_file(mock_clouds: Any, tmp_path: Path) -> Path:
    """The mock tenant's service account credentials file, as the nebius CLI writes one."""
    file = tmp_path / "credentials.json"
    file.write_text(json.dumps(nebius_service_account_credentials(mock_clouds.endpoints)))
    file.chmod(0o600)
    return file


def _settings(**values: Any) -> dict[str, Any]:
    return {"project_id": "project-e00z6b02t8ddk96c49", **values}


# ------------------------------------------------------------------------------------------------ settings
def test_no_credentials_says_how_to_get_one() -> None:
    with pytest.raises(ConfigError) as info:
        plugin.connect(_settings())
    error = info.value
    assert error.exit_code == 4
    for name in ("NEBIUS_IAM_TOKEN", "token_file", "token_command", "service_account_file", "service_account_id"):
        assert name in error.message
    hint = str(error.hint)
    assert "federation" in hint and "not supported" in hint and "nebius iam get-access-token" in hint


def test_several_credentials_are_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="several credentials: token \\(NEBIUS_IAM_TOKEN\\), token_command"):
        plugin.connect(_settings(token="t0ken", token_command="nebius iam get-access-token"))
    with pytest.raises(ConfigError, match="token_file, service_account_id/public_key_id/private_key_file"):
        plugin.connect(_settings(token_file=str(tmp_path / "t"), service_account_id="serviceaccount-e00a"))


def test_a_service_account_key_names_the_parts_it_lacks() -> None:
    with pytest.raises(ConfigError, match="missing: public_key_id, private_key_file"):
        plugin.connect(_settings(service_account_id="serviceaccount-e00a"))


def test_the_token_command_is_split_as_a_shell_would() -> None:
    provider = plugin.connect(_settings(token_command="nebius iam get-access-token --profile 'my profile'"))
    try:
        assert provider._client.credentials.argv == (  # type: ignore[attr-defined]
            "nebius", "iam", "get-access-token", "--profile", "my profile")
    finally:
        provider.close()
    with pytest.raises(ConfigError, match="token_command"):
        plugin.connect(_settings(token_command="nebius 'unclosed"))


def test_the_endpoint_is_the_api_domain() -> None:
    cases = {None: "compute.api.nebius.cloud:443", "api.example.test:8443": "compute.api.example.test:8443",
             "127.0.0.1:50051": "127.0.0.1:50051", "localhost:7": "localhost:7"}
    for domain, target in cases.items():
        provider = plugin.connect(_settings(token="t0ken", **({"endpoint": domain} if domain else {})))
        try:
            assert provider.endpoint == target and target in repr(provider) and "t0ken" not in repr(provider)
        finally:
            provider.close()


# -------------------------------------------------------------------------------------- tokens over the wire
def test_a_token_file(nebius_with: Callable[..., NebiusProvider], mock_clouds: Any, tmp_path: Path) -> None:
    file = tmp_path / "token"
    file.write_text(mock_clouds.endpoints["nebius"]["token"] + "\n")
    nebius = nebius_with(token_file=str(file))
    assert nebius.endpoint == mock_clouds.endpoints["nebius"]["target"]
    list(nebius.list_instances())
    file.write_text("not-the-tenants-token-at-all")
    with pytest.raises(AuthError) as info:
        list(nebius.list_instances())
    assert info.value.exit_code == 4 and "not-the-tenants" not in str(info.value)


def test_a_missing_token_file_is_an_auth_error_naming_it(nebius_with: Callable[..., NebiusProvider],
                                                         tmp_path: Path) -> None:
    nebius = nebius_with(token_file=str(tmp_path / "nowhere"))
    with pytest.raises(AuthError, match="token file") as info:
        list(nebius.list_instances())
    assert str(tmp_path / "nowhere") in info.value.message and info.value.exit_code == 4


def test_a_token_command(nebius_with: Callable[..., NebiusProvider], mock_clouds: Any, tmp_path: Path) -> None:
    (tmp_path / "token").write_text(mock_clouds.endpoints["nebius"]["token"])
    script = tmp_path / "get-token.py"
    script.write_text(f"print(open({str(tmp_path / 'token')!r}).read())\n")
    nebius = nebius_with(token_command=shlex.join([sys.executable, str(script)]))
    list(nebius.list_instances())
    assert nebius.find_instance("no-such-vm") is None


# ----------------------------------------------------------------------------------- service accounts
def test_a_service_account_file_is_exchanged_once_for_many_calls(
    nebius_with: Callable[..., NebiusProvider], mock_clouds: Any, credentials_file: Path
) -> None:
    before = exchange_count(mock_clouds.endpoints)
    nebius = nebius_with(service_account_file=str(credentials_file))
    for _ in range(3):
        list(nebius.list_instances())
    assert nebius.find_instance("no-such-vm") is None
    assert exchange_count(mock_clouds.endpoints) == before + 1


def test_a_service_account_key_file(nebius_with: Callable[..., NebiusProvider], mock_clouds: Any,
                                    credentials_file: Path, tmp_path: Path) -> None:
    subject = json.loads(credentials_file.read_text())["subject-credentials"]
    (tmp_path / "private.pem").write_text(subject["private-key"])
    nebius = nebius_with(service_account_id=subject["sub"], public_key_id=subject["kid"],
                         private_key_file=str(tmp_path / "private.pem"))
    list(nebius.list_instances())
    inline = nebius_with(service_account_id=subject["sub"], public_key_id=subject["kid"],
                         private_key=subject["private-key"])
    list(inline.list_instances())


def test_a_refused_service_account_is_an_auth_error_without_its_key(
    nebius_with: Callable[..., NebiusProvider], credentials_file: Path, tmp_path: Path
) -> None:
    document = json.loads(credentials_file.read_text())
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    document["subject-credentials"]["private-key"] = other  # not the key its authorized key was made from
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(document))
    nebius = nebius_with(service_account_file=str(forged))
    with pytest.raises(AuthError) as info:
        list(nebius.list_instances())
    error = info.value
    assert error.exit_code == 4 and "service account" in error.message and "UNAUTHENTICATED" in error.message
    shown = f"{error.message} {error.hint}"
    assert "\n" not in error.message and not any(line in shown for line in other.splitlines()[1:-1])


def test_a_malformed_credentials_file_is_refused_at_connect(mock_clouds: Any, connect: Callable[..., Any],
                                                            tmp_path: Path) -> None:
    (tmp_path / "credentials.json").write_text('{"subject-credentials": {"alg": "RS256"}}')
    with pytest.raises(AuthError, match="lacks private-key, kid, iss, sub") as info:
        connect(mock_clouds, "nebius", token="", service_account_file=str(tmp_path / "credentials.json"))
    assert str(tmp_path / "credentials.json") in info.value.message


# --------------------------------------------------------------------------------------- reaching the API
def test_an_unreachable_endpoint_is_transient_at_once_in_one_line(closed_port: int) -> None:
    # a listing first asks IAM for the tenant's projects (cpl.iam.<domain>)
    for domain, named, within in ((f"127.0.0.1:{closed_port}", "connection refused", FAST_FAILURE),
                                  ("api.nowhere.invalid:443", "cpl.iam.api.nowhere.invalid", 10.0)):
        provider = plugin.connect(_settings(token="t0ken", endpoint=domain))
        started = time.monotonic()
        try:
            with pytest.raises(Transient) as info:
                list(provider.list_instances())
        finally:
            provider.close()
        assert time.monotonic() - started < within  # the name's resolver may be slow to say no
        assert info.value.exit_code == 8 and named in info.value.message and "\n" not in info.value.message


def test_tls_trusted_through_ssl_cert_file(mock_clouds_factory: Callable[..., Any], connect: Callable[..., Any],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    clouds = mock_clouds_factory(tls=True, providers=("nebius",))
    assert clouds.endpoints["nebius"]["target"].startswith("localhost:")
    untrusted = connect(clouds, "nebius")
    with pytest.raises(Transient, match="SSL_CERT_FILE") as info:
        list(untrusted.list_instances())
    assert "TLS" in info.value.message
    untrusted.close()
    monkeypatch.setenv("SSL_CERT_FILE", clouds.endpoints["ca_file"])
    trusted = connect(clouds, "nebius")
    list(trusted.list_instances())
    trusted.close()


@pytest.fixture
def closed_port() -> Any:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]
