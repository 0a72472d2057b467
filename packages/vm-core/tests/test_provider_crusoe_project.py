"""The Crusoe adapter's project (a UUID, a name, or none for the key's only project) and its endpoint, through the
wire against the in-process Crusoe mock: how each resolves or fails as vm errors, and what an endpoint that cannot
be reached reads as."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mock_clouds.core.models import Provider, WorldState
from vm_core.errors import AuthError, ConfigError, Transient
from vm_core.provider import DescribesEndpoint
from vm_core.providers.crusoe import CrusoeProvider, plugin

sys.path.insert(0, str(Path(__file__).parents[2] / "cloud-sdk-core" / "tests"))
from sdk_netkit import TLSFront, clear_network_env, closed_port, make_cert  # noqa: E402

DEFAULT = "5d9f0f5e-8c0f-4c52-9d6e-2f7b6f0c1a01"  # the default world's projects of the key's organisation
RESEARCH = "a3c2b7d1-0e4f-4a6b-9c8d-7e6f5a4b3c02"
OTHER_ORG = "f0e1d2c3-b4a5-4968-8776-655443322103"
SETTINGS = "default_project in ~/.crusoe/config, CRUSOE_DEFAULT_PROJECT or the profile's project_id"


@pytest.fixture(autouse=True)
def no_project_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CRUSOE_DEFAULT_PROJECT", raising=False)
    clear_network_env(monkeypatch)


@pytest.fixture
def clouds(mock_clouds_factory: Callable[..., Any]) -> Any:
    return mock_clouds_factory(providers=("crusoe",))


def with_project(clouds: Any, project: str | None) -> CrusoeProvider:
    endpoint = clouds.endpoints["crusoe"]
    settings = {"access_key_id": endpoint["access_key_id"], "secret_key": endpoint["secret_key"],
                "api_endpoint": endpoint["url"], "time_scale": 0.002}
    return plugin.connect({**settings, **({"project_id": project} if project is not None else {})})


def only_default(state: WorldState) -> None:
    config = state.providers[Provider.CRUSOE]
    config.projects = [p for p in config.projects if p.name != "research"]


def test_a_uuid_is_the_project(clouds: Any) -> None:
    crusoe = with_project(clouds, RESEARCH)
    assert list(crusoe.list_instances()) == [] and crusoe.account() == f"project {RESEARCH}"


def test_a_name_is_looked_up(clouds: Any) -> None:
    crusoe = with_project(clouds, "research")
    assert list(crusoe.list_instances()) == [] and crusoe.account() == f"project {RESEARCH}"


def test_the_environment_may_name_the_project(clouds: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRUSOE_DEFAULT_PROJECT", "research")
    assert with_project(clouds, None).account() == f"project {RESEARCH}"


def test_unset_is_the_only_project_there_is(mock_clouds_factory: Callable[..., Any]) -> None:
    clouds = mock_clouds_factory(providers=("crusoe",), configure=only_default)
    crusoe = with_project(clouds, None)
    assert list(crusoe.list_instances()) == [] and crusoe.account() == f"project {DEFAULT}"


def test_unset_with_several_projects_is_a_config_error_listing_them(clouds: Any) -> None:
    crusoe = with_project(clouds, None)  # connecting makes no call, so it cannot fail yet
    with pytest.raises(ConfigError) as info:
        list(crusoe.list_instances())
    error = info.value
    assert error.exit_code == 4 and not isinstance(error, AuthError)
    assert error.message == (
        f"Crusoe Cloud: no project is set and this key can see 2 projects: default ({DEFAULT}), research ({RESEARCH})"
    )
    assert error.suggestion == f"set {SETTINGS} to a project's name or UUID"


def test_a_name_that_matches_nothing_names_it_and_lists_the_projects(clouds: Any) -> None:
    with pytest.raises(ConfigError) as info:
        with_project(clouds, "nope").account()
    assert info.value.message == (
        f"Crusoe Cloud: no project named 'nope'; this key can see 2 projects: default ({DEFAULT}), "
        f"research ({RESEARCH})"
    )


def test_a_project_the_key_may_not_read_is_named_not_the_credentials(clouds: Any) -> None:
    with pytest.raises(ConfigError) as info:
        list(with_project(clouds, OTHER_ORG).list_instances())
    error = info.value
    assert not isinstance(error, AuthError) and "access_key_id" not in str(error)
    assert error.message == f"Crusoe Cloud: project {OTHER_ORG} is unknown or not readable with this key"


def test_the_endpoint_is_described(clouds: Any) -> None:
    crusoe = with_project(clouds, DEFAULT)
    assert isinstance(crusoe, DescribesEndpoint) and crusoe.endpoint == clouds.endpoints["crusoe"]["url"]
    real = plugin.connect({"access_key_id": "k", "secret_key": "c2VjcmV0"})
    assert real.endpoint == "https://api.cloud.crusoe.ai/v1alpha5"


def unreachable(crusoe: CrusoeProvider) -> Transient:
    started = time.monotonic()
    with pytest.raises(Transient) as info:
        list(crusoe.list_instances())
    assert time.monotonic() - started < 2.0  # at once: nothing was retried
    return info.value


def test_a_name_that_does_not_resolve_is_transient_and_says_so(clouds: Any) -> None:
    crusoe = plugin.connect({"access_key_id": "k", "secret_key": "c2VjcmV0", "project_id": DEFAULT,
                             "api_endpoint": "https://api.crusoe.example.invalid/v1alpha5"})
    error = unreachable(crusoe)
    assert error.exit_code == 8 and error.message.startswith(
        "Crusoe Cloud: cannot reach api.crusoe.example.invalid:443 (https://api.crusoe.example.invalid/v1alpha5): "
        "DNS: ")
    assert error.suggestion == "check api_endpoint (CRUSOE_API_ENDPOINT) and this machine's DNS"


def test_a_refused_connection_is_transient_and_says_so() -> None:
    with closed_port() as port:
        crusoe = plugin.connect({"access_key_id": "k", "secret_key": "c2VjcmV0", "project_id": DEFAULT,
                                 "api_endpoint": f"http://127.0.0.1:{port}/v1alpha5"})
        error = unreachable(crusoe)
    assert error.message == (f"Crusoe Cloud: cannot reach 127.0.0.1:{port} (http://127.0.0.1:{port}/v1alpha5): "
                             "connection refused")
    assert "again" not in (error.suggestion or "")


def test_an_untrusted_certificate_hints_at_ssl_cert_file(
    clouds: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert = make_cert(tmp_path)
    with TLSFront(cert) as front:
        endpoint = clouds.endpoints["crusoe"]
        settings = {"access_key_id": endpoint["access_key_id"], "secret_key": endpoint["secret_key"],
                    "project_id": DEFAULT, "api_endpoint": f"{front.url}/v1alpha5"}
        error = unreachable(plugin.connect(settings))
        assert "TLS: certificate verify failed: self-signed certificate" in error.message
        assert error.suggestion == (
            "set SSL_CERT_FILE (or REQUESTS_CA_BUNDLE) to the CA file that signed the server's certificate")
        monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
        with pytest.raises(ConfigError, match="SSL_CERT_FILE=.*missing.pem: no such CA file"):
            plugin.connect(settings)
