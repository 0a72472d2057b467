"""Nebius' own Python SDK (`nebius` on PyPI) authenticating as a service account against the Nebius mock.

The credentials are what `mock-clouds credentials` writes (~/.nebius/credentials.json and config.yaml); the SDK
reads them with its own readers, signs its own JWT, gets an access token from the mock's
`nebius.iam.v1.TokenExchangeService/Exchange` and lists instances with it. A `Constant` resolver sends every
service (`tokens.iam` included) to the mock's one target, plaintext through the SDK's INSECURE address option
or TLS with `tls_credentials` trusting the mock's CA.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from click.testing import CliRunner
from mock_clouds import control
from mock_clouds.cli import main as mock_clouds_cli
from mock_clouds.runner import MockClouds
from nebius.aio.cli_config import Config
from nebius.api.nebius.compute.v1 import InstanceServiceClient, ListInstancesRequest
from nebius.base.options import INSECURE
from nebius.base.resolver import Constant
from nebius.base.service_account.credentials_file import Reader as CredentialsFileReader
from nebius.sdk import SDK

DEADLINE = 30.0


def write_credentials(clouds: MockClouds, home: Path) -> None:
    """`mock-clouds credentials --state-dir D --home H` against the running (in-process) server."""
    result = CliRunner().invoke(
        mock_clouds_cli, ["credentials", "--state-dir", str(clouds.state_dir), "--home", str(home)]
    )
    assert result.exit_code == 0, result.output


@pytest.fixture
def session(mock_clouds_factory, tmp_path: Path) -> Iterator[Callable[..., tuple[MockClouds, SDK, Path]]]:
    """Starts a Nebius mock (options as MockClouds'), writes the credential files and opens an SDK on them;
    `sdk_options` are the SDK's own (credentials, config_reader, ...). Every SDK is closed afterwards."""
    opened: list[SDK] = []

    def start(sdk_options: Callable[[Path], dict[str, Any]], **clouds_options: Any) -> tuple[MockClouds, SDK, Path]:
        clouds = mock_clouds_factory(tmp_path / "state", providers=("nebius",), **clouds_options)
        home = tmp_path / "home"
        write_credentials(clouds, home)
        target = str(clouds.endpoints["nebius"]["target"])
        transport: dict[str, Any] = {"address_options": {target: [(INSECURE, True)]}}
        if clouds.endpoints.get("tls"):
            ca = Path(clouds.endpoints["ca_file"]).read_bytes()
            transport = {"tls_credentials": grpc.ssl_channel_credentials(root_certificates=ca)}
        sdk = SDK(resolver=Constant(target), user_agent_prefix="vm-conformance/1.0", **transport,
                  **sdk_options(home))
        opened.append(sdk)
        return clouds, sdk, home

    yield start
    for sdk in opened:
        sdk.sync_close()


def _credentials_file(home: Path) -> dict[str, Any]:
    """pysdk's credentials-file reader, which the SDK wraps in its service-account bearer (the JWT exchange)."""
    return {"credentials": CredentialsFileReader(home / ".nebius" / "credentials.json")}


def _list(sdk: SDK, parent_id: str = "") -> list[Any]:
    """InstanceService.List through the SDK, bounded so a failure cannot wait out pysdk's 15-minute auth timeout."""
    request = ListInstancesRequest(parent_id=parent_id)
    return list(InstanceServiceClient(sdk).list(request, timeout=DEADLINE, auth_timeout=DEADLINE).wait().items)


def _project(clouds: MockClouds) -> str:
    return str(clouds.endpoints["nebius"]["project_id"])


def test_the_sdk_exchanges_the_credentials_file_for_a_token_and_lists_instances(session) -> None:
    clouds, sdk, _ = session(_credentials_file)
    assert control.exchange_count(clouds.endpoints) == 0
    assert _list(sdk, _project(clouds)) == []
    log = control.token_exchanges(clouds.endpoints)
    assert log["count"] >= 1
    assert {e["service_account_id"] for e in log["exchanges"]} == {clouds.endpoints["nebius"]["service_account_id"]}


def test_the_sdk_reads_the_cli_profile_with_its_parent_id(session) -> None:
    """`Config` (the nebius CLI's config.yaml reader) accepts the profile: `auth-type: service account` with
    the credentials file, and `parent-id`, which the SDK fills into the request's empty parent_id."""

    def cli_config(home: Path) -> dict[str, Any]:
        return {"config_reader": Config(config_file=home / ".nebius" / "config.yaml", no_env=True)}

    clouds, sdk, _ = session(cli_config)
    assert _list(sdk) == [] and control.exchange_count(clouds.endpoints) >= 1


def test_the_sdk_over_tls_trusting_the_mock_ca(session) -> None:
    clouds, sdk, _ = session(_credentials_file, tls=True)
    assert str(clouds.endpoints["nebius"]["target"]).startswith("localhost:")
    assert _list(sdk, _project(clouds)) == [] and control.exchange_count(clouds.endpoints) >= 1


def test_the_sdk_renews_a_short_lived_token_before_it_expires(session) -> None:
    """With a two-second token the SDK's background renewal (at 90 % of the lifetime) exchanges again, and no
    call is refused meanwhile; the mock's exchange count shows the renewals."""
    clouds, sdk, _ = session(_credentials_file)
    assert control.set_token_lifetime(clouds.endpoints, 1000)["expires_in"] == 2  # at the time scale 0.002
    deadline = time.monotonic() + DEADLINE
    while control.exchange_count(clouds.endpoints) < 3:
        assert time.monotonic() < deadline, "the SDK did not renew its token"
        assert _list(sdk, _project(clouds)) == []
        time.sleep(0.1)
