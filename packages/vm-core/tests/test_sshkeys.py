"""Public key files and settings: what --ssh-key and ssh_public_key accept, and private keys refused unread."""

from __future__ import annotations

import base64
import secrets
from pathlib import Path

import pytest
from vm_core.errors import ConfigError, UsageError
from vm_core.model import Instance, InstanceState
from vm_core.sshkeys import MAX_KEY_FILE, parse_public_key, public_key_setting, read_public_key


def key_line(kind: str = "ssh-ed25519", comment: str = "me@laptop") -> str:
    def string(data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + data

    return f"{kind} {base64.b64encode(string(kind.encode()) + string(secrets.token_bytes(32))).decode()} {comment}"


@pytest.mark.parametrize("kind", ["ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "sk-ssh-ed25519@openssh.com"])
def test_one_key_line_of_each_type_is_read(tmp_path: Path, kind: str) -> None:
    line = key_line(kind)
    path = tmp_path / "key.pub"
    path.write_text(f"\n{line}\r\n\n")
    assert read_public_key(str(path)) == line


def test_a_tilde_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    line = key_line()
    (tmp_path / "id.pub").write_text(line)
    assert read_public_key("~/id.pub") == line


@pytest.mark.parametrize(("text", "reason"), [
    ("", "found 0 lines"),
    (key_line() + "\n" + key_line(), "found 2 lines"),
    ("ssh-ed25519", "not an OpenSSH public key"),
    ("ssh-ed25519 !!!notbase64", "not a valid ssh-ed25519 public key"),
    (key_line("ssh-rsa").replace("ssh-rsa ", "ssh-ed25519 ", 1), "not a valid ssh-ed25519 public key"),
    ("---- BEGIN SSH2 PUBLIC KEY ----", "not an OpenSSH public key"),
], ids=["empty", "two-lines", "no-key", "not-base64", "rsa-body-named-ed25519", "ssh2-format"])
def test_what_is_not_one_public_key_line_is_refused(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_public_key(text)


@pytest.mark.parametrize("header", ["-----BEGIN OPENSSH PRIVATE KEY-----", "-----BEGIN RSA PRIVATE KEY-----",
                                    "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----", "PuTTY-User-Key-File-3: ssh-ed25519"])
def test_a_private_key_file_is_refused_by_its_header(tmp_path: Path, header: str) -> None:
    path = tmp_path / "secret"
    path.write_text(f"{header}\nSECRET-MATERIAL\n")
    with pytest.raises(UsageError, match="is a private key; vm never reads or sends private keys") as err:
        read_public_key(str(path))
    assert "SECRET-MATERIAL" not in str(err.value) + (err.value.suggestion or "")
    assert err.value.suggestion == f"ssh-keygen -y -f {path} > {path}.pub"


def test_a_file_beside_its_pub_is_refused_without_being_opened(tmp_path: Path) -> None:
    private = tmp_path / "id_ed25519"
    private.write_text(key_line())  # even a file that would parse: its name says it is the private half
    private.chmod(0)  # and opening it would fail: it is never opened
    (tmp_path / "id_ed25519.pub").write_text(key_line())
    with pytest.raises(UsageError, match=f"give its public key, {tmp_path / 'id_ed25519.pub'}"):
        read_public_key(str(private))


@pytest.mark.parametrize(("make", "reason"), [
    (lambda p: None, "no such file"),
    (lambda p: p.mkdir(), "not a file"),
    (lambda p: p.write_bytes(b"\xff\xfe\x00binary"), "not a text file"),
    (lambda p: p.write_text("x" * (MAX_KEY_FILE + 1)), "too large"),
])
def test_bad_paths_are_usage_errors(tmp_path: Path, make: object, reason: str) -> None:
    path = tmp_path / "key.pub"
    make(path)  # type: ignore[operator]
    with pytest.raises(UsageError, match=reason):
        read_public_key(str(path))


def test_the_setting_is_checked_as_a_config_error() -> None:
    line = key_line()
    assert public_key_setting(f"  {line}\n", "lambda") == line
    assert public_key_setting(None, "lambda") is None and public_key_setting("", "lambda") is None
    with pytest.raises(ConfigError, match="the nebius setting ssh_public_key: this is a private key"):
        public_key_setting("-----BEGIN OPENSSH PRIVATE KEY-----", "nebius")


def test_the_ssh_command_line_is_the_argv_vm_ssh_runs() -> None:
    vm = Instance("crusoe", "i", "n", InstanceState.RUNNING, "H100", 1, "r", "s", public_ip="198.18.0.7",
                  ssh_user="ubuntu")
    assert vm.ssh == "ssh ubuntu@198.18.0.7" and vm.ssh_argv() == ["ssh", "ubuntu@198.18.0.7"]
    assert vm.ssh_argv(["-x", "a b"], ["-o", "BatchMode=yes"]) == [
        "ssh", "-o", "BatchMode=yes", "--", "ubuntu@198.18.0.7", "-x", "a b"]
    assert Instance("crusoe", "i", "n", InstanceState.RUNNING, "H100", 1, "r", "s").ssh == ""
