"""How a webhook request is signed, and how a receiver checks it (the scheme of Slack's and GitHub's webhooks).

    X-Vm-Timestamp: <unix seconds when the request was made>
    X-Vm-Signature: v1=<hex of HMAC-SHA256(key=secret, message=f"{timestamp}.{body}")>

`body` is the exact bytes of the request body. A receiver recomputes the signature over what it received,
compares it in constant time, and refuses a timestamp far from its own clock (a replayed request). The secret is
only ever the HMAC key: never in a body, a header, a log line or an error message.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

TIMESTAMP_HEADER = "X-Vm-Timestamp"
SIGNATURE_HEADER = "X-Vm-Signature"
VERSION = "v1"
TOLERANCE = 300  # seconds: how far from its clock a receiver accepts a timestamp (verify's default)


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The X-Vm-Signature value of `body` sent at `timestamp` (unix seconds)."""
    message = str(timestamp).encode() + b"." + body
    return f"{VERSION}={hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()}"


def signed_headers(secret: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The two signature headers of a request with `body` made at `timestamp`."""
    return {TIMESTAMP_HEADER: str(timestamp), SIGNATURE_HEADER: signature(secret, timestamp, body)}


def verify(secret: str, headers: Mapping[str, str], body: bytes, *, now: float,
           tolerance: float = TOLERANCE) -> bool:
    """Whether `body` with `headers` was signed with `secret` no more than `tolerance` seconds from `now`
    (header names as sent; a receiver whose framework lower-cases them passes them lower-cased: both work)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    stamp = lowered.get(TIMESTAMP_HEADER.lower(), "")
    given = lowered.get(SIGNATURE_HEADER.lower(), "")
    if not stamp.isdigit() or abs(now - int(stamp)) > tolerance:
        return False
    return hmac.compare_digest(signature(secret, int(stamp), body), given)
