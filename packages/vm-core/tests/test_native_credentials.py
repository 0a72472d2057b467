"""The clouds' own credentials, read as their own tools read them (providers/*_native.py).

Sources of each rule: Crusoe, the Terraform provider's `internal/common/config.go` (profile: CRUSOE_PROFILE > the
file's `profile` key > "default"; the variables override the profile; legacy endpoints migrated); Lambda, the
published client `lambda-ai-cloud-api-client` (LAMBDA_CLOUD_TOKEN, LAMBDA_CLOUD_API_TOKEN, LAMBDA_API_TOKEN,
LAMBDA_CLOUD_BASE_URL) and SkyPilot's `~/.lambda_cloud/lambda_keys`; Nebius, pysdk's `aio/cli_config.py`
(NEBIUS_IAM_TOKEN first, then the profile's token-file, then its auth-type; NEBIUS_PROFILE > `default` > the only
profile; NEBIUS_ENDPOINT over the profile's endpoint).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from vm_core.errors import ConfigError
from vm_core.native import ENV, FILE, Sourced
from vm_core.providers import crusoe_native, lambda_native, nebius_native

PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHZtLWNvcmUtcGxhY2Vob2xkZXIta2V5LW5vdC1yZWFs alice@laptop"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def values(found: object) -> dict[str, object]:
    return {key: s.value for key, s in found.settings.items()}  # type: ignore[attr-defined]


# --------------------------------------------------------------------------------------------------- Crusoe
CRUSOE_FILE = """
profile = "work"
[default]
access_key_id = "AK-default"
secret_key = "SK-default"
default_project = "default"
[work]
access_key_id = "AK-work"
secret_key = "SK-work"
default_project = "training"
api_endpoint = "https://api.crusoecloud.com/v1alpha5"
ssh_public_key_file = "~/.ssh/id_ed25519.pub"
"""


def test_crusoe_profile_named_in_the_file_is_used_with_its_key_file(tmp_path: Path) -> None:
    write(tmp_path / ".crusoe/config", CRUSOE_FILE)
    write(tmp_path / ".ssh/id_ed25519.pub", PUBLIC_KEY + "\n")
    found = crusoe_native.native_credentials({}, tmp_path)
    assert found.found
    assert values(found) == {"access_key_id": "AK-work", "secret_key": "SK-work", "project_id": "training",
                             "api_endpoint": "https://api.cloud.crusoe.ai/v1alpha5", "ssh_public_key": PUBLIC_KEY}
    assert found.settings["secret_key"] == Sourced("SK-work", FILE, "~/.crusoe/config [work]")


def test_crusoe_profile_variable_wins_and_variables_override_the_file(tmp_path: Path) -> None:
    write(tmp_path / ".crusoe/config", CRUSOE_FILE.replace('ssh_public_key_file = "~/.ssh/id_ed25519.pub"', ""))
    environ = {"CRUSOE_PROFILE": "default", "CRUSOE_SECRET_KEY": "SK-env", "CRUSOE_DEFAULT_PROJECT": "other"}
    found = crusoe_native.native_credentials(environ, tmp_path)
    assert values(found) == {"access_key_id": "AK-default", "secret_key": "SK-env", "project_id": "other"}
    assert found.settings["secret_key"] == Sourced("SK-env", ENV, "env CRUSOE_SECRET_KEY")
    assert found.origins == ["~/.crusoe/config [default]", "env CRUSOE_SECRET_KEY", "env CRUSOE_DEFAULT_PROJECT"]


def test_crusoe_without_a_file_reads_the_variables_alone(tmp_path: Path) -> None:
    assert not crusoe_native.native_credentials({}, tmp_path).found
    assert not crusoe_native.native_credentials({"CRUSOE_SECRET_KEY": "s"}, tmp_path).found  # a key id is needed
    found = crusoe_native.native_credentials({"CRUSOE_ACCESS_KEY_ID": "a", "CRUSOE_SECRET_KEY": "s"}, tmp_path)
    assert found.found and values(found) == {"access_key_id": "a", "secret_key": "s"}


def test_crusoe_file_errors_name_the_file(tmp_path: Path) -> None:
    write(tmp_path / ".crusoe/config", "[default]\naccess_key_id = \"unterminated\n")
    with pytest.raises(ConfigError, match=r"~/.crusoe/config is not valid TOML: .*line 2"):
        crusoe_native.native_credentials({}, tmp_path)
    write(tmp_path / ".crusoe/config", CRUSOE_FILE)
    with pytest.raises(ConfigError, match=r"~/.crusoe/config has no profile 'prod' \(CRUSOE_PROFILE\); "
                                          r"profiles: default, work"):
        crusoe_native.native_credentials({"CRUSOE_PROFILE": "prod"}, tmp_path)
    with pytest.raises(ConfigError, match=r"\[work\]: ssh_public_key_file ~/.ssh/id_ed25519.pub does not exist"):
        crusoe_native.native_credentials({}, tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_is_an_error_naming_it(tmp_path: Path) -> None:
    path = write(tmp_path / ".crusoe/config", CRUSOE_FILE)
    path.chmod(0)
    with pytest.raises(ConfigError, match=r"cannot read ~/.crusoe/config"):
        crusoe_native.native_credentials({}, tmp_path)
    path.chmod(stat.S_IRUSR | stat.S_IWUSR)


# --------------------------------------------------------------------------------------------------- Lambda
def test_lambda_key_variables_in_order_and_the_base_url_of_the_published_client(tmp_path: Path) -> None:
    environ = {"LAMBDA_API_TOKEN": "third", "LAMBDA_CLOUD_TOKEN": "first", "LAMBDA_CLOUD_BASE_URL": "http://h:1/"}
    found = lambda_native.native_credentials(environ, tmp_path)
    assert values(found) == {"api_key": "first", "api_endpoint": "http://h:1/api/v1"}
    assert found.settings["api_key"].origin == "env LAMBDA_CLOUD_TOKEN"
    ours = lambda_native.native_credentials({**environ, "LAMBDA_API_KEY": "ours"}, tmp_path)
    assert values(ours)["api_key"] == "ours"
    assert lambda_native.api_url("https://cloud.lambda.ai/api/v1") == "https://cloud.lambda.ai/api/v1"


def test_lambda_keys_file_when_no_variable_is_set(tmp_path: Path) -> None:
    assert not lambda_native.native_credentials({}, tmp_path).found
    write(tmp_path / ".lambda_cloud/lambda_keys", "# SkyPilot's file\napi_key = secret_0123\n")
    found = lambda_native.native_credentials({}, tmp_path)
    assert found.found and found.settings["api_key"] == Sourced("secret_0123", FILE, "~/.lambda_cloud/lambda_keys")
    assert values(lambda_native.native_credentials({"LAMBDA_API_KEY": "env"}, tmp_path))["api_key"] == "env"


# --------------------------------------------------------------------------------------------------- Nebius
NEBIUS_FILE = """
default: sa
profiles:
  sa:
    endpoint: api.nebius.cloud:443
    parent-id: project-e00sa
    auth-type: service account
    service-account-credentials-file-path: ~/.nebius/sa.json
  keys:
    parent-id: project-e00keys
    auth-type: service account
    service-account-id: serviceaccount-e00a
    public-key-id: publickey-e00b
    private-key-file-path: /keys/private.pem
  tokens:
    parent-id: project-e00tok
    token-file: ~/token.txt
  browser:
    parent-id: project-e00web
    auth-type: federation
    federation-endpoint: auth.nebius.com
    federation-id: federation-e00x
