"""Real accounts on day one, through the real `vm` executable: which clouds a command talks to is never a
surprise, and a user with real credentials is never acting on mock clouds without being told.

Every test runs with its own HOME (conftest.VmHome), so the clouds' own files are only those a test writes.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

from .conftest import VmHome


def closed_port() -> int:
    """A local port with nothing listening (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o600)
    return path


def test_real_credentials_in_the_environment_are_used_not_the_mocks(fresh_home: VmHome) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    env = {"LAMBDA_API_KEY": "real-looking-key-0123", "LAMBDA_CLOUD_BASE_URL": url}
    shown = fresh_home("providers", "-o", "json", env=env)
    reports = {r["name"]: r for r in shown.json()}
    assert reports["lambda"]["configured"] and reports["lambda"]["status"] == "unreachable"
    assert reports["lambda"]["endpoint"] == f"{url}/api/v1"
    assert not reports["crusoe"]["configured"] and not reports["nebius"]["configured"]
    assert "vm: profile auto (auto: the credentials found for lambda)" in shown.err
    assert not fresh_home.mock_dir.exists()  # no mock cloud was started
    doc = fresh_home("config", "show", "-o", "json", env=env).json()
    assert (doc["profile"], doc["embedded"], doc["mock_clouds"]) == ("auto", False, None)
    assert doc["providers"]["lambda"]["settings"]["api_key"] == {
        "value": "<set>", "source": "env", "from": "env LAMBDA_API_KEY", "secret": True}
    assert "real-looking-key-0123" not in shown.out + shown.err + json.dumps(doc)


def test_credential_files_alone_configure_their_clouds(fresh_home: VmHome) -> None:
    write(fresh_home.user_home / ".lambda_cloud/lambda_keys", "api_key = secret_from_file_0123\n")
    write(fresh_home.user_home / ".crusoe/config", '[default]\naccess_key_id = "AK"\nsecret_key = "SK-secret"\n'
                                                   f'api_endpoint = "http://127.0.0.1:{closed_port()}/v1alpha5"\n')
    doc = fresh_home("config", "show", "-o", "json").json()
    assert doc["profile"] == "auto" and sorted(doc["providers"]) == ["crusoe", "lambda"]
    assert doc["providers"]["lambda"]["settings"]["api_key"]["from"] == "~/.lambda_cloud/lambda_keys"
    assert doc["providers"]["crusoe"]["settings"]["secret_key"]["from"] == "~/.crusoe/config [default]"
    table = fresh_home("config", "show")
    assert ["crusoe", "secret_key", "<set>", "~/.crusoe/config", "[default]"] in table.rows()


def test_without_any_credentials_the_mocks_are_used_and_said(fresh_home: VmHome) -> None:
    shown = fresh_home("providers")
    assert shown.code == 0
    assert ("vm: profile local (auto: no cloud's own credentials were found, so the embedded mock clouds): "
            "the local mock clouds, not real clouds") in shown.err
    doc = fresh_home("config", "show", "-o", "json").json()
    assert doc["profile"] == "local" and doc["mock_clouds"]["title"] == "the local mock clouds"
    assert "not real clouds" in fresh_home("config", "show").out


def test_a_profile_that_chose_the_mocks_says_which_credentials_it_does_not_use(fresh_home: VmHome) -> None:
    env = {"LAMBDA_API_KEY": "real-looking-key-0123", "VM_PROFILE": "local"}
    listed = fresh_home("list", env=env)
    assert listed.code == 0
    assert ("not using the credentials in env LAMBDA_API_KEY (`vm --profile auto providers` checks those)"
            in listed.err)
    doc = fresh_home("config", "show", "-o", "json", env=env).json()
    assert (doc["profile"], doc["chosen_by"]) == ("local", "VM_PROFILE")
    assert doc["mock_clouds"]["unused_credentials"] == ["env LAMBDA_API_KEY"]
    assert "real-looking-key-0123" not in listed.out + listed.err


def test_profiles_without_default_profile_never_default_to_the_first_one(fresh_home: VmHome) -> None:
    fresh_home.config('[profiles.work.lambda]\napi_key = "k"\napi_endpoint = "http://127.0.0.1:9/api/v1"\n')
    doc = fresh_home("config", "show", "-o", "json").json()
    assert doc["profile"] == "local" and doc["profiles"] == ["work", "auto", "local"]
    assert fresh_home("--profile", "local", "list").code == 0
    assert fresh_home("config", "show", "--profile", "work", "-o", "json").json()["profile"] == "work"


def test_a_typo_in_a_provider_table_is_an_error_naming_the_providers(fresh_home: VmHome) -> None:
    fresh_home.config('[profiles.local]\nembedded = true\n[profiles.local.lamda]\napi_key = "k"\n')
    for command in (("list",), ("providers",), ("config", "show")):
        result = fresh_home(*command)
        assert result.code == 4 and result.out == "", command
        assert ("[profiles.local.lamda] names no provider; the providers are crusoe, example, lambda, nebius"
                in result.err)


def test_no_provider_configured_is_exit_4_with_nothing_on_stdout(fresh_home: VmHome) -> None:
    fresh_home.config('default_profile = "empty"\n[profiles.empty]\n')
    for command in (("list",), ("offers", "--gpu", "H100"), ("fleet", "create", "--gpu", "H100", "--count", "1",
                                                             "--name", "f1")):
        result = fresh_home(*command)
        assert (result.code, result.out) == (4, ""), (command, result.err)
        assert "no provider is configured in profile 'empty'" in result.err
    assert fresh_home("providers").code == 4


def test_an_unreachable_real_endpoint_fails_fast_naming_host_and_cause(fresh_home: VmHome) -> None:
    port = closed_port()
    env = {"LAMBDA_API_KEY": "k-0123", "LAMBDA_CLOUD_BASE_URL": f"http://127.0.0.1:{port}",
           "CRUSOE_ACCESS_KEY_ID": "a", "CRUSOE_SECRET_KEY": "s-0123", "CRUSOE_DEFAULT_PROJECT": "default",
           "CRUSOE_API_ENDPOINT": "https://api.crusoe.invalid/v1alpha5"}
    started = time.monotonic()
    result = fresh_home("list", env=env)
    elapsed = time.monotonic() - started
    assert result.code == 8 and result.out == ""
    assert f"127.0.0.1:{port}" in result.err and "refused" in result.err
    assert "api.crusoe.invalid" in result.err and "DNS" in result.err
    assert elapsed < 15  # before: 21 s of retries per cloud; now one attempt each (bound kept loose for CI)
