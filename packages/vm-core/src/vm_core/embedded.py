"""Provider settings for the embedded mock clouds, read from their endpoints.json."""

from __future__ import annotations

from typing import Any


def settings_from_endpoints(endpoints: dict[str, Any], provider: str) -> dict[str, Any]:
    """The settings a built-in provider plugin needs to talk to the mock clouds described by `endpoints`.

    Rate-limit intervals are scaled like the mocks' own (`time_scale`), so clients pace themselves correctly.
    Returns {} for a provider the mocks do not serve.
    """
    build = _BUILDERS.get(provider)
    if build is None or provider not in endpoints:
        return {}
    scale = float(endpoints.get("time_scale", 1.0))
    return {**build(endpoints[provider], scale), "time_scale": scale}


def _crusoe(ep: dict[str, Any], scale: float) -> dict[str, Any]:
    return {"access_key_id": ep["access_key_id"], "secret_key": ep["secret_key"], "project_id": ep["project_id"],
            "api_endpoint": ep["url"]}


def _lambda(ep: dict[str, Any], scale: float) -> dict[str, Any]:
    return {"api_key": ep["api_key"], "api_endpoint": ep["url"], "request_interval": 1.0 * scale,
            "launch_interval": 12.0 * scale}


def _nebius(ep: dict[str, Any], scale: float) -> dict[str, Any]:
    return {"token": ep["token"], "endpoint": ep["target"], "project_id": ep["project_id"],
            "projects": dict(ep.get("projects", {})), "subnet_id": ep.get("subnet_id", ""),
            "capacity_blocks": dict(ep.get("capacity_blocks", {}))}


_BUILDERS = {"crusoe": _crusoe, "lambda": _lambda, "nebius": _nebius}
