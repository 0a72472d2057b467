"""Construction, cheap import, secrets kept out of reprs/logs/errors, and what goes on the wire."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import requests
from crusoe_sdk import AuthError, ConnectError, CrusoeClient
from crusoe_sdk.client import DEFAULT_BASE_URL
from crusoe_testkit import DEFAULT_PROJECT, client_for, create
from sdk_netkit import closed_port

SRC = Path(__file__).resolve().parents[1] / "src"
SECRET = "dGVzdC1zZWNyZXQta2V5LTEyMzQ1Njc4OTA"


def test_import_is_cheap() -> None:
    code = (
        "import crusoe_sdk, sys\n"
        "assert not {'requests', 'grpc', 'urllib3', 'msgspec'} & set(sys.modules), sorted(sys.modules)\n"
        "crusoe_sdk.NotFound; crusoe_sdk.InstanceState\n"  # errors and models need no HTTP stack either
        "assert not {'requests', 'grpc', 'urllib3'} & set(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": str(SRC)}, check=True, timeout=60)


def test_all_lists_exactly_the_lazy_exports() -> None:
    import crusoe_sdk

    assert crusoe_sdk.__all__ == sorted(crusoe_sdk._EXPORTS)
    assert all(getattr(crusoe_sdk, name) is not None for name in crusoe_sdk.__all__)


def test_credentials_and_defaults_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRUSOE_ACCESS_KEY_ID", "KEY")
    monkeypatch.setenv("CRUSOE_SECRET_KEY", SECRET)
    monkeypatch.setenv("CRUSOE_DEFAULT_PROJECT", "proj-1")  # a name: looked up on first use, not now
    monkeypatch.delenv("CRUSOE_API_ENDPOINT", raising=False)
    client = CrusoeClient()
    assert (client.base_url, client.project) == (DEFAULT_BASE_URL, "proj-1")
    monkeypatch.setenv("CRUSOE_API_ENDPOINT", "http://127.0.0.1:1/v1alpha5/")
    assert CrusoeClient().base_url == "http://127.0.0.1:1/v1alpha5"
    assert CrusoeClient(project_id="explicit").project_id == "explicit"  # an id, used as is
    monkeypatch.setenv("CRUSOE_DEFAULT_PROJECT", DEFAULT_PROJECT)
    assert CrusoeClient().project_id == DEFAULT_PROJECT  # a UUID, used as is (the endpoint above is dead)
    with pytest.raises(ValueError, match="not both"):
        CrusoeClient(project="a", project_id="b")


def test_missing_or_malformed_credentials_are_a_value_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CRUSOE_ACCESS_KEY_ID", "CRUSOE_SECRET_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="CRUSOE_ACCESS_KEY_ID"):
        CrusoeClient()
    with pytest.raises(ValueError) as info:
        CrusoeClient("KEY", "***not-base64***")
    assert "***not-base64***" not in str(info.value)


def test_without_a_project_it_is_looked_up_when_first_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    """No project given: construction and building a pager make no call; the first page looks the project up
    (here against a dead endpoint, which fails at once: test_reach.py)."""
    monkeypatch.delenv("CRUSOE_DEFAULT_PROJECT", raising=False)
    with closed_port() as port:
        client = CrusoeClient("KEY", SECRET, base_url=f"http://127.0.0.1:{port}/v1alpha5")
        pager = client.list_instances()
        with pytest.raises(ConnectError, match="/organizations/projects|connection refused"):
            pager.to_list()


def test_secrets_stay_out_of_reprs_logs_and_errors(clouds: Any, caplog: pytest.LogCaptureFixture) -> None:
    endpoint = clouds.endpoints["crusoe"]
    secrets = (endpoint["secret_key"], endpoint["access_key_id"])
    caplog.set_level(logging.DEBUG)
    client = client_for(clouds)
    vm = create(client, "secret-1").result()
    client.begin_delete_instance(vm.id).result()
    wrong = client_for(clouds, secret_key="c29tZS1vdGhlci1zZWNyZXQ")
    with pytest.raises(AuthError) as info:
        wrong.get_instance(vm.id)
    texts = [caplog.text, repr(client), repr(client._transport), str(info.value), repr(info.value),
             repr(vars(info.value))]
    assert "GET" in caplog.text and "-> 401" in caplog.text  # the calls are logged...
    for text in texts:
        for secret in secrets:
            assert secret not in text  # ...without the secret or the key id
        assert "Bearer" not in text


class RecordingSession(requests.Session):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[dict[str, Any]] = []
        self.closed = False

    def request(self, method: str, url: str, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        self.calls.append({"method": method, "url": url, **kwargs})
        return super().request(method, url, **kwargs)

    def close(self) -> None:
        self.closed = True
        super().close()


def test_query_is_sent_in_the_signed_canonical_order_with_a_timeout(clouds: Any) -> None:
    session = RecordingSession()
    with client_for(clouds, session=session) as client:
        client.list_instances(names=["b b", "a"], types=["l40s-48gb.1x"], page_size=5).to_list()
    call = session.calls[0]
    assert call["url"].split("?", 1)[1] == "limit=5&names=b+b%2Ca&sort=created_at&types=l40s-48gb.1x"
    assert call["timeout"] == (10.0, 30.0)
    assert session.closed is False  # an injected session belongs to the caller


def test_an_owned_session_is_closed(clouds: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    closed: list[bool] = []
    with client_for(clouds) as client:
        monkeypatch.setattr(client._transport._session, "close", lambda: closed.append(True))
    assert closed == [True]


def test_v1_prefix_works_too(clouds: Any) -> None:
    url = clouds.endpoints["crusoe"]["url"].replace("/v1alpha5", "/v1")
    assert client_for(clouds, base_url=url).list_locations().to_list()
