"""A service account against the Nebius mock's TokenExchangeService (its RS256 checks, issued tokens that expire), and
TLS against the mock clouds started with `tls=True` (their own CA, trusted through SSL_CERT_FILE or not)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mock_clouds.control import exchange_count, nebius_service_account_credentials, set_token_lifetime
from nebius_sdk import CredentialsError, ServiceAccount, Unreachable


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def credentials_file(nebius_mock: Any, tmp_path: Path) -> Path:
    file = tmp_path / "credentials.json"
    file.write_text(json.dumps(nebius_service_account_credentials(nebius_mock.endpoints)))
    return file


def test_a_service_account_lists_instances_with_one_exchange(
    nebius_mock: Any, nebius_endpoint: dict[str, Any], credentials_file: Path, client_factory: Any
) -> None:
    before = exchange_count(nebius_mock.endpoints)
    account = ServiceAccount.from_credentials_file(credentials_file, domain=nebius_endpoint["target"])
    assert account.target == nebius_endpoint["target"]  # a loopback domain serves every service itself
    client = client_factory(nebius_endpoint, credentials=account)
    for _ in range(3):
        client.list_instances().to_list()
    assert exchange_count(nebius_mock.endpoints) == before + 1
    account.close()


def test_the_mock_token_is_renewed_at_90_percent_of_its_lifetime(
    nebius_mock: Any, nebius_endpoint: dict[str, Any], credentials_file: Path
) -> None:
    answer = set_token_lifetime(nebius_mock.endpoints, 50_000)
    clock = Clock()
    account = ServiceAccount.from_credentials_file(credentials_file, domain=nebius_endpoint["target"], clock=clock)
    before = exchange_count(nebius_mock.endpoints)
    first = account.token()
    clock.now = 0.89 * answer["expires_in"]
    assert account.token() == first
    clock.now = 0.91 * answer["expires_in"]
    assert account.token() != first
    assert exchange_count(nebius_mock.endpoints) == before + 2
    account.close()


def test_the_mock_refuses_a_key_it_does_not_know(
    nebius_endpoint: dict[str, Any], credentials_file: Path, tmp_path: Path
) -> None:
    document = json.loads(credentials_file.read_text())
    document["subject-credentials"]["kid"] = "publickey-e00nosuchkey000"
    (tmp_path / "other.json").write_text(json.dumps(document))
    account = ServiceAccount.from_credentials_file(tmp_path / "other.json", domain=nebius_endpoint["target"])
    with pytest.raises(CredentialsError) as info:
        account.token()
    assert info.value.code is not None and info.value.code.name == "UNAUTHENTICATED"
    assert "publickey-e00nosuchkey000" in str(info.value)
    account.close()


@pytest.fixture
def tls_mock(start_mock: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    for name in ("SSL_CERT_FILE", "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH"):
        monkeypatch.delenv(name, raising=False)
    return start_mock(tls=True)


def test_the_tls_mock_is_trusted_through_ssl_cert_file(
    tls_mock: Any, client_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint = tls_mock.endpoints["nebius"]
    assert endpoint["target"].startswith("localhost:")  # a name: TLS
    with pytest.raises(Unreachable) as info:
        client_factory(endpoint).list_instances().to_list()
    assert info.value.cause.kind.name == "TLS" and "SSL_CERT_FILE" in str(info.value)
    monkeypatch.setenv("SSL_CERT_FILE", tls_mock.endpoints["ca_file"])
    assert isinstance(client_factory(endpoint).list_instances().to_list(), list)
