"""Nebius mock: the IAM token exchange (a service account's signed JWT for an access token) and issued tokens.

The JWTs are built by `testkit.subject_jwt` with `cryptography` alone, independently of the mock's verifier, as
pysdk builds them (`base/service_account/service_account.py`): RS256, `kid` = public key id, `iss = sub` =
service account id, `aud` = the token service, `exp` a minute ahead.
"""

from __future__ import annotations

import base64
import time
from typing import Any

import grpc
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from mock_clouds import control
from mock_clouds.core import world as world_module
from mock_clouds.nebius import testkit
from mock_clouds.nebius._pb.nebius.compute import v1 as compute
from mock_clouds.nebius._pb.nebius.iam import v1 as iam
from mock_clouds.runner import MockClouds

ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token"
OTHER_TENANT = "tenant-e00zz9yy8xx7ww6vv5"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Account:
    """A service account's credentials as `mock-clouds credentials` hands them out, and JWTs made from them."""

    def __init__(self, document: dict[str, Any]) -> None:
        subject = document["subject-credentials"]
        key = serialization.load_pem_private_key(subject["private-key"].encode(), password=None)
        assert isinstance(key, rsa.RSAPrivateKey)
        self.document, self.key, self.kid, self.id = document, key, subject["kid"], subject["sub"]
        assert subject["iss"] == subject["sub"] and subject["alg"] == "RS256" and subject["type"] == "JWT"

    def jwt(self, now: float | None = None, key: rsa.RSAPrivateKey | None = None, **changes: Any) -> str:
        """pysdk's JWT; `changes` replace (or, as None, remove) header fields (`kid`, `alg`) and claims."""
        return testkit.subject_jwt(self.document, now=now, key=key, **changes)


def request(subject_token: str, **fields: Any) -> iam.ExchangeTokenRequest:
    return testkit.exchange_request(subject_token, **fields)


def account_of(clouds: MockClouds, tenant: str | None = None) -> Account:
    endpoints = clouds.endpoints
    accounts = control.admin_call(endpoints, "GET", "/nebius/service-accounts")["service_accounts"]
    chosen = endpoints["nebius"]["service_account_id"] if tenant is None else next(
        a["id"] for a in accounts if a["tenant_id"] == tenant)
    return Account(control.nebius_service_account_credentials(endpoints, chosen))


@pytest.fixture
def account(nebius: testkit.Harness) -> Account:
    return account_of(nebius.clouds)


def exchange(nebius: testkit.Harness, token: str, **fields: Any) -> iam.CreateTokenResponse:
    """Exchange without any bearer token, as a client that has none yet does."""
    return nebius.connect(None).tokens.exchange(request(token, **fields))


def refused(nebius: testkit.Harness, token: str, **fields: Any) -> testkit.Failure:
    return testkit.failure(nebius.connect(None).tokens.exchange, request(token, **fields))


def list_with(nebius: testkit.Harness, access_token: str, project: str = "") -> compute.ListInstancesResponse:
    request = compute.ListInstancesRequest(parent_id=project or nebius.project)
    return nebius.connect(access_token).instances.list(request)


def test_every_tenant_has_a_service_account_with_an_authorized_key(nebius: testkit.Harness) -> None:
    accounts = control.admin_call(nebius.clouds.endpoints, "GET", "/nebius/service-accounts")["service_accounts"]
    tenants = {p.owner for p in nebius.world.config("nebius").projects}
    assert {a["tenant_id"] for a in accounts} == tenants
    for entry in accounts:
        assert entry["id"].startswith("serviceaccount-e00") and len(entry["id"]) == len("serviceaccount-") + 18
        assert entry["public_key_id"].startswith("publickey-e00")
    default = nebius.clouds.endpoints["nebius"]
    assert {"id": default["service_account_id"], "public_key_id": default["public_key_id"]}.items() <= next(
        a for a in accounts if a["id"] == default["service_account_id"]).items()


def test_a_valid_jwt_is_exchanged_for_a_bearer_token_that_lists_instances(nebius, account) -> None:
    response = exchange(nebius, account.jwt())
    assert (response.issued_token_type, response.token_type) == (ACCESS_TOKEN, "Bearer")
    assert response.access_token and response.access_token != nebius.clouds.endpoints["nebius"]["token"]
    # 12 h before the fixtures' time scale of 0.002: 86.4 s, reported in whole seconds
    assert response.expires_in == int(43200 * nebius.world.state.time_scale) == 86
    assert list_with(nebius, response.access_token).items == []


