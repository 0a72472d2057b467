"""Service accounts and their authorized keys: one per Nebius tenant, made when a world first serves Nebius (the
key pair itself on first use).

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
    """A service account of `tenant` with the id of its authorized key; the RSA key pair itself is generated on
    first use (`key_pair`): a fresh world pays the ~0.1 s of an RSA key only when a test or a user asks for it."""
    return ServiceAccount(id=ids.nebius_id("serviceaccount"), owner=tenant, public_key_id=ids.nebius_id("publickey"))


def key_pair(account: ServiceAccount) -> ServiceAccount:
    """`account` with its RSA key pair, generated now if it has none yet. The caller holds the world's
    transaction (World.tx), which persists the new key with the world."""
    if account.public_key_pem:
        return account
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    account.private_key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    account.public_key_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()
    return account


def credentials_document(account: ServiceAccount) -> dict[str, Any]:
    """The service account credentials file as pysdk's `base/service_account/credentials_file.py` reads it
    (and SkyPilot keeps at ~/.nebius/credentials.json). Holds the private key: a secret. The caller holds the
    world's transaction (the key pair may be made now)."""
    key_pair(account)
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