"""


@pytest.mark.parametrize(("profile", "expected"), [
    ("sa", {"endpoint": "api.nebius.cloud:443", "project_id": "project-e00sa",
            "service_account_file": "{home}/.nebius/sa.json"}),
    ("keys", {"project_id": "project-e00keys", "service_account_id": "serviceaccount-e00a",
              "public_key_id": "publickey-e00b", "private_key_file": "/keys/private.pem"}),
    ("tokens", {"project_id": "project-e00tok", "token_file": "{home}/token.txt"}),
])
def test_nebius_profile_credentials_as_pysdk_reads_them(tmp_path: Path, profile: str, expected: dict) -> None:
    write(tmp_path / ".nebius/config.yaml", NEBIUS_FILE)
    environ = {} if profile == "sa" else {"NEBIUS_PROFILE": profile}
    found = nebius_native.native_credentials(environ, tmp_path)
    assert found.found and values(found) == {k: v.format(home=tmp_path) for k, v in expected.items()}
    assert found.settings["project_id"].origin == f"~/.nebius/config.yaml profile {profile}"


def test_nebius_environment_token_wins_over_the_profile_credential(tmp_path: Path) -> None:
    write(tmp_path / ".nebius/config.yaml", NEBIUS_FILE)
    environ = {"NEBIUS_IAM_TOKEN": "t1", "NEBIUS_ENDPOINT": "localhost:9", "NEBIUS_PROJECT_ID": "project-e00env"}
    found = nebius_native.native_credentials(environ, tmp_path)
    assert values(found) == {"token": "t1", "endpoint": "localhost:9", "project_id": "project-e00env"}


def test_nebius_federation_goes_through_the_nebius_cli_when_installed(tmp_path: Path) -> None:
    write(tmp_path / ".nebius/config.yaml", NEBIUS_FILE)
    without = nebius_native.native_credentials({"NEBIUS_PROFILE": "browser", "PATH": str(tmp_path)}, tmp_path)
    assert not without.found and "federation" in without.notes[0] and "token_command" in without.notes[0]
    cli = write(tmp_path / "bin/nebius", "#!/bin/sh\necho token\n")
    cli.chmod(0o755)
    found = nebius_native.native_credentials({"NEBIUS_PROFILE": "browser", "PATH": str(cli.parent)}, tmp_path)
    assert found.found and values(found)["token_command"] == "nebius iam get-access-token --profile browser"


def test_nebius_profile_choice(tmp_path: Path) -> None:
    several = NEBIUS_FILE.replace("default: sa\n", "")
    write(tmp_path / ".nebius/config.yaml", several)
    found = nebius_native.native_credentials({}, tmp_path)
    assert not found.found and "no default: set NEBIUS_PROFILE" in found.notes[0]
    write(tmp_path / ".nebius/config.yaml", "profiles:\n  only:\n    token-file: /t\n")
    assert values(nebius_native.native_credentials({}, tmp_path)) == {"token_file": "/t"}
    with pytest.raises(ConfigError, match=r"~/.nebius/config.yaml has no profile 'nope' \(NEBIUS_PROFILE\)"):
        nebius_native.native_credentials({"NEBIUS_PROFILE": "nope"}, tmp_path)
    write(tmp_path / ".nebius/config.yaml", "profiles: [unclosed\n")
    with pytest.raises(ConfigError, match=r"~/.nebius/config.yaml is not valid YAML"):
        nebius_native.native_credentials({}, tmp_path)


def test_nebius_service_account_file_of_skypilot_when_no_profile_has_a_credential(tmp_path: Path) -> None:
    assert not nebius_native.native_credentials({}, tmp_path).found
    write(tmp_path / ".nebius/credentials.json", '{"subject-credentials": {}}')
    found = nebius_native.native_credentials({}, tmp_path)
    assert found.found and found.settings["service_account_file"].origin == "~/.nebius/credentials.json"


def test_nebius_incomplete_service_account_is_said(tmp_path: Path) -> None:
    write(tmp_path / ".nebius/config.yaml", "profiles:\n  p:\n    auth-type: service account\n"
                                            "    service-account-id: serviceaccount-e00a\n")
    found = nebius_native.native_credentials({}, tmp_path)
    assert not found.found and "needs service-account-credentials-file-path" in found.notes[0]
