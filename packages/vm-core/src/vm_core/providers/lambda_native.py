"""Lambda's own credentials, as the tools that use Lambda's API read them (Lambda has no CLI config of its own).

    API key     LAMBDA_API_KEY, else the variables of Lambda's published client `lambda-ai-cloud-api-client`
                (LAMBDA_CLOUD_TOKEN, LAMBDA_CLOUD_API_TOKEN, LAMBDA_API_TOKEN, in its order), else
                `api_key = ...` in ~/.lambda_cloud/lambda_keys (SkyPilot's file)
    base URL    LAMBDA_CLOUD_BASE_URL (the published client's: the server's root, such as
                https://cloud.lambda.ai; vm adds the API's /api/v1 when the URL does not end with it)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..native import FILE, NativeCredentials, Sourced, from_env, read_text, shown

KEYS_FILE = ".lambda_cloud/lambda_keys"
KEY_VARIABLES = ("LAMBDA_API_KEY", "LAMBDA_CLOUD_TOKEN", "LAMBDA_CLOUD_API_TOKEN", "LAMBDA_API_TOKEN")
BASE_URL_ENV = "LAMBDA_CLOUD_BASE_URL"
API_PATH = "/api/v1"


def native_credentials(environ: Mapping[str, str], home: Path) -> NativeCredentials:
    """Lambda's API key and base URL from the variables, else the key from ~/.lambda_cloud/lambda_keys. Raises
    ConfigError for a keys file that exists but cannot be read."""
    settings = from_env(environ, {"api_key": KEY_VARIABLES, "api_endpoint": BASE_URL_ENV})
    if "api_key" not in settings and (key := _key_in_file(home)) is not None:
        settings["api_key"] = key
    if endpoint := settings.get("api_endpoint"):
        settings["api_endpoint"] = Sourced(api_url(endpoint.value), endpoint.kind, endpoint.origin)
    return NativeCredentials(settings, found="api_key" in settings)


def api_url(base: str) -> str:
    """The API's base URL for a server root such as https://cloud.lambda.ai (kept when it names the API)."""
    base = base.rstrip("/")
    return base if base.endswith(API_PATH) else base + API_PATH


def _key_in_file(home: Path) -> Sourced | None:
    """`api_key = KEY` of SkyPilot's keys file (lines of `name = value`), else None."""
    path = home / KEYS_FILE
    text = read_text(path, home)
    for line in (text or "").splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip() == "api_key" and value.strip():
            return Sourced(value.strip(), FILE, shown(path, home))
    return None
