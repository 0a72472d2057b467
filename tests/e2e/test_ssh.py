"""`--ssh-key`, `vm ssh` and `vm fleet ssh` through the real executable, against the mock clouds.

A stand-in `ssh` on PATH records its arguments (one JSON file per run), prints a line on stdout and one on
stderr, and exits with the code SSH_EXITS maps its destination's IP to (default 0). The key's way into each
cloud is checked where the cloud keeps it: the inventory (Crusoe: the real API never shows the key back), the
account's SSH keys and the instance's `ssh_key_names` (Lambda), the instance's cloud-init user data (Nebius).
"""

from __future__ import annotations

import base64
import copy
import json
import os
import secrets
import shlex
import sys
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import VmHome

PROVIDERS = ["crusoe", "lambda", "nebius"]
BATCH = ["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new", "-o", "ConnectTimeout=30"]

STAND_IN = """#!{python}
import json, os, sys, uuid
args = sys.argv[1:]
with open(os.path.join(os.environ["SSH_RECORD"], uuid.uuid4().hex + ".json"), "w") as f:
    json.dump(args, f)
target = next(a for a in args if "@" in a)
print("hello from " + target)
print("note from ssh", file=sys.stderr)
sys.exit(json.loads(os.environ.get("SSH_EXITS", "{{}}")).get(target.split("@")[1], 0))
"""

SIZE = {"crusoe": "H100:8", "lambda": "H100", "nebius": "H100"}  # a size each cloud sells


