"""TLS serving (`MockClouds(tls=True)`, `mock-clouds serve --tls`): a CA of the state dir's own, a server
certificate for 127.0.0.1 and localhost, HTTPS for the REST clouds and TLS for the Nebius gRPC server.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import stat
from pathlib import Path

import certifi
import grpc
import pytest
import requests
from cryptography import x509
from mock_clouds.crusoe.testing import CrusoeClient
from mock_clouds.nebius import testkit
from mock_clouds.nebius._pb.nebius.compute import v1 as compute
from mock_clouds.runner import MockClouds
from mock_clouds.tls import CA_FILE, CA_KEY_FILE, CERT_FILE, KEY_FILE


@pytest.fixture
def clouds(mock_clouds_factory) -> MockClouds:
    return mock_clouds_factory(tls=True)


def _lambda_get(clouds: MockClouds, verify: str | bool) -> requests.Response:
    endpoint = clouds.endpoints["lambda"]
    return requests.get(endpoint["url"] + "/instance-types", timeout=10, verify=verify,
                        headers={"Authorization": f"Bearer {endpoint['api_key']}"})


def _crusoe(clouds: MockClouds, verify: str | bool) -> CrusoeClient:
    endpoint = clouds.endpoints["crusoe"]
    client = CrusoeClient(endpoint["url"].removesuffix("/v1alpha5"), endpoint["access_key_id"], endpoint["secret_key"])
    client.session.verify = verify
    client.session.trust_env = False  # else REQUESTS_CA_BUNDLE, when set, replaces session.verify
    return client


def test_endpoints_say_https_localhost_and_the_ca(clouds: MockClouds) -> None:
    endpoints = clouds.endpoints
    assert endpoints["tls"] is True and endpoints["ca_file"] == str(clouds.state_dir / CA_FILE)
    assert endpoints["crusoe"]["url"] == f"https://127.0.0.1:{clouds.port('crusoe')}/v1alpha5"
    assert endpoints["lambda"]["url"] == f"https://127.0.0.1:{clouds.port('lambda')}/api/v1"
    assert endpoints["nebius"]["target"] == f"localhost:{clouds.port('nebius')}"
    assert endpoints["admin"]["url"].startswith("http://127.0.0.1:")  # the admin API stays plaintext


def test_without_tls_nothing_changes(mock_clouds) -> None:
    endpoints = mock_clouds.endpoints
    assert "tls" not in endpoints and "ca_file" not in endpoints
    assert endpoints["crusoe"]["url"].startswith("http://127.0.0.1:")
    assert endpoints["nebius"]["target"] == f"127.0.0.1:{mock_clouds.port('nebius')}"
    assert not (mock_clouds.state_dir / CA_FILE).exists()


def test_the_server_certificate_names_loopback_and_is_signed_by_the_ca(clouds: MockClouds) -> None:
    ca = x509.load_pem_x509_certificate((clouds.state_dir / CA_FILE).read_bytes())
    cert = x509.load_pem_x509_certificate((clouds.state_dir / CERT_FILE).read_bytes())
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for name in (CA_FILE, CA_KEY_FILE, CERT_FILE, KEY_FILE):
        assert stat.S_IMODE((clouds.state_dir / name).stat().st_mode) == 0o600


def test_rest_clouds_answer_a_client_that_trusts_the_ca(clouds: MockClouds) -> None:
    ca_file = clouds.endpoints["ca_file"]
    assert _lambda_get(clouds, ca_file).status_code == 200
    projects = _crusoe(clouds, ca_file).get("/organizations/projects")
    assert projects.status_code == 200 and projects.json()["items"]


def test_rest_clouds_fail_certificate_verification_for_a_client_that_does_not(clouds: MockClouds) -> None:
    with pytest.raises(requests.exceptions.SSLError, match="CERTIFICATE_VERIFY_FAILED"):
        _lambda_get(clouds, certifi.where())  # public roots, which do not hold the mock's CA
    with pytest.raises(requests.exceptions.SSLError, match="CERTIFICATE_VERIFY_FAILED"):
        _crusoe(clouds, certifi.where()).get("/organizations/projects")


def test_grpc_answers_a_client_that_trusts_the_ca(clouds: MockClouds) -> None:
    nebius = testkit.Harness(clouds)  # trusts endpoints.json's ca_file
    try:
        assert nebius.root_certificates == Path(clouds.endpoints["ca_file"]).read_bytes()
        assert nebius.client.instances.list(compute.ListInstancesRequest(parent_id=nebius.project)).items == []
    finally:
        nebius.close()


def test_grpc_fails_certificate_verification_for_a_client_that_does_not(clouds: MockClouds) -> None:
    endpoint = clouds.endpoints["nebius"]
    public_roots = Path(certifi.where()).read_bytes()  # which do not hold the mock's CA
    channel = grpc.secure_channel(endpoint["target"], grpc.ssl_channel_credentials(root_certificates=public_roots))
    try:
        client = testkit.Client(channel, [("authorization", f"Bearer {endpoint['token']}")], timeout=10)
        failed = testkit.failure(client.instances.list, compute.ListInstancesRequest(parent_id=endpoint["project_id"]))
    finally:
        channel.close()
    assert failed.code == grpc.StatusCode.UNAVAILABLE and "CERTIFICATE_VERIFY_FAILED" in failed.message


def test_a_plaintext_client_is_turned_away_and_the_server_keeps_serving(clouds: MockClouds) -> None:
    port = clouds.port("lambda")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        raw.sendall(b"GET /api/v1/instance-types HTTP/1.1\r\nHost: x\r\n\r\n")
        raw.settimeout(10)
        with contextlib.suppress(ConnectionError):  # a reset is equally a refusal
            assert not raw.recv(1024).startswith(b"HTTP/")
    assert _lambda_get(clouds, clouds.endpoints["ca_file"]).status_code == 200


def test_the_ca_and_certificate_are_reused_on_restart(mock_clouds_factory, tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    first = mock_clouds_factory(state_dir, tls=True)
    files = {name: (state_dir / name).read_bytes() for name in (CA_FILE, CA_KEY_FILE, CERT_FILE, KEY_FILE)}
    first.stop()
    second = mock_clouds_factory(state_dir, tls=True)
    assert {name: (state_dir / name).read_bytes() for name in files} == files
    assert _lambda_get(second, second.endpoints["ca_file"]).status_code == 200


def test_a_server_certificate_that_lost_its_key_is_made_again(mock_clouds_factory, tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    mock_clouds_factory(state_dir, tls=True).stop()
    ca = (state_dir / CA_FILE).read_bytes()
    (state_dir / KEY_FILE).unlink()
    again = mock_clouds_factory(state_dir, tls=True)
    assert (state_dir / CA_FILE).read_bytes() == ca  # clients keep trusting it
    assert _lambda_get(again, again.endpoints["ca_file"]).status_code == 200
