"""The self-signed JWT a service account exchanges for an access token, checked as Nebius IAM checks it.

pysdk (`base/service_account/service_account.py`) signs with RS256 and the authorized key's private half:
header `{"alg": "RS256", "typ": "JWT", "kid": <public key id>}`, claims `iss = sub = <service account id>`,
`aud = "token-service.iam.new.nebiuscloud.net"`, `iat`, and `exp` one minute later (the docs' jwt-cli example:
five minutes). The mock accepts a token only when all of these hold:

- the signature verifies (RSASSA-PKCS1-v1_5 with SHA-256) against the authorized key named by `kid`;
- `iss` and `sub` are both the service account that owns that key;
- `aud` is (or, as a list, contains) the token service's audience;
- `exp` is in the future and at most MAX_LIFETIME ahead; `nbf` and `iat`, when present, are not in the future
  (each time with LEEWAY seconds for clock skew). The real maximum lifetime is undocumented; the mock's is an
  hour.

`parse` raises Malformed for something that is not a JWT at all (answered INVALID_ARGUMENT); `verify` raises
Refused for a well-formed token that does not authenticate (UNAUTHENTICATED). Neither message ever contains
the token.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.models import ServiceAccount
from . import errors

AUDIENCE = "token-service.iam.new.nebiuscloud.net"
ALGORITHM = "RS256"
MAX_LIFETIME = 3600.0
LEEWAY = 60.0


class Malformed(ValueError):
    """The subject token is not a compact-serialised JWT with JSON header and claims."""


class Refused(ValueError):
    """The JWT is well formed but does not authenticate."""


@dataclass(frozen=True)
class Jwt:
    header: dict[str, Any]
    claims: dict[str, Any]
    signing_input: bytes  # "<header>.<claims>" as sent: what the signature covers
    signature: bytes


def parse(token: str) -> Jwt:
    """Split and decode a compact JWT (`header.claims.signature`, base64url without padding)."""
    parts = token.split(".")
    if len(parts) != 3:
        raise Malformed("subject_token is not a JWT (expected header.claims.signature)")
    header, claims = _json_part(parts[0], "header"), _json_part(parts[1], "claims")
    return Jwt(header, claims, f"{parts[0]}.{parts[1]}".encode(), _b64(parts[2], "signature"))


def verify(jwt: Jwt, account_by_key: Callable[[str], ServiceAccount | None], now: float) -> ServiceAccount:
    """The service account `jwt` authenticates, or Refused. The signature is checked before any claim."""
    if jwt.header.get("alg") != ALGORITHM:
        raise Refused(f"JWT must be signed with {ALGORITHM}")
    kid = jwt.header.get("kid")
    account = account_by_key(kid) if isinstance(kid, str) and kid else None
    if account is None:
        raise Refused("JWT header kid does not name a known authorized key")
    _check_signature(jwt, account)
    if jwt.claims.get("iss") != account.id or jwt.claims.get("sub") != account.id:
        raise Refused(f"JWT iss and sub must both be {account.id}, the owner of key {account.public_key_id}")
    _check_audience(jwt.claims.get("aud"))
    _check_times(jwt.claims, now)
    return account


def _check_signature(jwt: Jwt, account: ServiceAccount) -> None:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    key = serialization.load_pem_public_key(account.public_key_pem.encode())
    if not isinstance(key, rsa.RSAPublicKey):
        raise Refused("the authorized key is not an RSA key")
    try:
        key.verify(jwt.signature, jwt.signing_input, padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        raise Refused("JWT signature does not verify with the authorized key") from None


def _check_audience(aud: object) -> None:
    audiences = aud if isinstance(aud, list) else [aud]
    if AUDIENCE not in audiences:
        raise Refused(f"JWT aud must be {AUDIENCE!r}")


def _check_times(claims: dict[str, Any], now: float) -> None:
    exp = _number(claims, "exp")
    if exp is None:
        raise Refused("JWT has no exp")
    if exp <= now - LEEWAY:
        raise Refused("JWT has expired")
    if exp > now + MAX_LIFETIME + LEEWAY:
        raise Refused(f"JWT exp is more than {MAX_LIFETIME:.0f} s ahead")
    for name in ("nbf", "iat"):
        value = _number(claims, name)
        if value is not None and value > now + LEEWAY:
            raise Refused(f"JWT {name} is in the future")


def _number(claims: dict[str, Any], name: str) -> float | None:
    """A NumericDate claim; Refused when present but not a number."""
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Refused(f"JWT {name} must be a number of seconds since the epoch")
    return float(value)


def _json_part(part: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(_b64(part, what))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise Malformed(f"JWT {what} is not JSON") from None
    if not isinstance(value, dict):
        raise Malformed(f"JWT {what} is not a JSON object")
    return value


def _b64(part: str, what: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        raise Malformed(f"JWT {what} is not base64url") from None


def refusal(exc: Malformed | Refused) -> errors.ApiError:
    """The answer to a subject token that was not accepted."""
    if isinstance(exc, Malformed):
        return errors.bad_request([("subject_token", str(exc))], service=errors.IAM_SERVICE)
    return errors.unauthenticated(f"invalid subject token: {exc}")
