"""Which SSH key a new VM gets, through the real executable, checked in the clouds' own inventory: one rule on the
three clouds (`--ssh-key PATH`, else the profile's `ssh_public_key`, else the cloud's own setting, else the first of
~/.ssh/id_ed25519.pub, id_ecdsa.pub, id_rsa.pub); no key at all is exit 2 with nothing created, `--no-ssh-key`
creates VMs nobody can log in to and says so, and a Lambda account's key of someone else is never chosen.

Each home's user has ~/.ssh/id_ed25519.pub (conftest, `VmHome.ssh_key`); the tests remove or add key files there.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.e2e.conftest import public_key

if TYPE_CHECKING:
    from conftest import VmHome

PROVIDERS = ["crusoe", "lambda", "nebius"]
SIZE = {"crusoe": "H100:8", "lambda": "H100", "nebius": "H100"}  # a size each cloud sells


def keys_of(home: VmHome, name: str) -> list[str]:
    """The public keys the one live VM called `name` was created with, as its cloud keeps them (inventory)."""
    (row,) = home.live(name)
    keys: list[str] = row["ssh_public_keys"]
    return keys


def create(home: VmHome, provider: str, name: str, *args: str) -> Any:
    return home.ok("create", "-p", provider, "--gpu", SIZE[provider], "--name", name, *args, "-o", "json").json()


def no_user_keys(home: VmHome) -> None:
    for path in (home.user_home / ".ssh").glob("*.pub"):
        path.unlink()


# ------------------------------------------------------------------------------------------ each rule, each cloud
@pytest.mark.parametrize("provider", PROVIDERS)
def test_without_any_setting_the_users_own_key_is_installed(shared_home: VmHome, provider: str) -> None:
    create(shared_home, provider, f"own-{provider}")
    assert keys_of(shared_home, f"own-{provider}") == [shared_home.ssh_key]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_ssh_key_wins_over_everything(fresh_home: VmHome, tmp_path: Path, provider: str) -> None:
    given = public_key("given@host")
    path = tmp_path / "given.pub"
    path.write_text(given + "\n")
    fresh_home.config(f'[profiles.local]\nembedded = true\n[profiles.local.{provider}]\n'
                      f'ssh_public_key = "{public_key("profile@host")}"\n')
    create(fresh_home, provider, "given", "--ssh-key", str(path))
    assert keys_of(fresh_home, "given") == [given]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_profiles_key_wins_over_the_users_files(fresh_home: VmHome, provider: str) -> None:
    profile = public_key("profile@host")
    fresh_home.config(f'[profiles.local]\nembedded = true\n[profiles.local.{provider}]\nssh_public_key = "{profile}"\n')
    create(fresh_home, provider, "profiled")
    assert keys_of(fresh_home, "profiled") == [profile]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_first_of_ed25519_ecdsa_rsa_in_ssh_is_used(fresh_home: VmHome, provider: str) -> None:
    no_user_keys(fresh_home)
    rsa = fresh_home.user_ssh_key("id_rsa.pub", rsa_key())
    ecdsa = fresh_home.user_ssh_key("id_ecdsa.pub", ecdsa_key())
    create(fresh_home, provider, "by-ecdsa")
    assert keys_of(fresh_home, "by-ecdsa") == [ecdsa]
    (fresh_home.user_home / ".ssh" / "id_ecdsa.pub").unlink()
    create(fresh_home, provider, "by-rsa")
    assert keys_of(fresh_home, "by-rsa") == [rsa]


def test_crusoes_own_ssh_public_key_file_is_used_over_the_users_files(fresh_home: VmHome) -> None:
    """A profile of Crusoe's own files (~/.crusoe/config, here pointed at the mock Crusoe): its
    ssh_public_key_file is the key, not ~/.ssh/id_ed25519.pub."""
    fresh_home.ok("providers")  # starts the embedded mock clouds, whose Crusoe the file then names
    crusoe = fresh_home.endpoints()["crusoe"]
    own = public_key("crusoe-cli@host")
    key_file = fresh_home.user_home / "crusoe_key.pub"
    key_file.write_text(own + "\n")
    (fresh_home.user_home / ".crusoe").mkdir()
    (fresh_home.user_home / ".crusoe" / "config").write_text(
        f'[default]\naccess_key_id = "{crusoe["access_key_id"]}"\nsecret_key = "{crusoe["secret_key"]}"\n'
        f'default_project = "{crusoe["project_id"]}"\napi_endpoint = "{crusoe["url"]}"\n'
        f'ssh_public_key_file = "{key_file}"\n')
    shown = fresh_home.ok("--profile", "auto", "config", "show", "-o", "json").json()
    assert shown["providers"]["crusoe"]["settings"]["ssh_public_key"]["from"] == \
        "~/.crusoe/config [default] ssh_public_key_file"
    fresh_home.ok("--profile", "auto", "create", "-p", "crusoe", "--gpu", "H100:8", "--name", "crusoe-own")
    assert keys_of(fresh_home, "crusoe-own") == [own]


def test_config_show_says_the_key_comes_from_the_users_file(fresh_home: VmHome) -> None:
    shown = fresh_home.ok("config", "show", "-o", "json").json()
    for provider in PROVIDERS:
        setting = shown["providers"][provider]["settings"]["ssh_public_key"]
        assert setting["from"] == "~/.ssh/id_ed25519.pub", setting


# ------------------------------------------------------------------------------------------ Lambda's account keys
def test_a_lambda_account_whose_first_key_is_someone_elses(shared_home: VmHome) -> None:
    """The mock account's first key ("default") belongs to someone else: it is never the one launched with; the
    user's key is added under a name of its fingerprint, once, and used."""
    first = create(shared_home, "lambda", "not-theirs-1")
    again = create(shared_home, "lambda", "not-theirs-2")
    native = shared_home.ok("get", first["id"], "-p", "lambda", "-o", "json", "--raw").json()["native"]
    assert native["ssh_key_names"] != ["default"] and native["ssh_key_names"][0].startswith("vm-")
    assert keys_of(shared_home, "not-theirs-1") == keys_of(shared_home, "not-theirs-2") == [shared_home.ssh_key]
    for vm in (first, again):
        shared_home.ok("destroy", vm["id"], "-p", "lambda")


