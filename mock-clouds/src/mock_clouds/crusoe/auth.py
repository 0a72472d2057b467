"""Crusoe request signing, signature version "1.0" (client-go `auth/auth.go`).

Every request carries
    X-Crusoe-Timestamp: 2024-01-01T00:00:00Z
    Authorization: Bearer 1.0:<access_key_id>:<signature>
where the signature is HMAC-SHA256, keyed with the base64url-decoded secret, over four "\\n"-terminated lines:
the URL path including the version prefix, the canonical query, the upper-case verb and the timestamp header.
The body is not signed. Signature and secret are base64url without padding.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import urllib.parse
from datetime import datetime

from ..core.models import Provider
from ..core.world import World
from ..http import Request
from .errors import bad_credential, bad_request

SIGNATURE_VERSION = "1.0"
MAX_CLOCK_SKEW_SECONDS = 300.0  # the window is undocumented; research suggests ±5 minutes
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
_DUMMY_KEY = b"\0" * 32  # used for unknown key ids so that every failure costs one HMAC


def canonical_query(raw_query: str) -> str:
    """Go's `url.ParseQuery(raw).Encode()`: keys sorted, values in order, QueryEscape encoding.

    Raises ValueError for a `;` in the query, which Go's parser rejects.
    """
    if ";" in raw_query:
        raise ValueError("invalid semicolon separator in query")
    pairs = urllib.parse.parse_qsl(raw_query, keep_blank_values=True, separator="&")
    grouped: dict[str, list[str]] = {}
    for key, value in pairs:
        grouped.setdefault(key, []).append(value)
    return "&".join(f"{_escape(key)}={_escape(value)}" for key in sorted(grouped) for value in grouped[key])


def _escape(text: str) -> str:
    """Go `url.QueryEscape`: space becomes `+`, everything but `[A-Za-z0-9-_.~]` is percent-encoded."""
    return urllib.parse.quote_plus(text, safe="")


def signing_message(path: str, raw_query: str, method: str, timestamp: str) -> str:
    return f"{path}\n{canonical_query(raw_query)}\n{method.upper()}\n{timestamp}\n"


def decode_secret(secret: str) -> bytes:
    """The HMAC key: the secret is base64url without padding. Raises ValueError if it is not base64url."""
    try:
        return base64.urlsafe_b64decode(secret + "=" * (-len(secret) % 4))
    except (binascii.Error, ValueError) as exc:
        raise ValueError("secret key is not base64url") from exc


def sign_message(key: bytes, message: str) -> str:
    digest = hmac.new(key, message.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def sign(secret: str, path: str, raw_query: str, method: str, timestamp: str) -> str:
    """The request signature a client with `secret` sends for this request."""
    return sign_message(decode_secret(secret), signing_message(path, raw_query, method, timestamp))


def parse_timestamp(value: str) -> float:
    """Seconds since the epoch of an RFC 3339 timestamp (`Z` or a numeric offset). Raises ValueError."""
    if not _RFC3339.match(value):
        raise ValueError(f"not an RFC 3339 timestamp: {value!r}")
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def authenticate(world: World, request: Request) -> str:
    """The organisation id the request is signed for; raises ApiError (401, or 400 for a `;` query).

    Must run inside `world.tx()`.
    """
    key_id, signature = _parse_authorization(request.headers.get("authorization", ""))
    timestamp = request.headers.get("x-crusoe-timestamp", "")
    _check_timestamp(world, timestamp)
    path = urllib.parse.unquote(request.path)  # Go signs req.URL.Path, which is decoded
    try:
        message = signing_message(path, request.raw_query, request.method, timestamp)
    except ValueError as exc:
        raise bad_request(str(exc)) from exc
    credential = next(
        (c for c in world.state.credentials.get(Provider.CRUSOE, []) if c.key_id == key_id), None
    )
    key = _DUMMY_KEY if credential is None else decode_secret(credential.secret)
    matches = hmac.compare_digest(sign_message(key, message).encode(), signature.encode())
    if credential is None:
        raise bad_credential("unknown access key id")
    if not matches:
        raise bad_credential("signature does not match the request")
    return credential.owner


def _parse_authorization(header: str) -> tuple[str, str]:
    scheme, _, token = header.partition(" ")
    if not header:
        raise bad_credential("missing Authorization header")
    parts = token.split(":")
    if scheme != "Bearer" or len(parts) != 3 or not parts[1] or not parts[2]:
        raise bad_credential("Authorization must be 'Bearer 1.0:<access_key_id>:<signature>'")
    if parts[0] != SIGNATURE_VERSION:
        raise bad_credential(f"unsupported signature version {parts[0]!r}")
    if not parts[2].isascii():
        raise bad_credential("signature does not match the request")
    return parts[1], parts[2]


def _check_timestamp(world: World, value: str) -> None:
    if not value:
        raise bad_credential("missing X-Crusoe-Timestamp header")
    try:
        stamp = parse_timestamp(value)
    except ValueError as exc:
        raise bad_credential("X-Crusoe-Timestamp must be an RFC 3339 timestamp") from exc
    if abs(world.wall_now() - stamp) > MAX_CLOCK_SKEW_SECONDS:  # the client signs with its wall clock
        raise bad_credential("X-Crusoe-Timestamp is too far from the current time")
