"""Access tokens issued by Nebius IAM's token exchange: issue, look up, expire, purge, and the exchange log.

An issued token is kept only as the SHA-256 digest of its value, so the persisted world never holds it and a
lookup is one dictionary access (no secret is compared byte by byte). A token authenticates as its tenant until
`expires_at` (wall-clock seconds); expired ones are dropped by `purge`, which the world runs with its other
purges. The tenant's static credential (`WorldState.credentials`) is not one of these and never expires.

Every method must be called with the world lock held (inside `World.tx()`, or through `World.token_owner`).
"""

from __future__ import annotations

import hashlib
import math
import secrets

from .models import IssuedToken, ServiceAccount, TokenExchange, TokenService

MAX_LOGGED_EXCHANGES = 1000  # the exchange log keeps the most recent ones; the count keeps going
MAX_LIFETIME = 10 * 365 * 86400.0  # a sanity bound on the token lifetime setting (it must fit expires_in)


def check_lifetime(seconds: object) -> float:
    """`seconds` as a token lifetime setting; raises ValueError unless it is a number in (0, MAX_LIFETIME]."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not math.isfinite(seconds):
        raise ValueError("token lifetime must be a number of seconds")
    if not 0 < seconds <= MAX_LIFETIME:
        raise ValueError(f"token lifetime must be more than 0 and at most {MAX_LIFETIME:.0f} seconds")
    return float(seconds)


def digest(token: str) -> str:
    """The key an access token is stored under."""
    return hashlib.sha256(token.encode()).hexdigest()


class TokenBook:
    """The world's `TokenService` record, with the operations the front end and the admin API need."""

    def __init__(self, service: TokenService) -> None:
        self.service = service

    def expires_in(self, time_scale: float) -> int:
        """The lifetime of a token issued now, in whole wall-clock seconds (at least 1): the scenario's
        `token_lifetime` multiplied by the time scale."""
        return max(1, int(self.service.token_lifetime * time_scale))

    def set_lifetime(self, seconds: float) -> None:
        """Change the lifetime (before the time scale) of tokens issued from now on; raises ValueError for a
        value `check_lifetime` refuses."""
        self.service.token_lifetime = check_lifetime(seconds)

    def account_by_key(self, public_key_id: str) -> ServiceAccount | None:
        """The service account whose authorized key is `public_key_id`."""
        return next((a for a in self.service.service_accounts if a.public_key_id == public_key_id), None)

    def account(self, service_account_id: str) -> ServiceAccount | None:
        return next((a for a in self.service.service_accounts if a.id == service_account_id), None)

    def issue(self, account: ServiceAccount, now: float, expires_in: int) -> str:
        """A new random access token for `account`, valid for `expires_in` seconds from `now`; logged."""
        token = f"ne1{secrets.token_urlsafe(48)}"
        expires_at = now + expires_in
        self.service.issued[digest(token)] = IssuedToken(
            owner=account.owner, subject=account.id, expires_at=expires_at
        )
        self.service.exchange_count += 1
        log = self.service.exchanges
        log.append(TokenExchange(at=now, service_account_id=account.id, expires_at=expires_at))
        del log[: max(0, len(log) - MAX_LOGGED_EXCHANGES)]
        return token

    def owner_of(self, token: str, now: float) -> str | None:
        """The tenant an issued token authenticates as, or None when unknown or expired."""
        found = self.service.issued.get(digest(token))
        return found.owner if found is not None and found.expires_at > now else None

    def purge(self, now: float) -> bool:
        """Forget the tokens that have expired; True when any were."""
        expired = [key for key, token in self.service.issued.items() if token.expires_at <= now]
        for key in expired:
            del self.service.issued[key]
        return bool(expired)
