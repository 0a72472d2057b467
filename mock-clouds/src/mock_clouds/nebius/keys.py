"""Service accounts and their authorized keys: one per Nebius tenant, made when a world first serves Nebius.

On the real cloud a user creates a service account, generates an RSA key pair (`openssl genrsa`), uploads the
public half as an authorized key (`publickey-...`) and keeps the private half in a credentials file. The mock
does the same for each tenant of the scenario and keeps both halves in the world (persisted in the state dir,
mode 0600), so `mock-clouds credentials` can write the file a user would have.
"""

from __future__ import annotations

from typing import Any

from ..core import ids
from ..core.models import Provider, ServiceAccount, WorldState

KEY_BITS = 2048  # RSA; the real docs generate 4096-bit keys, which take ten times as long to make
ALGORITHM = "RS256"


def ensure_service_accounts(state: WorldState) -> bool:
    """Give every Nebius tenant of `state` that has none a service account with a fresh key pair; True when
    any was made (the world must then be persisted)."""
    config = state.providers.get(Provider.NEBIUS.value)
    tenants = sorted({p.owner for p in config.projects}) if config is not None else []
    accounts = state.token_service.service_accounts
    missing = [t for t in tenants if not any(a.owner == t for a in accounts)]
    accounts.extend(new_service_account(tenant) for tenant in missing)
    return bool(missing)


def new_service_account(tenant: str) -> ServiceAccount:
    """A service account of `tenant` with a freshly generated RSA key pair registered as its authorized key."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    private_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return ServiceAccount(
        id=ids.nebius_id("serviceaccount"),
        owner=tenant,
        public_key_id=ids.nebius_id("publickey"),
        public_key_pem=public_pem.decode(),
        private_key_pem=private_pem.decode(),
    )


def credentials_document(account: ServiceAccount) -> dict[str, Any]:
    """The service account credentials file as pysdk's `base/service_account/credentials_file.py` reads it
    (and SkyPilot keeps at ~/.nebius/credentials.json). Holds the private key: a secret."""
    return {
        "subject-credentials": {
            "type": "JWT",
            "alg": ALGORITHM,
            "private-key": account.private_key_pem,
            "kid": account.public_key_id,
            "iss": account.id,
            "sub": account.id,
        }
    }

