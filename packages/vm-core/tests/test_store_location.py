"""Choosing the fleet store (VM_STORE_URL, store_url in config.toml), keeping its password secret, and
`vm fleet list` showing who created each fleet (`--mine`)."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest
from vm_core.cli.main import run
from vm_core.config import load_config
from vm_core.errors import ConfigError
from vm_core.fleet.lease import user_at_host
from vm_core.fleet.location import shown_url, store_at, url_secrets
from vm_core.fleet.store import FleetRecord

PASSWORD = "s3cr3t-Pa55"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VM_HOME", str(tmp_path))
    monkeypatch.setenv("VM_NO_AUTOSTART", "1")
    for name in ("VM_PROFILE", "VM_STORE_URL", "VM_LEASE_SECONDS", "PGPASSWORD"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def vm(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = run(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_config(home: Path, text: str) -> None:
    path = home / "config.toml"
    path.write_text(text)
    path.chmod(0o600)


def test_store_url_at_top_level_is_overridden_per_profile(home: Path) -> None:
    write_config(home, """
store_url = "postgresql://team@db.internal:5432/vm"
[profiles.work]
embedded = true
[profiles.ci]
embedded = true
store_url = "postgresql://ci@db.internal:5432/vm_ci?sslmode=require"
""")
    config = load_config(home / "config.toml")
    assert config.profile("work").store_url == "postgresql://team@db.internal:5432/vm"
    assert config.profile("ci").store_url == "postgresql://ci@db.internal:5432/vm_ci?sslmode=require"
    assert config.profile("ci").providers == {}


@pytest.mark.parametrize("text", ["store_url = 5", 'store_url = " "', '[profiles.a]\nstore_url = ["x"]'])
def test_a_malformed_store_url_is_a_config_error(home: Path, text: str) -> None:
    write_config(home, text)
    with pytest.raises(ConfigError, match="store_url must be a non-empty string"):
        load_config(home / "config.toml")


def test_passwords_in_urls_are_redacted() -> None:
    url = f"postgresql://alice:{PASSWORD}@db.internal:5432/vm?sslmode=require"
    assert shown_url(url) == "postgresql://alice:<redacted>@db.internal:5432/vm?sslmode=require"
    assert url_secrets(url) == [PASSWORD, PASSWORD]
    query = f"postgresql://db.internal/vm?user=alice&password={PASSWORD}"
    assert PASSWORD not in shown_url(query) and url_secrets(query) == [PASSWORD]
    assert shown_url("postgresql://alice@db.internal/vm") == "postgresql://alice@db.internal/vm"


def test_config_show_names_the_store_without_its_password(home: Path, capsys, monkeypatch) -> None:
    code, out, _ = vm(capsys, "config", "show")
    assert code == 0 and ["fleet", "store", str(home / "vm.db")] in [line.split() for line in out.splitlines()]
    monkeypatch.setenv("VM_STORE_URL", f"postgresql://alice:{PASSWORD}@db.internal:5432/vm")
    code, out, err = vm(capsys, "config", "show")
    assert code == 0 and "postgresql://alice:<redacted>@db.internal:5432/vm" in out
    code, out, err = vm(capsys, "config", "show", "-o", "json")
    assert json.loads(out)["store"] == "postgresql://alice:<redacted>@db.internal:5432/vm"
    assert PASSWORD not in out + err


def test_an_unreachable_database_is_exit_4_without_the_password(home: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("VM_STORE_URL", f"postgresql://alice:{PASSWORD}@127.0.0.1:{closed_port()}/vm")
    code, out, err = vm(capsys, "fleet", "list", "--debug")
    assert code == 4 and "cannot connect to the fleet store postgresql://alice:<redacted>@127.0.0.1" in err
    assert PASSWORD not in out + err and "Traceback" not in err
    code, _, err = vm(capsys, "fleet", "status", "train", "-o", "json")
    assert code == 4 and PASSWORD not in err


def test_a_missing_driver_names_the_package_to_install(home: Path, capsys, monkeypatch) -> None:
    """The hint installs psycopg itself (published), not the extra of vm-core (not on PyPI), and says where."""
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if psycopg were not installed
    monkeypatch.delitem(sys.modules, "vm_core.fleet.store_pg", raising=False)
    monkeypatch.setenv("VM_STORE_URL", "postgresql://alice@db.internal/vm")
    code, _, err = vm(capsys, "fleet", "list")
    assert code == 4 and "needs the PostgreSQL driver psycopg 3" in err
    assert f"hint: install psycopg 3 where vm is installed ({sys.prefix}): pip install 'psycopg[binary]==3.*'" in err
    assert "vm-core[postgres]" not in err


@pytest.mark.parametrize(("env", "says"), [
    ({"VM_STORE_URL": "mysql://alice@db.internal/vm"}, "unsupported fleet store URL mysql://alice@db.internal/vm"),
    ({"VM_LEASE_SECONDS": "soon"}, "VM_LEASE_SECONDS must be a number of seconds from 1 to 86400, not 'soon'"),
    ({"VM_LEASE_SECONDS": "0"}, "VM_LEASE_SECONDS must be a number"),
])
def test_bad_store_settings_are_config_errors(home: Path, capsys, monkeypatch, env, says) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    code, _, err = vm(capsys, "fleet", "list")
    assert code == 4 and says in err


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_fleet_list_shows_creator_and_profile_and_mine_filters(home: Path, capsys, monkeypatch, request,
                                                               backend: str) -> None:
    url = request.getfixturevalue("postgres_url") if backend == "postgres" else None
    if url:
        monkeypatch.setenv("VM_STORE_URL", url)
    store = store_at(url, home)
    base = {"gpu": "H100", "gpu_count": None, "count": 2, "min_count": 2, "strategy": "spread"}
    store.create_fleet(FleetRecord(name="mine", created_by=user_at_host(), profile="work", **base))
    store.create_fleet(FleetRecord(name="theirs", created_by="bob@ci-7", profile="ci", **base))
    code, out, err = vm(capsys, "fleet", "list", "-o", "json")
    assert code == 0, err
    assert [(f["name"], f["created_by"], f["profile"]) for f in json.loads(out)] == [
        ("mine", user_at_host(), "work"), ("theirs", "bob@ci-7", "ci")]
    code, out, _ = vm(capsys, "fleet", "list", "--mine", "-o", "json")
    assert [f["name"] for f in json.loads(out)] == ["mine"]
    code, out, _ = vm(capsys, "fleet", "list")
    header, *rows = [line.split() for line in out.splitlines()]
    assert header[-2:] == ["CREATED-BY", "PROFILE"] and rows[1][-2:] == ["bob@ci-7", "ci"]


def test_vm_list_works_while_the_team_database_is_down(home: Path, capsys, monkeypatch) -> None:
    write_config(home, f"""
[profiles.local.example]
path = "{home / 'example-cloud.json'}"
token = "tok-3x4mpl3-s3cr3t-9qz7"
""")
    monkeypatch.setenv("VM_STORE_URL", f"postgresql://alice:{PASSWORD}@127.0.0.1:{closed_port()}/vm")
    code, out, err = vm(capsys, "list", "--provider", "example", "-o", "json")
    assert code == 0 and json.loads(out) == []
    assert "fleet names not shown: cannot connect to the fleet store" in err and PASSWORD not in err