# ------------------------------------------------------------------------------------------ no key
@pytest.mark.parametrize("command", [["create", "-p", "crusoe", "--gpu", "H100:8", "--name", "keyless"],
                                     ["create", "-p", "lambda", "--gpu", "H100", "--name", "keyless"],
                                     ["create", "-p", "nebius", "--gpu", "H100", "--name", "keyless"],
                                     ["fleet", "create", "--gpu", "H100:8", "--count", "2", "--name", "keyless"]])
def test_no_key_anywhere_is_exit_2_and_nothing_is_created(fresh_home: VmHome, command: list[str]) -> None:
    no_user_keys(fresh_home)
    result = fresh_home(*command)
    assert result.code == 2, result.err
    assert "no SSH public key for new VMs on" in result.err
    assert "hint: give one with --ssh-key PATH, or make one with `ssh-keygen -t ed25519`" in result.err
    assert [r for r in fresh_home.inventory() if r["name"].startswith("keyless")] == []
    assert "keyless" not in fresh_home.ok("fleet", "list").out


@pytest.mark.parametrize("provider", ["crusoe", "nebius"])
def test_no_ssh_key_creates_a_vm_nobody_can_log_in_to_and_says_so(fresh_home: VmHome, provider: str) -> None:
    result = fresh_home.ok("create", "-p", provider, "--gpu", SIZE[provider], "--name", "nobody", "--no-ssh-key")
    assert "nobody can log in" in result.err
    keys = keys_of(fresh_home, "nobody")
    assert fresh_home.ssh_key not in keys
    assert keys == ([] if provider == "nebius" else [keys[0]])  # Crusoe requires one: a key nobody holds


def test_no_ssh_key_on_lambda_is_refused_before_any_call(fresh_home: VmHome) -> None:
    result = fresh_home("create", "-p", "lambda", "--gpu", "H100", "--name", "nobody", "--no-ssh-key")
    assert result.code == 2 and "--no-ssh-key: lambda cannot create a VM without an SSH key" in result.err
    assert fresh_home.live("nobody") == []


def test_ssh_key_and_no_ssh_key_together_are_a_usage_error(fresh_home: VmHome, tmp_path: Path) -> None:
    path = tmp_path / "k.pub"
    path.write_text(public_key() + "\n")
    result = fresh_home("create", "-p", "nebius", "--gpu", "H100", "--ssh-key", str(path), "--no-ssh-key")
    assert result.code == 2 and "contradict" in result.err


# ------------------------------------------------------------------------------------------ the ssh line
def test_a_stopped_crusoe_vm_has_no_address_and_no_ssh_line(shared_home: VmHome) -> None:
    made = create(shared_home, "crusoe", "napper")
    assert made["public_ip"] and made["ssh"] == f"ssh ubuntu@{made['public_ip']}"
    shared_home.ok("stop", made["id"], "-p", "crusoe")
    stopped = shared_home.ok("get", made["id"], "-p", "crusoe", "-o", "json").json()
    assert stopped["state"] == "stopped" and stopped["public_ip"] is None and stopped["ssh"] is None
    table = shared_home.ok("get", made["id"], "-p", "crusoe")
    assert "ssh:" not in table.out
    listed = [i for i in shared_home.ok("list", "-p", "crusoe", "-o", "json").json() if i["id"] == made["id"]]
    assert listed[0]["ssh"] is None
    shared_home.ok("start", made["id"], "-p", "crusoe")
    started = shared_home.ok("get", made["id"], "-p", "crusoe", "-o", "json").json()
    assert started["public_ip"] and started["ssh"] == f"ssh ubuntu@{started['public_ip']}"
    shared_home.ok("destroy", made["id"], "-p", "crusoe")


def rsa_key() -> str:
    """A well-formed ssh-rsa public key line (a blob of the right shape; nobody holds a private half)."""
    import base64
    import secrets

    def string(data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + data

    blob = string(b"ssh-rsa") + string(b"\x01\x00\x01") + string(b"\x00" + secrets.token_bytes(256))
    return f"ssh-rsa {base64.b64encode(blob).decode()} rsa@host"


def ecdsa_key() -> str:
    import base64
    import secrets

    def string(data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + data

    blob = string(b"ecdsa-sha2-nistp256") + string(b"nistp256") + string(b"\x04" + secrets.token_bytes(64))
    return f"ecdsa-sha2-nistp256 {base64.b64encode(blob).decode()} ecdsa@host"
