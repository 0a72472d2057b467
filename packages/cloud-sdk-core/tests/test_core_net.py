"""cloud_sdk_core.net: the CA bundle chosen from the environment, and diagnose's one-phrase causes, against real
sockets on 127.0.0.1 (nothing listening, a silent server, a self-signed TLS server, a CONNECT proxy) and a name
under .invalid."""

from __future__ import annotations

import base64
import dataclasses
import os
import ssl
import time
from pathlib import Path

import pytest
from cloud_sdk_core.net import (
    FAIL_FAST,
    SYSTEM_CA_FILES,
    Cause,
    CauseKind,
    FirstContact,
    ca_file,
    diagnose,
    system_ca_file,
)
from sdk_netkit import ConnectProxy, SilentServer, TLSFront, closed_port, make_cert

NAMES = ("REQUESTS_CA_BUNDLE", "SSL_CERT_FILE")


def _expected_system_bundle() -> str | None:
    for path in SYSTEM_CA_FILES:
        if os.path.isfile(path):
            return path
    cafile = ssl.get_default_verify_paths().cafile
    return cafile if cafile and os.path.isfile(cafile) else None


def test_the_first_set_variable_wins(tmp_path: Path) -> None:
    first, second = tmp_path / "a.pem", tmp_path / "b.pem"
    first.write_text("x")
    second.write_text("y")
    assert ca_file({"SSL_CERT_FILE": str(second), "REQUESTS_CA_BUNDLE": str(first)}, NAMES) == str(first)
    assert ca_file({"SSL_CERT_FILE": str(second), "REQUESTS_CA_BUNDLE": ""}, NAMES) == str(second)


def test_a_variable_naming_a_missing_file_is_refused_saying_so(tmp_path: Path) -> None:
    missing = tmp_path / "nope.pem"
    with pytest.raises(ValueError, match=r"SSL_CERT_FILE=.*nope\.pem: no such CA file"):
        ca_file({"SSL_CERT_FILE": str(missing)}, NAMES)


def test_unset_means_the_system_trust_store() -> None:
    assert ca_file({}, NAMES) == system_ca_file() == _expected_system_bundle()


def test_a_cause_is_small_and_frozen() -> None:
    cause = Cause(CauseKind.REFUSED, "connection refused")
    assert str(cause) == "connection refused"
    with pytest.raises(dataclasses.FrozenInstanceError):
        cause.text = "x"  # type: ignore[misc]


def test_nothing_listening_is_refused() -> None:
    with closed_port() as port:
        assert diagnose("127.0.0.1", port, tls=False, ca_file=None) == Cause(CauseKind.REFUSED, "connection refused")


def test_a_name_under_invalid_does_not_resolve() -> None:
    started = time.monotonic()
    cause = diagnose("api.example.invalid", 443, tls=True, ca_file=None, timeout=1.5)
    assert cause.kind is CauseKind.DNS and "api.example.invalid" in cause.text
    assert time.monotonic() - started < 5  # bounded by the timeout, with room for a slow machine
    if "no answer" not in cause.text:  # a resolver that answers (rather than hangs) says the name is unknown
        assert cause.text == "DNS: api.example.invalid does not resolve"


def test_a_name_that_is_no_host_name_is_a_dns_cause_at_once() -> None:
    cause = diagnose("a" * 64 + ".example", 443, tls=True, ca_file=None, timeout=30)  # a label over 63 characters
    assert cause.kind is CauseKind.DNS and "no answer" not in cause.text


def test_a_silent_server_times_out_within_the_budget() -> None:
    with SilentServer() as server:
        cause = diagnose("127.0.0.1", server.port, tls=True, ca_file=None, timeout=0.3)
    assert cause == Cause(CauseKind.TIMEOUT, "TLS handshake: no answer within 0.3 s")


def test_a_self_signed_server_fails_verification_unless_trusted(tmp_path: Path) -> None:
    cert = make_cert(tmp_path)
    with TLSFront(cert) as server:
        bundle = _expected_system_bundle()
        untrusted = diagnose("127.0.0.1", server.port, tls=True, ca_file=bundle)
        trusted = diagnose("127.0.0.1", server.port, tls=True, ca_file=str(cert.cert))
    assert untrusted.kind is CauseKind.TLS
    trusting = bundle or "the system's default CA paths"
    assert untrusted.text == (
        f"TLS: certificate verify failed: self-signed certificate (trusting {trusting}; set SSL_CERT_FILE to the "
        "CA file that signed the server's certificate)"
    )
    assert trusted.kind is CauseKind.OK


