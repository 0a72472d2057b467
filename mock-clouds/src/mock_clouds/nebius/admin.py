"""The admin API's Nebius IAM routes (mock extensions: the real cloud has no such controls).

    GET  /nebius/token-exchanges  -> {"count": N, "token_lifetime": S, "expires_in": E,
                                      "exchanges": [{"at", "service_account_id", "expires_at"}, ...]}
                                     `count` is every exchange since the world was made; `exchanges` the most
                                     recent ones (at most core.tokens.MAX_LOGGED_EXCHANGES), oldest first
    GET  /nebius/token-lifetime   -> {"token_lifetime": S, "expires_in": E}
    POST /nebius/token-lifetime   -> body {"token_lifetime": S}: S seconds (before the time scale, > 0) for the
                                     tokens issued from now on; answers as GET. Issued tokens keep their expiry
    GET  /nebius/service-accounts -> {"service_accounts": [{"id", "tenant_id", "public_key_id"}]}
    GET  /nebius/service-accounts/{id}/credentials
                                  -> the account's credentials file ({"subject-credentials": {...}}), which
                                     holds its private key: what `mock-clouds credentials` writes
    GET  /nebius/calculator       -> {"permitted": bool}
    POST /nebius/calculator       -> body {"permitted": false}: the billing calculators answer PERMISSION_DENIED
                                     from now on, as for credentials without a billing role (true: they price again)

`E` is what an exchange now answers in `expires_in`: S times the world's time scale, in whole seconds, >= 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from ..http import BadRequestBody, Request, Response, Router
from . import billing, keys

if TYPE_CHECKING:
    from ..http import Handler
    from ..runner import MockClouds


class LifetimeUpdate(msgspec.Struct, forbid_unknown_fields=True):
    token_lifetime: float


class CalculatorUpdate(msgspec.Struct, forbid_unknown_fields=True):
    permitted: bool


def add_routes(router: Router[Handler], clouds: MockClouds) -> None:
    """Serve the routes of the module docstring from `router`."""
    routes = _Routes(clouds)
    router.add("GET", "/nebius/token-exchanges", routes.exchanges)
    router.add("GET", "/nebius/token-lifetime", routes.lifetime)
    router.add("POST", "/nebius/token-lifetime", routes.set_lifetime)
    router.add("GET", "/nebius/service-accounts", routes.service_accounts)
    router.add("GET", "/nebius/service-accounts/{account_id}/credentials", routes.credentials)
    router.add("GET", "/nebius/calculator", routes.calculator)
    router.add("POST", "/nebius/calculator", routes.set_calculator)


class _Routes:
    def __init__(self, clouds: MockClouds) -> None:
        self.clouds = clouds

    def exchanges(self, request: Request) -> Response:
        world = self.clouds.world
        with world.tx():
            service = world.state.token_service
            log = [msgspec.structs.asdict(entry) for entry in service.exchanges]
            return Response(200, {"count": service.exchange_count, **self._lifetime(), "exchanges": log})

    def lifetime(self, request: Request) -> Response:
        with self.clouds.world.tx():
            return Response(200, self._lifetime())

    def set_lifetime(self, request: Request) -> Response:
        world = self.clouds.world
        try:
            update = request.json(LifetimeUpdate)
            with world.tx():
                world.tokens.set_lifetime(update.token_lifetime)
                return Response(200, self._lifetime())
        except (BadRequestBody, ValueError) as exc:
            return Response(400, {"error": str(exc)})

    def service_accounts(self, request: Request) -> Response:
        world = self.clouds.world
        with world.tx():
            accounts = [{"id": a.id, "tenant_id": a.owner, "public_key_id": a.public_key_id}
                        for a in world.state.token_service.service_accounts]
        return Response(200, {"service_accounts": accounts})

    def credentials(self, request: Request) -> Response:
        world = self.clouds.world
        with world.tx():
            account = world.tokens.account(request.params["account_id"])
            document = keys.credentials_document(account) if account is not None else None
        if document is None:
            return Response(404, {"error": f"no service account {request.params['account_id']}"})
        return Response(200, document)

    def calculator(self, request: Request) -> Response:
        with self.clouds.world.tx() as world:
            return Response(200, {"permitted": billing.permitted(world)})

    def set_calculator(self, request: Request) -> Response:
        try:
            update = request.json(CalculatorUpdate)
        except BadRequestBody as exc:
            return Response(400, {"error": str(exc)})
        with self.clouds.world.tx() as world:
            billing.permit(world, update.permitted)
            return Response(200, {"permitted": billing.permitted(world)})

    def _lifetime(self) -> dict[str, float | int]:
        world = self.clouds.world
        return {"token_lifetime": world.state.token_service.token_lifetime,
                "expires_in": world.tokens.expires_in(world.state.time_scale)}