def test_pysdk_defaults_are_accepted(nebius, account) -> None:
    """pysdk sends requested_token_type; the RFC lets it be empty (meaning an access token)."""
    assert exchange(nebius, account.jwt(), requested_token_type="").access_token


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"kid": "publickey-e00doesnotexist000"}, "kid does not name a known authorized key"),
        ({"kid": None}, "kid does not name a known authorized key"),
        ({"aud": "cpl.iam.api.nebius.cloud"}, "aud must be"),
        ({"aud": None}, "aud must be"),
        ({"sub": "serviceaccount-e00someoneelse0000"}, "iss and sub must both be"),
        ({"iss": "serviceaccount-e00someoneelse0000"}, "iss and sub must both be"),
        ({"exp": None}, "no exp"),
        ({"exp": "tomorrow"}, "exp must be a number"),
        ({"alg": "HS256"}, "must be signed with RS256"),
        ({"alg": "none"}, "must be signed with RS256"),
    ],
)
def test_refused_jwts_are_unauthenticated(nebius, account, changes, reason) -> None:
    token = account.jwt(**changes)
    failed = refused(nebius, token)
    assert failed.code == grpc.StatusCode.UNAUTHENTICATED and reason in failed.message
    assert failed.status is not None and failed.status.code == grpc.StatusCode.UNAUTHENTICATED.value[0]
    assert token not in failed.message and token.split(".")[2] not in failed.message


def test_a_jwt_signed_with_another_key_is_unauthenticated(nebius, account) -> None:
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    failed = refused(nebius, account.jwt(key=stranger))
    assert failed.code == grpc.StatusCode.UNAUTHENTICATED and "signature does not verify" in failed.message


def test_another_tenants_key_cannot_sign_for_this_account(nebius, account) -> None:
    """The kid names the other tenant's key while iss/sub claim this account: the key's owner decides."""
    other = account_of(nebius.clouds, OTHER_TENANT)
    failed = refused(nebius, account.jwt(key=other.key, kid=other.kid))
    assert failed.code == grpc.StatusCode.UNAUTHENTICATED and "iss and sub must both be" in failed.message


@pytest.mark.parametrize(
    ("offset", "reason"),
    [
        ({"exp": -120}, "expired"),
        ({"exp": 2 * 3600}, "more than 3600 s ahead"),
        ({"nbf": 600}, "nbf is in the future"),
        ({"iat": 600}, "iat is in the future"),
    ],
)
def test_jwt_times_are_checked(nebius, account, offset, reason) -> None:
    now = time.time()
    (name, seconds), = offset.items()
    failed = refused(nebius, account.jwt(now=now, **{name: int(now) + seconds}))
    assert failed.code == grpc.StatusCode.UNAUTHENTICATED and reason in failed.message


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"grant_type": "client_credentials"}, "grant_type"),
        ({"grant_type": ""}, "grant_type"),
        ({"subject_token_type": ACCESS_TOKEN}, "subject_token_type"),
        ({"requested_token_type": "urn:ietf:params:oauth:token-type:id_token"}, "requested_token_type"),
        ({"subject_token": ""}, "subject_token"),
        ({"subject_token": "not-a-jwt"}, "subject_token"),
        ({"subject_token": "e30.!!!.AAAA"}, "subject_token"),
        ({"subject_token": f"{_b64(b'[1]')}.{_b64(b'{}')}.AAAA"}, "subject_token"),
        ({"actor_token": "x", "actor_token_type": ACCESS_TOKEN}, "actor_token"),
    ],
)
def test_malformed_requests_are_invalid_argument(nebius, account, fields, field) -> None:
    fields = {"subject_token": account.jwt(), **fields}
    failed = testkit.failure(nebius.connect(None).tokens.exchange, request(**fields))
    assert failed.code == grpc.StatusCode.INVALID_ARGUMENT
    assert failed.error is not None and failed.error.bad_request is not None
    assert field in [v.field for v in failed.error.bad_request.violations]


def test_issued_tokens_expire_and_are_then_unauthenticated(nebius, account) -> None:
    control.set_token_lifetime(nebius.clouds.endpoints, 1000)  # 2 s at the time scale of 0.002
    clock = testkit.FrozenClock(nebius.world)
    response = exchange(nebius, account.jwt(now=clock.now))
    assert response.expires_in == 2
    clock.advance(1.9)
    assert list_with(nebius, response.access_token).items == []
    clock.advance(0.1)
    failed = testkit.failure(nebius.connect(response.access_token).instances.list,
                             compute.ListInstancesRequest(parent_id=nebius.project))
    assert failed.code == grpc.StatusCode.UNAUTHENTICATED and failed.message == "invalid or expired access token"