def test_a_certificate_for_another_name_fails_verification(tmp_path: Path) -> None:
    cert = make_cert(tmp_path, host="other.example")
    with TLSFront(cert) as server:
        cause = diagnose("127.0.0.1", server.port, tls=True, ca_file=str(cert.cert))
    assert cause.kind is CauseKind.TLS and "IP address mismatch" in cause.text


def test_a_plain_port_that_accepts_is_ok() -> None:
    with SilentServer() as server:
        assert diagnose("127.0.0.1", server.port, tls=False, ca_file=None).kind is CauseKind.OK


def test_a_refused_proxy_is_named_without_its_credentials() -> None:
    with closed_port() as port:
        cause = diagnose("api.example.com", 443, tls=True, ca_file=None, proxy=f"http://user:pw@127.0.0.1:{port}")
    assert cause == Cause(CauseKind.PROXY, f"proxy http://127.0.0.1:{port}: connection refused")


def test_a_proxy_refusing_the_tunnel_is_a_proxy_cause() -> None:
    with ConnectProxy(status="403 Forbidden") as proxy:
        cause = diagnose("api.example.com", 443, tls=True, ca_file=None, proxy=proxy.url)
    assert cause == Cause(CauseKind.PROXY, f"proxy {proxy.url}: CONNECT api.example.com:443 answered 403 Forbidden")
    assert proxy.targets == ["api.example.com:443"]


def test_tls_through_a_proxy_verifies_the_target(tmp_path: Path) -> None:
    cert = make_cert(tmp_path)
    with TLSFront(cert) as server, ConnectProxy() as proxy:
        trusted = diagnose("127.0.0.1", server.port, tls=True, ca_file=str(cert.cert), proxy=proxy.url)
        untrusted = diagnose("127.0.0.1", server.port, tls=True, ca_file=_expected_system_bundle(), proxy=proxy.url)
    assert trusted.kind is CauseKind.OK and untrusted.kind is CauseKind.TLS
    assert proxy.targets == [f"127.0.0.1:{server.port}"] * 2


def test_a_proxy_that_cannot_reach_the_target_says_so() -> None:
    with closed_port() as port, ConnectProxy() as proxy:
        cause = diagnose("127.0.0.1", port, tls=False, ca_file=None, proxy=proxy.url)
    assert cause.kind is CauseKind.PROXY and cause.text.startswith(f"proxy {proxy.url}: ")


def test_credentials_in_the_proxy_url_are_sent_as_requests_sends_them_and_never_shown() -> None:
    with ConnectProxy(status="407 Proxy Authentication Required") as proxy:
        cause = diagnose(
            "api.example.com", 443, tls=True, ca_file=None, proxy=f"http://al%40ice:s3cret@127.0.0.1:{proxy.port}"
        )
    assert proxy.authorizations == ["Basic " + base64.b64encode(b"al@ice:s3cret").decode()]
    assert "s3cret" not in cause.text and "al" not in cause.text.split(":", 1)[0]


def test_first_contact_diagnoses_only_until_the_endpoint_answers() -> None:
    with closed_port() as port:
        contact = FirstContact(f"http://user:pw@127.0.0.1:{port}/v1?x=1")
        cause = contact.unreachable(ca_file=None)
        assert cause == Cause(CauseKind.REFUSED, "connection refused") and cause.kind in FAIL_FAST
        assert (
            contact.message(cause) == f"cannot reach 127.0.0.1:{port} (http://127.0.0.1:{port}/v1): connection refused"
        )
        contact.answered()
        assert contact.has_answered and contact.unreachable(ca_file=None) is None


def test_first_contact_lets_a_slow_endpoint_be_retried() -> None:
    with SilentServer() as server:
        contact = FirstContact(f"https://127.0.0.1:{server.port}", timeout=0.2)
        assert (contact.tls, contact.port) == (True, server.port)
        assert contact.unreachable(ca_file=None) is None  # a timeout is not FAIL_FAST: the host may be busy
    assert (
        FirstContact("https://[::1]/v1")
        .message(Cause(CauseKind.REFUSED, "connection refused"))
        .startswith("cannot reach [::1]:443 (https://[::1]/v1)")
    )
