"""Crusoe's own credentials, read as the Crusoe CLI and Terraform provider read them.

    ~/.crusoe/config    TOML: one table per profile (access_key_id, secret_key, default_project, api_endpoint,
                        ssh_public_key_file); a top-level `profile = "NAME"` picks one
    profile             CRUSOE_PROFILE, else the file's `profile` key, else "default"
    variables           CRUSOE_ACCESS_KEY_ID, CRUSOE_SECRET_KEY, CRUSOE_API_ENDPOINT and CRUSOE_DEFAULT_PROJECT
                        override the profile's values
    legacy endpoints    https://api.crusoecloud.com/v1alpha5 becomes https://api.cloud.crusoe.ai/v1alpha5

(Terraform `internal/common/config.go` GetConfigWithOptions.) `default_project` is a project name or UUID; the
adapter resolves a name. `ssh_public_key_file` becomes the `ssh_public_key` new VMs get.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..native import FILE, NativeCredentials, Sourced, expand, from_env, read_text, read_toml, shown

CONFIG_FILE = ".crusoe/config"
PROFILE_ENV = "CRUSOE_PROFILE"
DEFAULT_PROFILE = "default"
VARIABLES = {"access_key_id": "CRUSOE_ACCESS_KEY_ID", "secret_key": "CRUSOE_SECRET_KEY",
             "api_endpoint": "CRUSOE_API_ENDPOINT", "project_id": "CRUSOE_DEFAULT_PROJECT"}
FILE_KEYS = {"access_key_id": "access_key_id", "secret_key": "secret_key", "api_endpoint": "api_endpoint",
             "default_project": "project_id"}  # the file's key -> vm's setting
LEGACY_ENDPOINTS = {"https://api.crusoecloud.com/v1alpha5": "https://api.cloud.crusoe.ai/v1alpha5"}


def native_credentials(environ: Mapping[str, str], home: Path) -> NativeCredentials:
    """Crusoe's settings from ~/.crusoe/config and the CRUSOE_* variables (the variables win). Raises
    ConfigError for a malformed file or a profile it does not have (when one was asked for by name)."""
    path = home / CONFIG_FILE
    data = read_toml(path, home) or {}
    settings = _from_file(data, _profile_name(environ, data), path, home, asked=bool(environ.get(PROFILE_ENV)))
    settings.update(from_env(environ, VARIABLES))
    if endpoint := settings.get("api_endpoint"):
        settings["api_endpoint"] = Sourced(LEGACY_ENDPOINTS.get(endpoint.value.rstrip("/"), endpoint.value),
                                           endpoint.kind, endpoint.origin)
    found = "access_key_id" in settings and "secret_key" in settings
    return NativeCredentials(settings, found)


def _profile_name(environ: Mapping[str, str], data: Mapping[str, Any]) -> str:
    top = data.get("profile")
    return environ.get(PROFILE_ENV, "").strip() or (top if isinstance(top, str) and top else DEFAULT_PROFILE)


def _from_file(data: Mapping[str, Any], profile: str, path: Path, home: Path, *, asked: bool) -> dict[str, Sourced]:
    table = data.get(profile)
    if table is None and data and asked:
        names = ", ".join(k for k, v in data.items() if isinstance(v, dict)) or "none"
        raise ConfigError(f"{shown(path, home)} has no profile {profile!r} ({PROFILE_ENV}); profiles: {names}")
    if not isinstance(table, dict):
        return {}
    origin = f"{shown(path, home)} [{profile}]"
    settings = {key: Sourced(value.strip(), FILE, origin) for file_key, key in FILE_KEYS.items()
                if isinstance(value := table.get(file_key), str) and value.strip()}
    key_file = table.get("ssh_public_key_file")
    if isinstance(key_file, str) and key_file.strip():
        text = read_text(expand(key_file.strip(), home), home)
        if text is None:
            raise ConfigError(f"{origin}: ssh_public_key_file {key_file} does not exist")
        settings["ssh_public_key"] = Sourced(text.strip(), FILE, f"{origin} ssh_public_key_file")
    return settings
