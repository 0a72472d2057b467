"""`mock-clouds credentials`: each cloud's own credential files, pointing at a running server's mock endpoints.

The files are the ones the clouds' own tools write and read, under HOME, each pointing at the mock through the
file's own endpoint field:

    .crusoe/config               TOML, as the Crusoe CLI and Terraform provider read it: a `[default]` profile
                                 with access_key_id, secret_key, default_project (the project's name, as users
                                 write it) and api_endpoint (the mock's .../v1alpha5 URL)
    .nebius/config.yaml          the nebius CLI's YAML: `default: mock-clouds` and that profile with endpoint
                                 (the mock's target), parent-id (the default project) and `auth-type: service
                                 account` with service-account-credentials-file-path, the one form of pysdk's
                                 `aio/cli_config.py` that takes the credentials file (it refuses that key next
                                 to service-account-id or public-key-id)
    .nebius/credentials.json     the service account's credentials ({"subject-credentials": {type, alg,
                                 private-key, kid, iss, sub}}), as pysdk's credentials_file.py and SkyPilot read it
    .lambda_cloud/lambda_keys    `api_key = <key>`, as SkyPilot reads it

Files are written 0600 and the directories made for them 0700. A file that already exists is replaced only when
asked (`force`): it may be a real cloud's. What no file can say is printed as shell `export` lines (`exports`).
Only what the server serves is written: a server without Nebius gets no Nebius files.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .core.store import write_atomic

NEBIUS_PROFILE = "mock-clouds"
HEADER = "Written by `mock-clouds credentials` for the mock clouds of {state_dir}."


@dataclass(frozen=True)
class CredentialFile:
    path: Path  # absolute, under HOME
    text: str  # holds secrets: never print it


def files(endpoints: dict[str, Any], home: Path, state_dir: Path,
          nebius_credentials: dict[str, Any] | None) -> list[CredentialFile]:
    """The files for what `endpoints` (endpoints.json) serves; `nebius_credentials` is the service account's
    credentials document (from the admin API), without which no Nebius files are made."""
    header = HEADER.format(state_dir=state_dir)
    found = []
    if "crusoe" in endpoints:
        found.append(_crusoe(endpoints["crusoe"], home, header))
    if "nebius" in endpoints and nebius_credentials is not None:
        found.extend(_nebius(endpoints["nebius"], home, header, nebius_credentials))
    if "lambda" in endpoints:
        found.append(CredentialFile(home / ".lambda_cloud" / "lambda_keys",
                                    f"api_key = {endpoints['lambda']['api_key']}\n"))
    return found


def exports(endpoints: dict[str, Any]) -> list[str]:
    """Shell lines for what the files cannot say: Lambda's base URL (LAMBDA_CLOUD_BASE_URL, read by Lambda's
    published client, is the server's root: the client adds /api/v1) and, with TLS, the CA to trust, under the
    names OpenSSL (SSL_CERT_FILE), requests (REQUESTS_CA_BUNDLE) and grpcio (GRPC_DEFAULT_SSL_ROOTS_FILE_PATH)
    read. Nothing secret."""
    lines = []
    if "lambda" in endpoints:
        root = str(endpoints["lambda"]["url"]).removesuffix("/api/v1")
        lines.append(f"export LAMBDA_CLOUD_BASE_URL={shlex.quote(root)}")
    if endpoints.get("tls"):
        ca_file = shlex.quote(str(endpoints["ca_file"]))
        lines += [f"export {name}={ca_file}"
                  for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH")]
    return lines


def write(found: list[CredentialFile], *, force: bool) -> None:
    """Write every file (0600; new directories 0700). Raises FileExistsError, writing nothing, when one exists
    and `force` is not set."""
    existing = [str(f.path) for f in found if f.path.exists()]
    if existing and not force:
        raise FileExistsError(f"not replacing {', '.join(existing)} (they may be a real cloud's; --force replaces)")
    for f in found:
        _make_dirs(f.path.parent)
        write_atomic(f.path, f.text.encode())


def _make_dirs(directory: Path) -> None:
    """Create `directory` and its missing parents 0700 (whatever the umask); existing ones are left alone."""
    missing = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for made in reversed(missing):
        made.mkdir(mode=0o700)
        os.chmod(made, 0o700)


def _crusoe(endpoint: dict[str, Any], home: Path, header: str) -> CredentialFile:
    table = {"access_key_id": endpoint["access_key_id"], "secret_key": endpoint["secret_key"],
             "default_project": endpoint["project_name"], "api_endpoint": endpoint["url"]}
    body = "".join(f"{key} = {_quoted(value)}\n" for key, value in table.items())
    return CredentialFile(home / ".crusoe" / "config", f"# {header}\n[default]\n{body}")


def _nebius(endpoint: dict[str, Any], home: Path, header: str,
            credentials: dict[str, Any]) -> list[CredentialFile]:
    credentials_path = home / ".nebius" / "credentials.json"
    profile = {"endpoint": endpoint["target"], "parent-id": endpoint["project_id"],
               "auth-type": "service account", "service-account-credentials-file-path": str(credentials_path)}
    body = "".join(f"    {key}: {_quoted(value)}\n" for key, value in profile.items())
    config = f"# {header}\ndefault: {NEBIUS_PROFILE}\nprofiles:\n  {NEBIUS_PROFILE}:\n{body}"
    return [CredentialFile(home / ".nebius" / "config.yaml", config),
            CredentialFile(credentials_path, json.dumps(credentials, indent=2) + "\n")]


def _quoted(value: object) -> str:
    """A double-quoted string that TOML and YAML read alike (JSON's escapes are a subset of both)."""
    return json.dumps(str(value))
