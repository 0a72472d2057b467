"""Scenario files: the TOML that seeds a fresh world (shapes, capacity, prices, reservations, faults...).

A scenario is read once, when a state directory is first used; after that the persisted world wins, so a
restart never resets what the clouds contain. See `default_scenario.toml` for the format.
"""

from __future__ import annotations

import base64
import secrets
import tomllib
from importlib import resources
from pathlib import Path

import msgspec

from .core.models import Credential, Provider, ProviderConfig, TokenService, WorldState
from .core.tokens import check_lifetime


class ScenarioError(ValueError):
    """The scenario file is unreadable or does not match the format."""


def load_scenario(path: Path | None = None) -> WorldState:
    """Build a fresh world from a scenario file (the packaged default when `path` is None)."""
    try:
        if path is None:
            raw = resources.files("mock_clouds").joinpath("default_scenario.toml").read_text()
        else:
            raw = Path(path).read_text()
        data = tomllib.loads(raw)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ScenarioError(f"cannot read scenario {path}: {exc}") from exc
    providers = {}
    for provider in Provider:
        try:
            providers[provider.value] = msgspec.convert(data.get(provider.value, {}), ProviderConfig)
        except msgspec.ValidationError as exc:
            raise ScenarioError(f"scenario section [{provider.value}]: {exc}") from exc
    state = WorldState(
        seed=int(data.get("seed", 0)),
        time_scale=float(data.get("time_scale", 0.05)),
        providers=providers,
        token_service=_token_service(data.get(Provider.NEBIUS.value, {}).get("iam", {})),
    )
    state.credentials = {p: _credentials(Provider(p), cfg) for p, cfg in providers.items()}
    return state


def _token_service(section: dict[str, object]) -> TokenService:
    """`[nebius.iam]`: `token_lifetime`, the seconds (before the time scale) an exchanged access token lasts."""
    unknown = sorted(set(section) - {"token_lifetime"})
    if unknown:
        raise ScenarioError(f"scenario section [nebius.iam]: unknown setting {unknown[0]!r}")
    try:
        return TokenService(token_lifetime=check_lifetime(section.get("token_lifetime", 43200.0)))
    except ValueError as exc:
        raise ScenarioError(f"scenario section [nebius.iam]: {exc}") from exc


def _credentials(provider: Provider, cfg: ProviderConfig) -> list[Credential]:
    """One fresh secret per owner (organisation, account or tenant) named in the scenario's projects."""
    owners = sorted({p.owner for p in cfg.projects})
    return [_credential(provider, owner) for owner in owners]


def _credential(provider: Provider, owner: str) -> Credential:
    if provider == Provider.CRUSOE:
        secret = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
        return Credential(owner=owner, key_id=secrets.token_hex(10).upper(), secret=secret)
    if provider == Provider.LAMBDA:
        return Credential(owner=owner, secret=f"secret_mock_{secrets.token_hex(16)}.{secrets.token_urlsafe(24)[:32]}")
    return Credential(owner=owner, secret=f"ne1{secrets.token_urlsafe(48)}")
