"""A real user's first day, through the real `vm` executable: no vm config at all, only the clouds' own credential
files that `mock-clouds credentials` wrote (~/.crusoe/config, ~/.nebius/config.yaml with a service account and its
credentials JSON, ~/.lambda_cloud/lambda_keys) and the export lines it printed, against mock clouds served over
TLS with a CA of their own. Nebius authenticates as a service account: a JWT exchanged for access tokens that
expire, so a long command must renew them.
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mock_clouds import control

from .conftest import TIMEOUT, VM, VmHome

FLEET_GPU = "H100:8"  # each cloud has 8-GPU H100 capacity in the default scenario


class RealUser(VmHome):
    """A VM_HOME without config.toml, whose HOME holds only the clouds' own files."""

    def __init__(self, path: Path, clouds: Path) -> None:
        super().__init__(path)
        self.clouds = clouds
        done = self.mock_cli("credentials", "--home", str(self.user_home))
        assert done.returncode == 0, done.stderr
        self.exports = dict(line.removeprefix("export ").split("=", 1) for line in done.stdout.splitlines())
        self.env.update(self.exports)

    def mock_cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mock_clouds", *args, "--state-dir", str(self.clouds)],
                              env=self.env, capture_output=True, text=True, timeout=TIMEOUT, check=False)

    @property
    def mock_dir(self) -> Path:  # the clouds this user's files point at (VmHome.inventory reads them)
        return self.clouds

    def stop(self) -> None:
        """Nothing to stop: the clouds are the module's (the `tls_clouds` fixture stops them after its last test)."""

    def clouds_endpoints(self) -> dict[str, Any]:
        return control.read_endpoints(self.clouds)


@pytest.fixture(scope="module")
def tls_clouds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    state = tmp_path_factory.mktemp("tls-clouds")
    done = subprocess.run([sys.executable, "-m", "mock_clouds", "serve", "--detach", "--tls", "--time-scale", "0.002",
                           "--state-dir", str(state)], capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert done.returncode == 0, done.stderr
    try:
        yield state
    finally:
        control.stop_server(state)


@pytest.fixture
def user(tmp_path: Path, tls_clouds: Path) -> RealUser:
    return RealUser(tmp_path / "vm-home", tls_clouds)


def secrets_of(user: RealUser) -> list[str]:
    """Every secret the user's files and the clouds hold: none may appear in anything vm prints."""
    ep = user.clouds_endpoints()
    credentials = json.loads((user.user_home / ".nebius/credentials.json").read_text())
    key_lines = credentials["subject-credentials"]["private-key"].splitlines()[1:-1]
    return [ep["crusoe"]["secret_key"], ep["lambda"]["api_key"], ep["nebius"]["token"], *key_lines[:3]]


def test_the_clouds_own_files_alone_configure_all_three_over_tls(user: RealUser) -> None:
    assert not (user.path / "config.toml").exists()
    shown = user.ok("providers", "-o", "json")
    reports = {r["name"]: r for r in shown.json()}
    ep = user.clouds_endpoints()
    assert {n: reports[n]["status"] for n in ("crusoe", "lambda", "nebius")} == dict.fromkeys(
        ("crusoe", "lambda", "nebius"), "ok")
    assert reports["crusoe"]["endpoint"] == ep["crusoe"]["url"] and ep["crusoe"]["url"].startswith("https://")
    assert reports["lambda"]["endpoint"] == ep["lambda"]["url"] and ep["lambda"]["url"].startswith("https://")
    assert reports["nebius"]["endpoint"] == ep["nebius"]["target"] and ep["nebius"]["target"].startswith("localhost:")
    assert "profile auto (auto: the credentials found for crusoe, lambda, nebius)" in shown.err
    doc = user.ok("config", "show", "-o", "json").json()
    assert doc["providers"]["crusoe"]["settings"]["project_id"] == {
        "value": ep["crusoe"]["project_name"], "source": "file", "from": "~/.crusoe/config [default]",
        "secret": False}
    assert doc["providers"]["nebius"]["settings"]["service_account_file"]["from"].startswith(
        "~/.nebius/config.yaml profile")


def test_a_fleet_across_the_three_clouds_is_created_and_destroyed(user: RealUser) -> None:
    made = user.ok("--debug", "fleet", "create", "--gpu", FLEET_GPU, "--count", "6", "--name", "day1", "-o", "json")
    fleet = made.json()
    assert fleet["state"] == "active"
    assert sorted(m["provider"] for m in fleet["members"]) == ["crusoe"] * 2 + ["lambda"] * 2 + ["nebius"] * 2
    gone = user.ok("--debug", "fleet", "destroy", "day1", "--yes", "-o", "json")
    assert gone.json()["destroyed"] == 6
    assert [i for i in user.inventory() if i["name"].startswith("day1-") and i["state"] != "terminated"] == []
    printed = made.out + made.err + gone.out + gone.err
    assert not [s for s in secrets_of(user) if s in printed]
    assert "eyJ" not in printed  # no JWT or JWT-shaped token (their base64url header) in any --debug line


def test_nebius_tokens_shorter_than_a_create_and_a_watch_are_renewed(user: RealUser) -> None:
    ep = user.clouds_endpoints()
    lifetime = control.set_token_lifetime(ep, 500)  # x time scale 0.002: tokens that last 1 s
    assert lifetime["expires_in"] == 1
    slow = user.mock_cli("faults", "--provider", "nebius", "--latency-ms", "250")  # each call 0.25 s: a create > 1 s
    assert slow.returncode == 0, slow.stderr
    before = control.exchange_count(ep)
    try:
        creating = subprocess.Popen([VM, "fleet", "create", "--gpu", FLEET_GPU, "--count", "2", "--providers",
                                     "nebius", "--name", "renew"],
                                    env=user.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        watched = user("fleet", "status", "renew", "--watch", "--interval", "0.3")
        _, err = creating.communicate(timeout=TIMEOUT)
        assert creating.returncode == 0, err
        assert watched.code in (0, 3), watched.err  # 3: it looked before the fleet was recorded
        status = user.ok("fleet", "status", "renew", "--watch", "--interval", "0.3", "-o", "json").json()
        assert status["state"] == "active"
        exchanges = control.token_exchanges(ep)
        assert exchanges["count"] - before > 3  # three vm processes, and at least one renewal within one of them
        gone = user.ok("fleet", "destroy", "renew", "--yes")
        assert "exit 4" not in gone.err
    finally:
        control.set_token_lifetime(ep, 43200)
        user.mock_cli("faults", "--provider", "nebius", "--latency-ms", "0")


def test_a_ca_that_did_not_sign_the_servers_is_a_tls_error_naming_the_variable(user: RealUser, tmp_path: Path
                                                                               ) -> None:
    other = tmp_path / "other-ca.pem"
    other.write_text(_another_ca())
    env = {name: str(other) for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH")}
    result = user("list", env=env)
    assert result.code == 8 and result.out == ""
    assert result.err.count("certificate") >= 3 and "SSL_CERT_FILE" in result.err
    for name in ("Crusoe", "Lambda", "nebius"):
        assert name.lower() in result.err.lower()


def _another_ca() -> str:
    """A self-signed CA certificate (PEM) that signed nothing the mock clouds serve."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "not the mock clouds' CA")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM).decode()
