"""`nebius.iam.v1.TokenExchangeService/Exchange`: a service account's signed JWT for an access token.

The call needs no bearer token (it is how a client gets one). The request is RFC 8693 token exchange as pysdk
sends it: `grant_type` token-exchange, `subject_token_type` jwt, `requested_token_type` access_token (or empty,
its default), and the JWT in `subject_token`. A malformed request is INVALID_ARGUMENT with a BadRequest detail;
a JWT that does not authenticate is UNAUTHENTICATED (`subject_token` checks the JWT itself).

The answer is `CreateTokenResponse{access_token, issued_token_type, token_type: "Bearer", expires_in}`. The token
is random and opaque; it authenticates as the service account's tenant, like the tenant's static credential,
until `expires_in` seconds have passed: the scenario's lifetime (`[nebius.iam] token_lifetime`, default the real
12 h) multiplied by the time scale, in whole seconds, at least 1. Then calls with it are UNAUTHENTICATED.
Impersonation and delegation (`actor_token`) are not modelled and are refused.
"""

from __future__ import annotations

from ..core.models import ServiceAccount
from . import errors, keys, subject_token
from ._pb.nebius.iam import v1 as iam
from .call import Call

GRANT_TYPE = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:jwt"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
TOKEN_TYPE = "Bearer"


def exchange(call: Call, request: iam.ExchangeTokenRequest) -> iam.CreateTokenResponse:
    """Verify the subject JWT and issue an access token for its service account (logged in the world)."""
    violations = _violations(request)
    if violations:
        raise errors.bad_request(violations, service=errors.IAM_SERVICE)
    try:
        jwt = subject_token.parse(request.subject_token)
    except subject_token.Malformed as exc:
        raise subject_token.refusal(exc) from None
    world = call.world
    with world.tx():
        now = world.wall_now()  # tokens live on the wall clock: moving the world clock expires none
        try:
            account = subject_token.verify(jwt, lambda kid: _with_key(world.tokens.account_by_key(kid)), now)
        except subject_token.Refused as exc:
            raise subject_token.refusal(exc) from None
        expires_in = world.tokens.expires_in(world.state.time_scale)
        token = world.tokens.issue(account, now, expires_in)
    return iam.CreateTokenResponse(
        access_token=token, issued_token_type=ACCESS_TOKEN_TYPE, token_type=TOKEN_TYPE, expires_in=expires_in
    )


def _violations(request: iam.ExchangeTokenRequest) -> list[tuple[str, str]]:
    """What makes the request malformed, as (field, message) pairs."""
    found = []
    if request.grant_type != GRANT_TYPE:
        found.append(("grant_type", f"grant_type must be {GRANT_TYPE}"))
    if request.requested_token_type not in ("", ACCESS_TOKEN_TYPE):
        found.append(("requested_token_type", f"only {ACCESS_TOKEN_TYPE} can be issued"))
    if not request.subject_token:
        found.append(("subject_token", "subject_token is required"))
    if request.subject_token_type != JWT_TOKEN_TYPE:
        found.append(("subject_token_type", f"subject_token_type must be {JWT_TOKEN_TYPE}"))
    if request.actor_token or request.actor_token_type:
        found.append(("actor_token", "impersonation and delegation are not supported by this mock"))
    return found


def _with_key(account: ServiceAccount | None) -> ServiceAccount | None:
    """The account with its key pair (made now if it has none: only its owner could have signed with it, so a
    JWT naming a key not made yet does not verify)."""
    return keys.key_pair(account) if account is not None else None
