"""Crusoe request signing, signature version "1.0" (the algorithm of crusoecloud/client-go auth/auth.go).

Every request carries two headers:

    X-Crusoe-Timestamp: 2024-01-01T00:00:00Z
    Authorization: Bearer 1.0:<access_key_id>:<signature>

The signature is HMAC-SHA256, keyed with the base64url-decoded secret key, over four newline-terminated lines:
the URL path (including the `/v1alpha5` prefix, decoded as Go's `URL.Path`), the canonical query, the
upper-case verb and the timestamp. The body is not signed. Both the key and the signature use unpadded
URL-safe base64.

The canonical query is what Go's `url.ParseQuery(raw).Encode()` produces: keys sorted bytewise, values kept
in order within a key, every key and value escaped like `url.QueryEscape` (space -> `+`, everything except
`A-Z a-z 0-9 - _ . ~` percent-encoded). The client sends exactly the canonical string it signs, so the query
in the URL and in the signature can never disagree (a mismatch is a 401 `bad_credentials` on the real API).

This module is pure: no I/O, no clock unless the caller omits `timestamp`.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import hashlib
import hmac
from collections.abc import Mapping, Sequence
from urllib.parse import quote_plus, unquote, unquote_plus

SIGNATURE_VERSION = "1.0"
TIMESTAMP_HEADER = "X-Crusoe-Timestamp"

QueryParams = Mapping[str, "str | Sequence[str]"]


class SigningError(ValueError):
    """The secret key or the query cannot be used for signing (not base64url, or a `;` in the query)."""


def query_escape(text: str) -> str:
    """Escape like Go's `url.QueryEscape` (the always-safe set of Python's `quote` is the same)."""
    return quote_plus(text, safe="")


def canonical_query(params: QueryParams) -> str:
    """The canonical form of structured parameters. A sequence value repeats its key, in order."""
    pairs: list[tuple[str, str]] = []
    for key in sorted(params, key=lambda k: k.encode()):
        value = params[key]
        values = [value] if isinstance(value, str) else list(value)
        pairs.extend((key, v) for v in values)
    return "&".join(f"{query_escape(k)}={query_escape(v)}" for k, v in pairs)


def canonicalize_raw_query(raw_query: str) -> str:
    """The canonical form of a query string as received (`a=2&b=x,y` style), as the server recomputes it.

    Raises SigningError for a `;` separator, which Go's ParseQuery rejects.
    """
    grouped: dict[str, list[str]] = {}
    for part in raw_query.split("&"):
        if not part:
            continue
        if ";" in part:
            raise SigningError("invalid semicolon separator in query")
        key, _, value = part.partition("=")
        grouped.setdefault(unquote_plus(key), []).append(unquote_plus(value))
    return canonical_query(grouped)


def format_timestamp(moment: _dt.datetime | None = None) -> str:
    """RFC 3339 in UTC with a `Z` suffix and whole seconds, as Go's `time.RFC3339` formats it."""
    moment = moment or _dt.datetime.now(_dt.UTC)
    return moment.astimezone(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def string_to_sign(path: str, query: str, method: str, timestamp: str) -> str:
    """The four signed lines, each terminated by a newline. `path` is decoded like Go's `URL.Path`."""
    return f"{unquote(path)}\n{query}\n{method.upper()}\n{timestamp}\n"


def decode_secret(secret_key: str) -> bytes:
    """The HMAC key: the secret is unpadded base64url; padding is restored before decoding."""
    padded = secret_key + "=" * (-len(secret_key) % 4)
    try:
        return base64.urlsafe_b64decode(padded.encode("ascii"))
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise SigningError("the secret key is not URL-safe base64") from exc


def sign(secret_key: str, message: str) -> str:
    """HMAC-SHA256 of `message`, as unpadded URL-safe base64."""
    digest = hmac.new(decode_secret(secret_key), message.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def auth_headers(
    access_key_id: str, secret_key: str, *, method: str, path: str, query: str, timestamp: str | None = None
) -> dict[str, str]:
    """The two headers that authenticate one request. `query` must be the canonical query that is sent."""
    timestamp = timestamp or format_timestamp()
    signature = sign(secret_key, string_to_sign(path, query, method, timestamp))
    return {
        TIMESTAMP_HEADER: timestamp,
        "Authorization": f"Bearer {SIGNATURE_VERSION}:{access_key_id}:{signature}",
    }
