"""HMAC signing (research crusoe.md section 1): the two test vectors, Go url.QueryEscape canonicalisation."""

from __future__ import annotations

from urllib.parse import parse_qsl

import pytest
from crusoe_sdk import _signing
from hypothesis import given
from hypothesis import strategies as st

SECRET = "dGVzdC1zZWNyZXQta2V5LTEyMzQ1Njc4OTA"  # b64url("test-secret-key-1234567890"), unpadded
PATH = "/v1alpha5/projects/p1/compute/vms/instances"
TIMESTAMP = "2024-01-01T00:00:00Z"


def test_vector_get_with_query() -> None:
    query = _signing.canonicalize_raw_query("sort=created_at&limit=2&types=a100.1x,a40.1x")
    message = _signing.string_to_sign(PATH, query, "GET", TIMESTAMP)
    assert message == (
        "/v1alpha5/projects/p1/compute/vms/instances\n"
        "limit=2&sort=created_at&types=a100.1x%2Ca40.1x\nGET\n2024-01-01T00:00:00Z\n"
    )
    assert _signing.sign(SECRET, message) == "8z12szEsccliJUzYAXga4z5sJaKxzM7DydLEHWAlzc4"


def test_vector_post_without_query() -> None:
    message = _signing.string_to_sign(PATH, "", "post", TIMESTAMP)
    assert message == f"{PATH}\n\nPOST\n{TIMESTAMP}\n"
    assert _signing.sign(SECRET, message) == "MvVM4LKlp3qqPG7-v-MOSfOHiTdgR6emxTxZ2Um5PXs"


def test_auth_headers_carry_version_key_id_and_signature() -> None:
    headers = _signing.auth_headers(
        "test-key-id", SECRET, method="GET", path=PATH,
        query="limit=2&sort=created_at&types=a100.1x%2Ca40.1x", timestamp=TIMESTAMP,
    )
    assert headers == {
        "X-Crusoe-Timestamp": TIMESTAMP,
        "Authorization": "Bearer 1.0:test-key-id:8z12szEsccliJUzYAXga4z5sJaKxzM7DydLEHWAlzc4",
    }


def test_structured_params_give_the_same_canonical_query_as_the_raw_string() -> None:
    params = {"types": "a100.1x,a40.1x", "sort": "created_at", "limit": "2"}
    assert _signing.canonical_query(params) == "limit=2&sort=created_at&types=a100.1x%2Ca40.1x"


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("", ""),
        ("b=2&a=1", "a=1&b=2"),
        ("a=2&a=1", "a=2&a=1"),  # values keep their order within a key
        ("names=my+vm", "names=my+vm"),  # `+` is a space, re-encoded as `+`
        ("names=my%20vm", "names=my+vm"),
        ("x=a~b-c_d.e", "x=a~b-c_d.e"),  # the unreserved set stays literal
        ("x=%2F%3A%40", "x=%2F%3A%40"),  # everything else is percent-encoded, upper-case hex
        ("x=é", "x=%C3%A9"),
        ("flag", "flag="),  # a key without `=` has an empty value
        ("a=1&&b=2", "a=1&b=2"),  # empty segments are skipped
        ("B=1&a=1", "B=1&a=1"),  # bytewise order: upper case first
    ],
)
def test_canonicalize_raw_query_like_go(raw: str, canonical: str) -> None:
    assert _signing.canonicalize_raw_query(raw) == canonical


def test_semicolon_is_rejected_like_go() -> None:
    with pytest.raises(_signing.SigningError):
        _signing.canonicalize_raw_query("a=1;b=2")


def test_query_escape_matches_go() -> None:
    assert _signing.query_escape("a b,c/d?e&f=g+h~i") == "a+b%2Cc%2Fd%3Fe%26f%3Dg%2Bh~i"


def test_path_is_signed_decoded_like_go_url_path() -> None:
    assert _signing.string_to_sign("/v1alpha5/a%20b", "", "GET", TIMESTAMP).startswith("/v1alpha5/a b\n")


def test_timestamp_is_rfc3339_utc_with_z() -> None:
    import datetime as dt

    moment = dt.datetime(2024, 1, 1, 1, 0, 0, 123456, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert _signing.format_timestamp(moment) == "2024-01-01T00:00:00Z"


def test_secret_must_be_base64url_and_the_error_does_not_echo_it() -> None:
    with pytest.raises(_signing.SigningError) as info:
        _signing.decode_secret("not base64 at all!!")
    assert "not base64 at all" not in str(info.value)


@given(st.dictionaries(st.text(min_size=1), st.lists(st.text(), min_size=1, max_size=3), max_size=5))
def test_canonical_query_round_trips_through_a_parser(params: dict[str, list[str]]) -> None:
    """What the client sends parses back to the same parameters, and re-canonicalises to itself."""
    canonical = _signing.canonical_query(params)
    parsed: dict[str, list[str]] = {}
    for key, value in parse_qsl(canonical, keep_blank_values=True):
        parsed.setdefault(key, []).append(value)
    assert parsed == {k: v for k, v in params.items()}
    assert _signing.canonicalize_raw_query(canonical) == canonical
