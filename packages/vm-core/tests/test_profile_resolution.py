"""Which clouds a command talks to (session.open_session): the rules of the README's "Using your real accounts"."""

from __future__ import annotations

from pathlib import Path

import pytest
from vm_core.cli.spelling import words
from vm_core.config import Paths, load_config
from vm_core.errors import ConfigError
from vm_core.plugins import provider_plugins
from vm_core.session import Session, configuration, open_session


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o600)
    return path


def opened(home: Path, environ: dict[str, str] | None = None, name: str | None = None,
           notes: list[str] | None = None) -> Session:
    paths = Paths(home / "vm" / "config.toml", home / "vm")
    env = {"HOME": str(home), "VM_NO_AUTOSTART": "1", "PATH": "", **(environ or {})}
    return open_session(load_config(paths.config_file), name, paths, provider_plugins(), env,
                        (notes if notes is not None else []).append, asked_by="--profile" if name else "")


def test_no_config_and_no_credentials_is_local(tmp_path: Path) -> None:
    s = opened(tmp_path)
    assert (s.profile.name, s.profile.embedded) == ("local", True)
    assert s.chosen_by == "auto: no cloud's own credentials were found, so the embedded mock clouds"


def test_no_config_and_credentials_of_one_cloud_configures_that_cloud_only(tmp_path: Path) -> None:
    s = opened(tmp_path, {"LAMBDA_API_KEY": "k"})
    assert (s.profile.name, s.profile.embedded, s.configured_names()) == ("auto", False, ["lambda"])
    assert s.chosen_by == "auto: the credentials found for lambda"
    with pytest.raises(ConfigError, match="no Crusoe Cloud credentials were found"):
        s.provider("crusoe")


def test_credential_files_alone_configure_their_clouds(tmp_path: Path) -> None:
    write(tmp_path / ".crusoe/config", '[default]\naccess_key_id = "a"\nsecret_key = "s"\n')
    write(tmp_path / ".lambda_cloud/lambda_keys", "api_key = k\n")
    s = opened(tmp_path)
    assert s.configured_names() == ["crusoe", "lambda"]
    assert s.sources("crusoe")["secret_key"][1:] == ("file", "~/.crusoe/config [default]")


def test_profiles_without_default_profile_default_to_auto_and_keep_local(tmp_path: Path) -> None:
    write(tmp_path / "vm/config.toml", '[profiles.work.lambda]\napi_key = "from-vm-config"\n')
    assert opened(tmp_path).profile.name == "local"  # auto, nothing found: never the first profile of the file
    assert opened(tmp_path, {"LAMBDA_API_KEY": "k"}).profile.name == "auto"
    work = opened(tmp_path, name="work")
    assert (work.profile.name, work.chosen_by) == ("work", "--profile")
    assert work.sources("lambda")["api_key"] == ("from-vm-config", "profile", "config.toml [profiles.work.lambda]")
    assert opened(tmp_path, name="local").profile.embedded is True


def test_default_profile_is_used_and_said(tmp_path: Path) -> None:
    write(tmp_path / "vm/config.toml", 'default_profile = "work"\n[profiles.work.lambda]\napi_key = "x"\n')
    s = opened(tmp_path, {"CRUSOE_ACCESS_KEY_ID": "a", "CRUSOE_SECRET_KEY": "s"})
    assert (s.profile.name, s.chosen_by) == ("work", "default_profile")
    assert s.configured_names() == ["crusoe", "lambda"]  # a real profile reads the clouds' own credentials too


def test_a_provider_table_that_names_no_provider_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "vm/config.toml", '[profiles.local.lamda]\napi_key = "x"\n')
    with pytest.raises(ConfigError, match=r"\[profiles.local.lamda\] names no provider; the providers are "
                                          r"crusoe, example, lambda, nebius"):
        opened(tmp_path, name="local")


def test_a_profile_with_nothing_configured_refuses_to_answer_from_no_cloud(tmp_path: Path) -> None:
    write(tmp_path / "vm/config.toml", 'default_profile = "empty"\n[profiles.empty]\n')
    s = opened(tmp_path)
    with pytest.raises(ConfigError, match="no provider is configured in profile 'empty'") as err:
        s.selected(None)
    assert err.value.exit_code == 4


def test_the_embedded_profile_never_reads_real_credentials_and_says_which_it_does_not_use(
        tmp_path: Path, mock_clouds_factory) -> None:
    mock_clouds_factory(state_dir=tmp_path / "vm" / "mock-clouds")
    write(tmp_path / ".crusoe/config", '[default]\naccess_key_id = "a"\nsecret_key = "real-secret"\n')
    notes: list[str] = []
    s = opened(tmp_path, {"LAMBDA_API_KEY": "real-key"}, name="local", notes=notes)
    assert s.sources("lambda")["api_key"][1] == "embedded" and s.sources("crusoe")["secret_key"][1] == "embedded"
    assert [words(note) for note in notes] == [
        "vm: profile local acts on the local mock clouds, not on real clouds; not using the credentials in "
        "~/.crusoe/config [default], env LAMBDA_API_KEY (`vm --profile auto providers` checks those)"]
    doc = configuration(s, ["auto", "local"])
    assert doc["mock_clouds"]["unused_credentials"] == ["~/.crusoe/config [default]", "env LAMBDA_API_KEY"]
    assert "real-secret" not in repr(doc) and "real-key" not in repr(doc)
