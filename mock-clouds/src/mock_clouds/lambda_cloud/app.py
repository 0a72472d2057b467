"""The Lambda Cloud REST app: routing under /api/v1, authentication, rate limits and error envelopes.

Each request is authenticated first (401 `global/invalid-api-key`), then charged to the account's general
bucket (1 request per `rate_limit.request_interval`), then routed; launch is also charged to the launch bucket
(1 per `rate_limit.create_interval`). Intervals are time-scaled. Unknown paths and methods, including the stop
and start operations Lambda does not have, get 404 `global/not-found`.
"""

from __future__ import annotations

import enum
import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass

from ..core.faults import FaultInjector
from ..core.models import RateLimit
from ..core.world import World
from ..http import Request, Response
from . import firewalls, instances, resources
from .auth import account_scope, authenticate
from .context import LAMBDA, Ctx, Endpoint
from .errors import (
    ApiError,
    internal_error,
    invalid_parameters,
    not_found,
    provider_unavailable,
    rate_limited,
)
from .state import LambdaStore

PREFIX = "/api/v1"


class Bucket(enum.Enum):
    GENERAL = "request"
    LAUNCH = "launch"


# Bucket -> (interval, burst) taken from the provider's rate-limit settings.
_BUCKET_SETTINGS = {
    Bucket.GENERAL: lambda rl: (rl.request_interval, rl.request_burst),
    Bucket.LAUNCH: lambda rl: (rl.create_interval, rl.create_burst),
}


@dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    endpoint: Endpoint
    bucket: Bucket | None = None


def _route(method: str, path: str, endpoint: Endpoint, bucket: Bucket | None = None) -> Route:
    regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", PREFIX + path)
    return Route(method, re.compile(f"^{regex}$"), endpoint, bucket)


ROUTES = (
    _route("GET", "/instances", instances.list_instances),
    _route("GET", "/instances/{id}", instances.get_instance),
    _route("POST", "/instances/{id}", instances.rename_instance),
    _route("POST", "/instance-operations/launch", instances.launch_instance, Bucket.LAUNCH),
    _route("POST", "/instance-operations/terminate", instances.terminate_instances),
    _route("POST", "/instance-operations/restart", instances.restart_instances),
    _route("GET", "/instance-types", resources.list_instance_types),
    _route("GET", "/regions", resources.list_regions),
    _route("GET", "/images", resources.list_images),
    _route("GET", "/ssh-keys", resources.list_ssh_keys),
    _route("POST", "/ssh-keys", resources.add_ssh_key),
    _route("DELETE", "/ssh-keys/{id}", resources.delete_ssh_key),
    _route("GET", "/file-systems", resources.list_file_systems),  # the spec's paths differ: hyphen here...
    _route("POST", "/filesystems", resources.create_file_system),  # ...none here
    _route("DELETE", "/filesystems/{id}", resources.delete_file_system),
    _route("GET", "/firewall-rules", firewalls.list_rules),
    _route("PUT", "/firewall-rules", firewalls.set_rules),
    _route("GET", "/firewall-rulesets", firewalls.list_rulesets),
    _route("POST", "/firewall-rulesets", firewalls.create_ruleset),
    _route("GET", "/firewall-rulesets/global", firewalls.get_global),  # before {id}: "global" is no id
    _route("PATCH", "/firewall-rulesets/global", firewalls.update_global),
    _route("GET", "/firewall-rulesets/{id}", firewalls.get_ruleset),
    _route("PATCH", "/firewall-rulesets/{id}", firewalls.update_ruleset),
    _route("DELETE", "/firewall-rulesets/{id}", firewalls.delete_ruleset),
    _route("GET", "/reservations", resources.list_reservations),  # mock extension
)


def resolve(method: str, path: str) -> tuple[Route | None, dict[str, str]]:
    for route in ROUTES:
        match = route.pattern.match(path)
        if match and route.method == method:
            return route, {k: urllib.parse.unquote(v) for k, v in match.groupdict().items()}
    return None, {}


class LambdaApp:
    """RestApp for http.HttpServer; the server applies injected latency, errors and dropped responses."""

    def __init__(self, world: World) -> None:
        self._world = world
        self._store = LambdaStore(world)
        self.faults: FaultInjector = world.faults[LAMBDA]

    def handle(self, request: Request) -> Response:
        try:
            return Response(200, {"data": self._serve(request)})
        except ApiError as err:
            return err.response()

    def _serve(self, request: Request) -> object:
        route, params = resolve(request.method, request.path)
        with self._world.tx():
            account = authenticate(self._world, request.headers)
            self._throttle(account, Bucket.GENERAL)
            if route is None:
                raise not_found()
            if route.bucket is not None:
                self._throttle(account, route.bucket)
            request.params = params
            ctx = Ctx(self._world, self._store, account, account_scope(self._world, account), request)
            return route.endpoint(ctx)

    def _throttle(self, account: str, bucket: Bucket) -> None:
        """Take a token from the account's bucket, or raise the 429."""
        interval, burst = _BUCKET_SETTINGS[bucket](self._rate_limit)
        wait = self._world.rate_limiter.acquire(
            (LAMBDA.value, account, bucket.value), interval=self._world.scaled(interval), burst=burst
        )
        if wait > 0:
            raise rate_limited(wait)

    @property
    def _rate_limit(self) -> RateLimit:
        return self._world.config(LAMBDA).rate_limit

    def reject(self, status: int, message: str) -> Response:
        """Framing problems found by the HTTP layer (bad Content-Length 400, body over 1 MiB 413)."""
        return invalid_parameters(f"Invalid request: {message}.", status=status).response()

    def injected_fault(self, status: int) -> Response:
        """An injected (or unexpected) server-side error in Lambda's shape."""
        faults: dict[int, Callable[[], ApiError]] = {
            500: internal_error,
            503: provider_unavailable,
            429: lambda: rate_limited(self._world.scaled(self._rate_limit.request_interval)),
        }
        return faults.get(status, internal_error)().response()
