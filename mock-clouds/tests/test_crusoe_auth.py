"""Crusoe HMAC request signing and organisation scoping."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mock_clouds.crusoe import auth
from mock_clouds.crusoe.testing import CrusoeEnv, env_for, instances_path, now_rfc3339
from mock_clouds.runner import MockClouds
from mock_clouds.testing import TEST_TIME_SCALE


@pytest.fixture(scope="module")
def crusoe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CrusoeEnv]:
    """One mock for the module: these tests only read, and no rate limit is configured."""
    with MockClouds(
        tmp_path_factory.mktemp("crusoe"), providers=("crusoe",), time_scale=TEST_TIME_SCALE
    ) as clouds:
        yield env_for(clouds)


VECTOR_SECRET = "dGVzdC1zZWNyZXQta2V5LTEyMzQ1Njc4OTA"  # b64url("test-secret-key-1234567890")
VECTOR_PATH = "/v1alpha5/projects/p1/compute/vms/instances"


def bad_credential(detail: str) -> dict[str, str]:
    return {"code": "bad_credential", "message": f"bad credential: {detail}"}


# ----------------------------------------------------------------------- signing function
def test_research_test_vector_get_with_query() -> None:
    query = "sort=created_at&limit=2&types=a100.1x,a40.1x"
    message = auth.signing_message(VECTOR_PATH, query, "GET", "2024-01-01T00:00:00Z")
    assert message == (
        "/v1alpha5/projects/p1/compute/vms/instances\nlimit=2&sort=created_at&types=a100.1x%2Ca40.1x\n"
        "GET\n2024-01-01T00:00:00Z\n"
    )
    assert auth.sign(VECTOR_SECRET, VECTOR_PATH, query, "GET", "2024-01-01T00:00:00Z") == (
        "8z12szEsccliJUzYAXga4z5sJaKxzM7DydLEHWAlzc4"
    )


def test_research_test_vector_post_without_query() -> None:
    assert auth.sign(VECTOR_SECRET, VECTOR_PATH, "", "POST", "2024-01-01T00:00:00Z") == (
        "MvVM4LKlp3qqPG7-v-MOSfOHiTdgR6emxTxZ2Um5PXs"
    )


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("", ""),
        ("b=2&a=1", "a=1&b=2"),
        ("names=x&ids=1&names=a", "ids=1&names=x&names=a"),  # values keep their order within a key
        ("q=a+b&r=c%20d", "q=a+b&r=c+d"),  # space is "+"
        ("k=%7E~-_.", "k=~~-_."),  # unreserved characters stay
        ("k=a/b:c", "k=a%2Fb%3Ac"),
        ("flag", "flag="),
    ],
)
def test_canonical_query_matches_go(raw: str, canonical: str) -> None:
    assert auth.canonical_query(raw) == canonical


def test_canonical_query_rejects_semicolons() -> None:
    with pytest.raises(ValueError):
        auth.canonical_query("a=1;b=2")


@pytest.mark.parametrize(
    "stamp", ["2024-01-01T00:00:00Z", "2024-01-01T00:00:00+00:00", "2024-01-01T01:00:00+01:00"]
)
def test_timestamps_in_both_utc_spellings_and_offsets(stamp: str) -> None:
    assert auth.parse_timestamp(stamp) == 1704067200.0


@pytest.mark.parametrize("stamp", ["2024-01-01", "2024-01-01T00:00:00", "yesterday", "2024-01-01 00:00:00Z"])
def test_timestamps_must_be_rfc3339_with_zone(stamp: str) -> None:
    with pytest.raises(ValueError):
        auth.parse_timestamp(stamp)


# ----------------------------------------------------------------------- over the wire
def test_signed_request_is_accepted_on_both_prefixes(crusoe: CrusoeEnv) -> None:
    for prefix in ("/v1alpha5", "/v1"):
        response = crusoe.client.get("/locations", prefix=prefix)
        assert response.status_code == 200
        assert response.json() == {
            "items": ["us-east1-a", "us-northcentral1-a", "us-southcentral1-a", "eu-iceland1-a"]
        }


def test_query_order_in_the_url_does_not_matter(crusoe: CrusoeEnv) -> None:
    params = [("sort", "name"), ("limit", "5"), ("types", "a100.1x,l40s-48gb.1x")]
    response = crusoe.client.get(instances_path(crusoe.project), params=params)
    assert response.status_code == 200
    assert response.json() == {"items": [], "next_page_token": "", "prev_page_token": ""}


def test_python_style_timestamp_is_accepted(crusoe: CrusoeEnv) -> None:
    stamp = now_rfc3339().replace("Z", "+00:00")
    assert crusoe.client.get("/locations", stamp=stamp).status_code == 200


def test_missing_authorization_header(crusoe: CrusoeEnv) -> None:
    response = crusoe.client.get("/locations", headers={"Authorization": None})
    assert response.status_code == 401
    assert response.json() == bad_credential("missing Authorization header")


@pytest.mark.parametrize("header", ["Basic abc", "Bearer 1.0:onlykey", "Bearer token", "Bearer 1.0::sig"])
def test_malformed_authorization_header(crusoe: CrusoeEnv, header: str) -> None:
    response = crusoe.client.get("/locations", authorization=header)
    assert response.status_code == 401
    assert response.json() == bad_credential("Authorization must be 'Bearer 1.0:<access_key_id>:<signature>'")


def test_unsupported_signature_version(crusoe: CrusoeEnv) -> None:
    response = crusoe.client.get("/locations", authorization=f"Bearer 2.0:{crusoe.client.key_id}:abc")
    assert response.status_code == 401
    assert response.json() == bad_credential("unsupported signature version '2.0'")


def test_bad_signature(crusoe: CrusoeEnv) -> None:
    response = crusoe.client.get("/locations", authorization=f"Bearer 1.0:{crusoe.client.key_id}:AAAA")
    assert response.status_code == 401
    assert response.json() == bad_credential("signature does not match the request")


def test_wrong_key_id(crusoe: CrusoeEnv) -> None:
    response = crusoe.client.with_key_id("0000NOT0A0KEY").get("/locations")
    assert response.status_code == 401
    assert response.json() == bad_credential("unknown access key id")


def test_key_id_of_another_org_with_my_secret(crusoe: CrusoeEnv) -> None:
    response = crusoe.client.with_key_id(crusoe.other.key_id).get("/locations")
    assert response.status_code == 401
    assert response.json() == bad_credential("signature does not match the request")


@pytest.mark.parametrize("offset", [-400.0, 400.0])
def test_stale_or_future_timestamp(crusoe: CrusoeEnv, offset: float) -> None:
    response = crusoe.client.get("/locations", stamp=now_rfc3339(offset))
    assert response.status_code == 401
    assert response.json() == bad_credential("X-Crusoe-Timestamp is too far from the current time")


def test_timestamp_within_window_is_accepted(crusoe: CrusoeEnv) -> None:
    assert crusoe.client.get("/locations", stamp=now_rfc3339(-200.0)).status_code == 200


def test_missing_or_malformed_timestamp(crusoe: CrusoeEnv) -> None:
    missing = crusoe.client.get("/locations", headers={"X-Crusoe-Timestamp": ""})
    assert missing.status_code == 401
    assert missing.json() == bad_credential("missing X-Crusoe-Timestamp header")
    malformed = crusoe.client.get("/locations", stamp="2024-01-01 00:00:00")
    assert malformed.status_code == 401
    assert malformed.json() == bad_credential("X-Crusoe-Timestamp must be an RFC 3339 timestamp")


@pytest.mark.parametrize(
    "tamper",
    [
        {"signed_path": "/v1alpha5/capacities"},  # signed for another path
        {"signed_path": "/locations"},  # version prefix left out of the signature
        {"signed_query": "location=us-east1-a"},  # query changed after signing
        {"signed_method": "POST"},
    ],
)
def test_tampered_requests_are_rejected(crusoe: CrusoeEnv, tamper: dict[str, str]) -> None:
    response = crusoe.client.get("/locations", **tamper)
    assert response.status_code == 401
    assert response.json() == bad_credential("signature does not match the request")


def test_unsigned_query_parameter_is_rejected(crusoe: CrusoeEnv) -> None:
    response = crusoe.client.get("/capacities", params={"location": "us-east1-a"}, signed_query="")
    assert response.status_code == 401


def test_semicolon_query_is_a_bad_request(crusoe: CrusoeEnv) -> None:
    response = crusoe.client.get("/capacities", params=[("a", "1;b=2")])
    assert response.status_code == 200  # an escaped ";" is data
    raw = crusoe.client.session.get(
        crusoe.client.root + "/v1alpha5/capacities?a=1;b=2",
        headers={
            "X-Crusoe-Timestamp": now_rfc3339(),
            "Authorization": f"Bearer 1.0:{crusoe.client.key_id}:x",
        },
    )
    assert raw.status_code == 400
    assert raw.json() == {
        "code": "bad_request",
        "message": "bad request, check request parameters: invalid semicolon separator in query",
    }


def test_errors_never_echo_the_secret(crusoe: CrusoeEnv) -> None:
    for response in (
        crusoe.client.get(
            "/locations", authorization=f"Bearer 1.0:{crusoe.client.key_id}:{crusoe.client.secret}"
        ),
        crusoe.client.get("/locations", stamp=now_rfc3339(1000)),
    ):
        assert crusoe.client.secret not in response.text


# ----------------------------------------------------------------------- organisation scoping
def test_each_key_lists_only_its_organisations_projects(crusoe: CrusoeEnv) -> None:
    mine = crusoe.client.get("/organizations/projects").json()["items"]
    theirs = crusoe.other.get("/organizations/projects").json()["items"]
    assert {p["id"] for p in mine} == {crusoe.project, crusoe.research_project}
    assert [p["id"] for p in theirs] == [crusoe.other_project]
    assert {p["organization_id"] for p in mine} == {crusoe.org_id}


def test_other_organisations_project_is_forbidden(crusoe: CrusoeEnv) -> None:
    expected = {"code": "unauthorized", "message": f"not authorized to access project {crusoe.project}"}
    for path in (
        f"/organizations/projects/{crusoe.project}",
        instances_path(crusoe.project),
        f"/projects/{crusoe.project}/compute/vms/types",
        f"/projects/{crusoe.project}/quotas",
        f"{instances_path(crusoe.project)}/operations",
    ):
        response = crusoe.other.get(path)
        assert response.status_code == 403, path
        assert response.json() == expected


def test_unknown_project_is_forbidden_like_a_foreign_one(crusoe: CrusoeEnv) -> None:
    unknown = "00000000-0000-4000-8000-000000000000"
    response = crusoe.client.get(instances_path(unknown))
    assert response.status_code == 403
    assert response.json() == {
        "code": "unauthorized",
        "message": f"not authorized to access project {unknown}",
    }


def test_other_organisations_reservations_and_org_filter_are_forbidden(crusoe: CrusoeEnv) -> None:
    response = crusoe.other.get(f"/organizations/{crusoe.org_id}/reservations")
    assert response.status_code == 403
    assert response.json() == {
        "code": "unauthorized",
        "message": f"not authorized to access organization {crusoe.org_id}",
    }
    filtered = crusoe.other.get("/organizations/projects", params={"org_id": crusoe.org_id})
    assert filtered.status_code == 403
    assert filtered.json()["code"] == "unauthorized"
