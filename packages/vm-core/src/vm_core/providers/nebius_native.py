"""Nebius's own credentials, read as the nebius CLI and its Python SDK read them (pysdk `aio/cli_config.py`).

    token                 NEBIUS_IAM_TOKEN wins over every file (as in pysdk)
    ~/.nebius/config.yaml the nebius CLI's profiles: NEBIUS_PROFILE, else the file's `default`, else its only
                          profile. From the profile: `endpoint` (NEBIUS_ENDPOINT overrides it), `parent-id` (the
                          default project; NEBIUS_PROJECT_ID overrides it), and one credential, in pysdk's order:
                          `token-file`; `auth-type: service account` with `service-account-credentials-file-path`,
                          or `service-account-id` + `public-key-id` + `private-key-file-path` (or `private-key`);
                          `auth-type: federation` (browser login, which vm cannot do itself): through the nebius
                          CLI when it is installed (`nebius iam get-access-token --profile NAME`, run again when
                          the token is refused or old), else not usable, said in `vm config show`
    ~/.nebius/credentials.json   a service account's credentials (SkyPilot's file) when no profile gives one
"""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..native import FILE, NativeCredentials, Sourced, expand, from_env, read_parsed, shown

CONFIG_FILE = ".nebius/config.yaml"
CREDENTIALS_FILE = ".nebius/credentials.json"
PROFILE_ENV = "NEBIUS_PROFILE"
CREDENTIALS = ("token", "token_file", "token_command", "service_account_file", "service_account_id")  # one is enough
CREDENTIAL_KEYS = (*CREDENTIALS, "public_key_id", "private_key_file", "private_key")
FEDERATION_HELP = ("federation (browser) login is not something vm can do: install the nebius CLI (vm then runs "
                   "`nebius iam get-access-token`), set token_command, or use a service account")


def native_credentials(environ: Mapping[str, str], home: Path) -> NativeCredentials:
    """Nebius's settings from NEBIUS_* variables and the nebius CLI's files. Raises ConfigError for a
    config.yaml that is not valid YAML or names a profile it lacks."""
    path = home / CONFIG_FILE
    profile, notes = _profile(environ, path, home)
    settings = _from_profile(profile, environ, home, notes) if profile else {}
    settings.update(from_env(environ, {"endpoint": "NEBIUS_ENDPOINT", "project_id": "NEBIUS_PROJECT_ID"}))
    if token := from_env(environ, {"token": "NEBIUS_IAM_TOKEN"}):
        settings = {k: v for k, v in settings.items() if k not in CREDENTIAL_KEYS}
        settings.update(token)
    elif not any(k in settings for k in CREDENTIALS) and (credentials := home / CREDENTIALS_FILE).is_file():
        settings["service_account_file"] = Sourced(str(credentials), FILE, shown(credentials, home))
    found = any(key in settings for key in CREDENTIALS)
    return NativeCredentials(settings, found, tuple(notes))


Profile = tuple[str, Mapping[str, Any], str]  # (name, its table, where it is written: "~/.nebius/config.yaml")


def _profile(environ: Mapping[str, str], path: Path, home: Path) -> tuple[Profile | None, list[str]]:
    """The selected profile of config.yaml (None when there is no file or no profile can be chosen, with why)."""
    data = _yaml(path, home)
    if data is None:
        return None, []
    where = shown(path, home)
    profiles = data.get("profiles") if isinstance(data, dict) else None
    if not isinstance(profiles, dict) or not profiles:
        return None, [f"{where} has no profiles (`nebius profile create`)"]
    asked = environ.get(PROFILE_ENV, "").strip()
    name = asked or data.get("default") or (next(iter(profiles)) if len(profiles) == 1 else None)
    if not isinstance(name, str):
        return None, [f"{where} has the profiles {', '.join(map(str, profiles))} and no default: set "
                      f"{PROFILE_ENV} or run `nebius profile activate NAME`"]
    if not isinstance(table := profiles.get(name), dict):
        raise ConfigError(f"{where} has no profile {name!r}" + (f" ({PROFILE_ENV})" if asked else "")
                          + f"; profiles: {', '.join(map(str, profiles))}")
    return (name, table, where), []


def _yaml(path: Path, home: Path) -> Any:
    return read_parsed(path, home, "YAML", _load_yaml)


def _load_yaml(text: str) -> Any:
    import yaml  # only when the nebius CLI's config exists

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from None


def _from_profile(profile: Profile, environ: Mapping[str, str], home: Path, notes: list[str]) -> dict[str, Sourced]:
    name, table, where = profile
    origin = f"{where} profile {name}"

    def text(key: str) -> str | None:
        value = table.get(key)
        return value.strip() if isinstance(value, str) and value.strip() else None

    settings = {key: Sourced(value, FILE, origin) for key, file_key in (("endpoint", "endpoint"),
                                                                      ("project_id", "parent-id"))
                if (value := text(file_key))}
    settings.update(_credential(name, table, text, environ, home, origin, notes))
    return settings


def _credential(name: str, table: Mapping[str, Any], text: Any, environ: Mapping[str, str], home: Path,
                origin: str, notes: list[str]) -> dict[str, Sourced]:
    """The profile's one credential, in pysdk's order of precedence."""
    def path(key: str) -> str:
        return str(expand(text(key), home))

    if text("token-file"):
        return {"token_file": Sourced(path("token-file"), FILE, f"{origin} token-file")}
    auth = text("auth-type")
    if auth == "service account":
        if text("service-account-credentials-file-path"):
            return {"service_account_file": Sourced(path("service-account-credentials-file-path"), FILE, origin)}
        found = {"service_account_id": text("service-account-id"), "public_key_id": text("public-key-id")}
        if text("private-key-file-path"):
            found["private_key_file"] = path("private-key-file-path")
        elif text("private-key"):
            found["private_key"] = text("private-key")
        if all(found.values()) and len(found) == 3:
            return {key: Sourced(value, FILE, origin) for key, value in found.items()}
        notes.append(f"{origin}: a service account needs service-account-credentials-file-path, or "
                     "service-account-id, public-key-id and private-key-file-path")
        return {}
    if auth == "federation":
        if shutil.which("nebius", path=environ.get("PATH")):
            command = shlex.join(["nebius", "iam", "get-access-token", "--profile", name])
            return {"token_command": Sourced(command, FILE, f"{origin} (federation, through the nebius CLI)")}
        notes.append(f"{origin} logs in through a browser (federation): {FEDERATION_HELP}")
        return {}
    if auth is not None:
        notes.append(f"{origin}: auth-type {auth!r} is not one vm knows (service account, federation)")
    return {}