def test_the_token_really_expires_after_expires_in_wall_clock_seconds(nebius, account) -> None:
    """Without a frozen clock: a one-second token works, then stops working (polled, generous deadline)."""
    control.set_token_lifetime(nebius.clouds.endpoints, 500)  # 1 s at 0.002
    response = exchange(nebius, account.jwt())
    assert response.expires_in == 1
    entry = control.token_exchanges(nebius.clouds.endpoints)["exchanges"][-1]
    assert entry["expires_at"] - entry["at"] == pytest.approx(1.0)
    client = nebius.connect(response.access_token)
    deadline = time.monotonic() + 30
    while True:
        try:
            client.instances.list(compute.ListInstancesRequest(parent_id=nebius.project))
        except grpc.RpcError as exc:
            assert exc.code() == grpc.StatusCode.UNAUTHENTICATED
            break
        assert time.monotonic() < deadline, "the token never expired"
        time.sleep(0.05)
    assert time.time() >= entry["expires_at"]


def test_the_static_tenant_token_never_expires(nebius) -> None:
    clock = testkit.FrozenClock(nebius.world)
    clock.advance(10 * 365 * 86400)
    assert nebius.client.instances.list(compute.ListInstancesRequest(parent_id=nebius.project)).items == []


def test_the_lifetime_is_changed_on_a_running_server_through_the_admin_api(nebius, account) -> None:
    endpoints = nebius.clouds.endpoints
    assert control.token_exchanges(endpoints)["token_lifetime"] == 43200
    assert control.set_token_lifetime(endpoints, 3600) == {"token_lifetime": 3600, "expires_in": 7}
    assert exchange(nebius, account.jwt()).expires_in == 7
    assert control.admin_call(endpoints, "GET", "/nebius/token-lifetime") == {"token_lifetime": 3600,
                                                                               "expires_in": 7}
    for bad in (0, -5, 1e12):
        with pytest.raises(RuntimeError, match="token lifetime"):
            control.set_token_lifetime(endpoints, bad)


def test_the_lifetime_comes_from_the_scenario(tmp_path) -> None:
    from mock_clouds.scenario import ScenarioError, load_scenario

    scenario = tmp_path / "s.toml"
    scenario.write_text("[nebius.iam]\ntoken_lifetime = 600\n")
    assert load_scenario(scenario).token_service.token_lifetime == 600
    for text in ("[nebius.iam]\ntoken_lifetime = 0\n", "[nebius.iam]\nlifetime = 600\n"):
        scenario.write_text(text)
        with pytest.raises(ScenarioError, match=r"\[nebius.iam\]"):
            load_scenario(scenario)


def test_exchanges_are_counted_and_logged(nebius, account) -> None:
    endpoints = nebius.clouds.endpoints
    assert control.exchange_count(endpoints) == 0
    before = time.time()
    tokens = {exchange(nebius, account.jwt()).access_token for _ in range(3)}
    refused(nebius, account.jwt(aud="elsewhere"))
    log = control.token_exchanges(endpoints)
    assert log["count"] == 3 == len(tokens) and len(log["exchanges"]) == 3
    for entry in log["exchanges"]:
        assert entry["service_account_id"] == account.id
        assert before <= entry["at"] <= time.time() and entry["expires_at"] == pytest.approx(entry["at"] + 86)


def test_an_exchanged_token_is_confined_to_its_tenant(nebius) -> None:
    other = account_of(nebius.clouds, OTHER_TENANT)
    token = exchange(nebius, other.jwt()).access_token
    failed = testkit.failure(nebius.connect(token).instances.list,
                             compute.ListInstancesRequest(parent_id=nebius.project))
    assert failed.code == grpc.StatusCode.PERMISSION_DENIED


def test_expired_tokens_are_purged(nebius, account) -> None:
    clock = testkit.FrozenClock(nebius.world)
    exchange(nebius, account.jwt(now=clock.now))
    assert len(nebius.world.state.token_service.issued) == 1
    clock.advance(86 + world_module.PURGE_EVERY_SECONDS + 1)
    nebius.client.instances.list(compute.ListInstancesRequest(parent_id=nebius.project))  # any transaction
    assert nebius.world.state.token_service.issued == {}
    assert control.exchange_count(nebius.clouds.endpoints) == 1  # the log is kept


def test_tokens_and_keys_survive_a_restart_and_no_token_is_stored_in_clear(mock_clouds_factory, tmp_path) -> None:
    state_dir = tmp_path / "state"
    first = mock_clouds_factory(state_dir, providers=("nebius",))
    nebius = testkit.Harness(first)
    account = account_of(first)
    token = exchange(nebius, account.jwt()).access_token
    nebius.close()
    first.stop()
    assert token not in (state_dir / "state.json").read_text()

    second = mock_clouds_factory(state_dir, providers=("nebius",))
    again = testkit.Harness(second)
    try:
        assert account_of(second).kid == account.kid
        assert list_with(again, token).items == []
        assert exchange(again, account.jwt()).access_token
    finally:
        again.close()
