"""config.py: where vm's files are, config.toml and its profiles."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from vm_core.config import Paths, Profile, ensure_private_dir, load_config
from vm_core.errors import ConfigError


def write(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


def test_vm_home_holds_config_and_state() -> None:
    paths = Paths.from_env({"VM_HOME": "/h", "XDG_CONFIG_HOME": "/c", "XDG_STATE_HOME": "/s"})
    assert paths == Paths(Path("/h/config.toml"), Path("/h"))


def test_xdg_directories_without_vm_home() -> None:
    paths = Paths.from_env({"HOME": "/u", "XDG_CONFIG_HOME": "/c", "XDG_STATE_HOME": "/s"})
    assert paths == Paths(Path("/c/vm/config.toml"), Path("/s/vm"))
    assert Paths.from_env({"HOME": "/u"}) == Paths(Path("/u/.config/vm/config.toml"), Path("/u/.local/state/vm"))


def test_no_config_file_has_the_built_in_profiles_and_defaults_to_auto(tmp_path: Path) -> None:
    config = load_config(tmp_path / "config.toml")
    assert config.path is None and config.default_profile is None
    assert config.profile() == Profile("auto", automatic=True)
    assert config.profile("local") == Profile("local", embedded=True)
    assert config.names() == ["auto", "local"]


def test_profiles_without_a_default_keep_local_and_default_to_auto(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "config.toml", '[profiles.work.crusoe]\naccess_key_id = "AK"\n'))
    assert config.profile().name == "auto" and config.profile().automatic
    assert config.profile("local").embedded is True
    assert config.names() == ["work", "auto", "local"]


def test_a_table_of_a_built_in_name_replaces_it(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "config.toml", '[profiles.auto.lambda]\napi_key = "k"\n'))
    assert config.profile() == Profile("auto", providers={"lambda": {"api_key": "k"}})
    assert not config.profile().automatic


def test_profiles_and_default(tmp_path: Path) -> None:
    path = write(tmp_path / "config.toml", """
default_profile = "work"
[profiles.local]
embedded = true
[profiles.work.crusoe]
access_key_id = "AK"
[profiles.work.lambda]
""")
    config = load_config(path)
    work = config.profile()
    assert (work.name, work.embedded, dict(work.providers)) == ("work", False, {"crusoe": {"access_key_id": "AK"},
                                                                                 "lambda": {}})
    assert config.profile("local").embedded is True


def test_unknown_profile_lists_the_profiles(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "config.toml", "[profiles.a]\n[profiles.b]\n"))
    with pytest.raises(ConfigError, match=r"unknown profile 'c' in .*config.toml; profiles: a, b"):
        config.profile("c")


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620, 0o602])
def test_a_file_others_can_access_is_refused_with_the_fix(tmp_path: Path, mode: int) -> None:
    path = write(tmp_path / "config.toml", "[profiles.a]\n", mode)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert f"(mode {mode:04o})" in err.value.message
    assert err.value.suggestion == f"chmod 600 {path}"
    assert err.value.exit_code == 4


def test_malformed_toml_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path / "config.toml", '[profiles.a]\nkey = "unterminated\n')
    with pytest.raises(ConfigError, match=rf"{path} is not valid TOML: .*line 2"):
        load_config(path)


@pytest.mark.parametrize(("text", "message"), [
    ("colour = 1\n", "unknown top-level key"),
    ("profiles = 3\n", "must be a table"),
    ('[profiles.a]\ncrusoe = "x"\n', r"provider settings go in a table \[profiles.a.crusoe\]"),
    ('[profiles.a]\nembedded = "yes"\n', "embedded must be true or false"),
    ("default_profile = 1\n[profiles.a]\n", "default_profile must be the name of a profile"),
])
def test_unexpected_shapes_are_config_errors(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(write(tmp_path / "config.toml", text))


def test_private_directories_are_0700(tmp_path: Path) -> None:
    leaf = ensure_private_dir(tmp_path / "a" / "b")
    for directory in (tmp_path / "a", leaf):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
