"""Looking for credentials in text: the secret itself and the encodings it could travel in."""

from __future__ import annotations

import base64
import urllib.parse
from collections.abc import Iterable


def forms(secret: str) -> set[str]:
    """The secret, and the ways code could leak it without spelling it out: base64 (standard and URL-safe,
    padded or not, also of `secret:` as in HTTP Basic auth) and percent-encoding."""
    found = {secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret)}
    for raw in (secret.encode(), f"{secret}:".encode()):
        for encoded in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
            text = encoded.decode()
            found |= {text, text.rstrip("=")}
    return {f for f in found if len(f) >= 8}


def leaks(text: str, secrets: Iterable[str]) -> list[str]:
    """Which secrets appear in `text` in any of their forms (reported by their first 4 characters only)."""
    return sorted({f"{s[:4]}..." for s in secrets if any(form in text for form in forms(s))})