def public_key(comment: str = "me@laptop") -> str:
    """A well-formed ed25519 public key line nobody holds the private half of."""
    def string(data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + data

    blob = string(b"ssh-ed25519") + string(secrets.token_bytes(32))
    return f"ssh-ed25519 {base64.b64encode(blob).decode()} {comment}"


class Ssh:
    """The stand-in ssh: its directory goes first on PATH; `runs()` are the argument lists it was called with."""

    def __init__(self, root: Path) -> None:
        self.bin = root / "bin"
        self.records = root / "records"
        self.bin.mkdir(parents=True)
        self.records.mkdir(parents=True)
        script = self.bin / "ssh"
        script.write_text(STAND_IN.format(python=sys.executable))
        script.chmod(0o755)

    def env(self, exits: dict[str, int] | None = None) -> dict[str, str]:
        return {"PATH": f"{self.bin}{os.pathsep}{os.environ['PATH']}", "SSH_RECORD": str(self.records),
                "SSH_EXITS": json.dumps(exits or {})}

    def runs(self) -> list[list[str]]:
        found = [json.loads(p.read_text()) for p in self.records.glob("*.json")]
        for path in self.records.glob("*.json"):
            path.unlink()
        return found


@pytest.fixture
def ssh(tmp_path: Path) -> Ssh:
    return Ssh(tmp_path / "ssh")


@pytest.fixture
def key_file(tmp_path: Path) -> tuple[Path, str]:
    key = public_key()
    path = tmp_path / "id_ed25519.pub"
    path.write_text(key + "\n")
    return path, key


def lambda_keys(home: VmHome) -> list[dict[str, Any]]:
    """The Lambda account's SSH keys, read over the wire (GET /ssh-keys)."""
    lam = home.endpoints()["lambda"]
    request = urllib.request.Request(lam["url"] + "/ssh-keys", headers={"Authorization": f"Bearer {lam['api_key']}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        data: list[dict[str, Any]] = json.loads(response.read())["data"]
    return data


def assert_key_installed(home: VmHome, instance: dict[str, Any], key: str) -> None:
    """`key` reached the VM the way its cloud takes keys."""
    provider = instance["provider"]
    (row,) = [r for r in home.inventory() if r["id"] == instance["id"]]
    assert row["ssh_public_keys"] == [key]  # exactly this key, as the cloud keeps it
    if provider == "crusoe":
        assert row["ssh_public_key"] == key
        return
    native = home.ok("get", instance["id"], "-p", provider, "-o", "json", "--raw").json()["native"]
    if provider == "lambda":
        (named,) = [k for k in lambda_keys(home) if k["public_key"] == key]
        assert native["ssh_key_names"] == [named["name"]]
        return
    user_data = native["spec"]["cloudInitUserData"]
    assert user_data.startswith("#cloud-config\nusers:\n  - name: ubuntu\n")
    assert f'ssh_authorized_keys:\n      - "{key}"\n' in user_data


# ------------------------------------------------------------------------------------------ --ssh-key
@pytest.mark.parametrize("provider", PROVIDERS)
def test_create_installs_the_key_the_clouds_way(shared_home: VmHome, key_file: tuple[Path, str],
                                                provider: str) -> None:
    path, key = key_file
    made = shared_home.ok("create", "-p", provider, "--gpu", SIZE[provider], "--name", f"keyed-{provider}",
                          "--ssh-key", str(path), "-o", "json").json()
    assert_key_installed(shared_home, made, key)
    if provider == "lambda":  # a second VM with the same key reuses the account's key
        again = shared_home.ok("create", "-p", "lambda", "--gpu", "H100", "--name", "keyed-lambda-2",
                               "--ssh-key", str(path), "-o", "json").json()
        assert len([k for k in lambda_keys(shared_home) if k["public_key"] == key]) == 1
        shared_home.ok("destroy", again["id"], "-p", "lambda")
    shared_home.ok("destroy", made["id"], "-p", provider)


@pytest.mark.parametrize("provider", ["lambda", "nebius"])
def test_the_profile_ssh_public_key_setting_is_the_default(fresh_home: VmHome, provider: str) -> None:
    key = public_key("profile@host")
    fresh_home.path.mkdir(parents=True)
    fresh_home.config(f'[profiles.local]\nembedded = true\n[profiles.local.{provider}]\nssh_public_key = "{key}"\n')
    made = fresh_home.ok("create", "-p", provider, "--gpu", SIZE[provider], "--name", "from-profile",
                         "-o", "json").json()
    assert_key_installed(fresh_home, made, key)


def test_a_private_key_in_the_profile_setting_is_a_config_error(fresh_home: VmHome) -> None:
    fresh_home.path.mkdir(parents=True)
    fresh_home.config('[profiles.local]\nembedded = true\n[profiles.local.nebius]\n'
                      'ssh_public_key = "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjE"\n')
    result = fresh_home("create", "-p", "nebius", "--gpu", "H100", "--name", "never")
    assert result.code == 4 and "private key" in result.err
    assert "b3BlbnNzaC1rZXktdjE" not in result.out + result.err
    assert fresh_home.live("never") == []


PRIVATE_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW" + "Q" * 40


@pytest.mark.parametrize("with_pub", [True, False])
@pytest.mark.parametrize("command", [["create", "-p", "crusoe", "--gpu", "H100:8", "--name", "refused"],
                                     ["fleet", "create", "--gpu", "H100:8", "--count", "1", "--name", "refused"]])
def test_a_private_key_file_is_refused_before_any_call(autostart_home: VmHome, tmp_path: Path, with_pub: bool,
                                                       command: list[str]) -> None:
    private = tmp_path / "id_ed25519"
    private.write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PRIVATE_BODY}\n-----END OPENSSH PRIVATE KEY-----\n")
    if with_pub:
        (tmp_path / "id_ed25519.pub").write_text(public_key() + "\n")
    result = autostart_home(*command, "--ssh-key", str(private))
    assert result.code == 2, result.err
    assert "is a private key; vm never reads or sends private keys" in result.err
    assert (f"{private}.pub" in result.err) if with_pub else f"hint: ssh-keygen -y -f {private} >" in result.err
    assert PRIVATE_BODY[:20] not in result.out + result.err
    assert not autostart_home.mock_dir.exists()  # refused while parsing: not even the mock clouds were started


@pytest.mark.parametrize(("content", "message"), [
    (None, "no such file"),
    ("", "expected one OpenSSH public key line"),
    ("ssh-ed25519 bm90IGEga2V5 me\n", "not a valid ssh-ed25519 public key"),
    ("hello world\n", "not an OpenSSH public key"),
])
def test_a_bad_key_path_is_refused_before_any_call(autostart_home: VmHome, tmp_path: Path, content: str | None,
                                                   message: str) -> None:
    path = tmp_path / "key.pub"
    if content is not None:
        path.write_text(content)
    result = autostart_home("create", "-p", "lambda", "--gpu", "H100", "--ssh-key", str(path), "-o", "json")
    assert result.code == 2
    assert message in result.error()["message"] and result.error()["code"] == "usage"
    assert not autostart_home.mock_dir.exists()


# ------------------------------------------------------------------------------------------ vm ssh
@pytest.mark.parametrize("provider", PROVIDERS)
def test_vm_ssh_runs_the_command_line_vm_get_shows(shared_home: VmHome, ssh: Ssh, provider: str) -> None:
    name = f"login-{provider}"
    made = shared_home.ok("create", "-p", provider, "--gpu", SIZE[provider], "--name", name, "-o", "json").json()
    got = shared_home.ok("get", made["id"], "-p", provider, "-o", "json").json()
    ip = got["public_ip"]
    assert got["ssh"] == f"ssh ubuntu@{ip}"

    by_name = shared_home.ok("ssh", name, env=ssh.env())
    assert ssh.runs() == [shlex.split(got["ssh"])[1:]]
    assert by_name.out == f"hello from ubuntu@{ip}\n" and "note from ssh" in by_name.err

    shared_home.ok("ssh", made["id"], "--provider", provider, "--", "nvidia-smi", "-L", env=ssh.env())
    assert ssh.runs() == [["--", f"ubuntu@{ip}", "nvidia-smi", "-L"]]

    failed = shared_home("ssh", name, "--", "false", env=ssh.env({ip: 42}))
    assert failed.code == 42  # the remote command's status is vm's
    shared_home.ok("destroy", made["id"], "-p", provider)


def test_vm_ssh_refuses_an_ambiguous_name_and_says_when_none(shared_home: VmHome, ssh: Ssh) -> None:
    made = {p: shared_home.ok("create", "-p", p, "--gpu", SIZE[p], "--name", "twin", "-o", "json").json()
            for p in ("crusoe", "lambda")}
    ambiguous = shared_home("ssh", "twin", env=ssh.env())
    assert ambiguous.code == 2
    assert made["crusoe"]["id"] in ambiguous.err and made["lambda"]["id"] in ambiguous.err
    assert "2 VMs are called twin" in ambiguous.err
    shared_home.ok("ssh", "twin", "-p", "lambda", env=ssh.env())
    assert ssh.runs() == [[f"ubuntu@{made['lambda']['public_ip']}"]]

    missing = shared_home("ssh", "no-such-vm", env=ssh.env())
    assert missing.code == 3 and "no VM has the name or id no-such-vm" in missing.err
    assert ssh.runs() == []
    for provider, vm in made.items():
        shared_home.ok("destroy", vm["id"], "-p", provider)


def test_vm_ssh_to_a_stopped_vm_says_how_to_start_it(shared_home: VmHome, ssh: Ssh) -> None:
    made = shared_home.ok("create", "-p", "crusoe", "--gpu", "H100:8", "--name", "sleepy", "-o", "json").json()
    shared_home.ok("stop", made["id"], "-p", "crusoe")
    result = shared_home("ssh", "sleepy", env=ssh.env())
    assert result.code == 1 and "is stopped" in result.err
    assert f"hint: vm start {made['id']} --provider crusoe" in result.err
    assert ssh.runs() == []
    shared_home.ok("destroy", made["id"], "-p", "crusoe")


@pytest.mark.parametrize("command", [["ssh", "anything"], ["fleet", "ssh", "anything", "--", "true"]])
def test_without_ssh_on_path_exit_4(shared_home: VmHome, tmp_path: Path, command: list[str]) -> None:
    result = shared_home(*command, env={"PATH": str(tmp_path)})
    assert result.code == 4
    assert "no `ssh` on PATH" in result.err and "hint: sudo apt-get install openssh-client" in result.err


# ------------------------------------------------------------------------------------------ vm fleet ssh
def test_fleet_ssh_runs_everywhere_prefixed_and_lists_failures(shared_home: VmHome, ssh: Ssh,
                                                               key_file: tuple[Path, str]) -> None:
    path, key = key_file
    made = shared_home.ok("fleet", "create", "--gpu", "H100:8", "--count", "3", "--name", "squad",
                          "--ssh-key", str(path), "-o", "json").json()
    members = {m["name"]: m for m in made["members"]}
    assert sorted(m["provider"] for m in members.values()) == PROVIDERS
    for member in members.values():
        assert_key_installed(shared_home, member, key)

    done = shared_home.ok("fleet", "ssh", "squad", "--", "nvidia-smi", "-L", env=ssh.env())
    assert sorted(done.out.splitlines()) == sorted(f"{n}: hello from ubuntu@{m['public_ip']}"
                                                   for n, m in members.items())
    assert sorted(line for line in done.err.splitlines() if "note from ssh" in line) == sorted(
        f"{n}: note from ssh" for n in members)
    assert sorted(ssh.runs()) == sorted([*BATCH, "--", f"ubuntu@{m['public_ip']}", "nvidia-smi", "-L"]
                                        for m in members.values())

    bad_name, bad = sorted(members.items())[0]
    failed = shared_home("fleet", "ssh", "squad", "--", "false", env=ssh.env({bad["public_ip"]: 3}))
    assert failed.code == 7
    assert f"vm: error: {bad_name}: exit 3 (the command failed)" in failed.err
    assert f"1 of 3 members failed: {bad_name}" in failed.err
    assert len(failed.out.splitlines()) == 3  # every member ran

    as_json = shared_home("fleet", "ssh", "squad", "-o", "json", "--", "true", env=ssh.env({bad["public_ip"]: 3}))
    assert as_json.code == 7
    docs = {d["member"]: d for d in as_json.json()}
    assert {n: d["exit_code"] for n, d in docs.items()} == {n: 3 if n == bad_name else 0 for n in members}
    assert docs[bad_name]["stdout"] == f"hello from ubuntu@{bad['public_ip']}\n"
    assert as_json.error()["code"] == "partial_failure"

    everywhere = shared_home("fleet", "ssh", "squad", "--", "false",
                             env=ssh.env({m["public_ip"]: 1 for m in members.values()}))
    assert everywhere.code == 7 and "3 of 3 members failed" in everywhere.err

    (crusoe_name, crusoe), = [(n, m) for n, m in members.items() if m["provider"] == "crusoe"]
    shared_home.ok("stop", crusoe["id"], "-p", "crusoe")
    ssh.runs()
    partly = shared_home("fleet", "ssh", "squad", "--", "true", env=ssh.env())
    assert partly.code == 7 and f"1 of 3 members failed: {crusoe_name}" in partly.err
    assert f"vm: error: {crusoe_name}: crusoe VM {crusoe_name} ({crusoe['id']}) is stopped" in partly.err
    assert sorted(line.split(":")[0] for line in partly.out.splitlines()) == sorted(set(members) - {crusoe_name})
    assert len(ssh.runs()) == 2
    shared_home.ok("fleet", "destroy", "squad", "--yes")


def test_fleet_ssh_of_an_unknown_fleet_is_not_found(shared_home: VmHome, ssh: Ssh) -> None:
    result = shared_home("fleet", "ssh", "no-such-fleet", "--", "true", env=ssh.env())
    assert result.code == 3
    assert ssh.runs() == []


def test_the_hints_of_vm_ssh_are_commands_that_run(shared_home: VmHome, ssh: Ssh, tmp_path: Path) -> None:
    from tests.e2e.test_hints import assert_runs, commands, hints

    made = {p: shared_home.ok("create", "-p", p, "--gpu", SIZE[p], "--name", "hint-twin", "-o", "json").json()
            for p in ("crusoe", "nebius")}
    shared_home.ok("stop", made["nebius"]["id"], "-p", "nebius")
    runs = [shared_home("ssh", "hint-twin", env=ssh.env()), shared_home("ssh", "nowhere", env=ssh.env()),
            shared_home("ssh", made["nebius"]["id"], "-p", "nebius", env=ssh.env()),
            shared_home("fleet", "ssh", "nowhere", "--", "true", env=ssh.env())]
    found = [c for run in runs for h in hints(run) for c in commands(h)]
    assert sorted(found) == sorted([f"vm ssh {made['crusoe']['id']} --provider crusoe", "vm list",
                                    f"vm start {made['nebius']['id']} --provider nebius"])
    with_stand_in = copy.copy(shared_home)  # the hints run by a shell whose PATH has the stand-in ssh
    with_stand_in.env = {**shared_home.env, **ssh.env()}
    for command in found:
        assert_runs(with_stand_in, command)
    private = tmp_path / "id_test"
    private.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    refused = shared_home("create", "-p", "crusoe", "--gpu", "H100:8", "--ssh-key", str(private))
    assert hints(refused) == [f"ssh-keygen -y -f {private} > {private}.pub"]
    for provider, vm in made.items():
        shared_home.ok("destroy", vm["id"], "-p", provider)
