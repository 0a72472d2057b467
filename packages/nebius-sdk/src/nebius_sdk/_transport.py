"""The gRPC channel, the auth/deadline/idempotency interceptor, and retries.

Every call made through a `Transport` (and any call on its intercepted channel) carries
`authorization: Bearer <token>` from its `TokenSource` and a deadline. A call the server answers UNAUTHENTICATED
is sent once more with a fresh token, if the source has one (the refused call was not executed). Mutating calls
carry an `x-idempotency-key` that stays the same across the retries of one logical call, so a retry after
UNAVAILABLE or DEADLINE_EXCEEDED cannot act twice.

Channels (`plan_channel`): plaintext for a loopback IP target (the mock clouds), TLS for any host name (`localhost`
included) verified against the CA file of GRPC_DEFAULT_SSL_ROOTS_FILE_PATH, else SSL_CERT_FILE, else the system
trust store (as pysdk; grpcio's bundled roots only when there is none); pysdk's keepalive (a ping every 20 s,
also when idle); the HTTP proxy of grpc_proxy / https_proxy / HTTPS_PROXY / http_proxy unless NO_PROXY (or
no_proxy, no_grpc_proxy) names the host, as requests reads them (grpc core alone reads only the lowercase ones).

Before the first contact with its target a call that cannot connect fails at once with `Unreachable`, saying why
(`cloud_sdk_core.net.diagnose`); once the target was reached, a failed connection is `RequestNotSent`, retried.
"""

from __future__ import annotations

import contextvars
import ipaddress
import logging
import os
import random
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import grpc

from . import _status, errors
from ._backoff import RetryPolicy
from ._pb.nebius.common.v1 import ServiceErrorRetryType
from .endpoints import COMPUTE, DEFAULT_DOMAIN, join_host_port, service_address, split_host_port

if TYPE_CHECKING:
    from .auth import TokenSource

log = logging.getLogger("nebius_sdk")

DEFAULT_TARGET = service_address(COMPUTE, DEFAULT_DOMAIN)  # compute.api.nebius.cloud:443
USER_AGENT = "nebius-sdk-python/0.1.0"
AUTHORIZATION_KEY = "authorization"
IDEMPOTENCY_KEY = "x-idempotency-key"

CA_VARIABLES = ("GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", "SSL_CERT_FILE")  # the first one set names the CA file
PROXY_VARIABLES = ("grpc_proxy", "https_proxy", "HTTPS_PROXY", "http_proxy")  # the first one set is the proxy
NO_PROXY_VARIABLES = ("no_grpc_proxy", "no_proxy", "NO_PROXY")  # the first one set lists the hosts to reach directly

# pysdk's defaults (aio/keepalive.py), as gosdk's: a ping every 20 s, also without calls, answered within 10 s.
KEEPALIVE_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
)

# Errors after which repeating the same call is safe (reads, or writes with the same idempotency key).
_RETRYABLE = (errors.Unavailable, errors.RateLimited, errors.RequestNotSent)

Resp = TypeVar("Resp")


def uses_plaintext(target: str) -> bool:
    """Whether `target` ("host:port", "[::1]:port", "ipv4:127.0.0.1:port"...) is reached without TLS by default: a
    loopback IP address (127.0.0.0/8, ::1). Every host name, `localhost` included, uses TLS."""
    return _loopback_ip(split_host_port(target)[0])


def _loopback_ip(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def proxy_for(target: str, environ: Mapping[str, str]) -> str | None:
    """The HTTP proxy URL for `target`, or None to connect directly: the first of PROXY_VARIABLES that is set,
    unless the first of NO_PROXY_VARIABLES that is set names the host (`*`, a name and its subdomains, `host:port`,
    an IP address or network), as requests reads them. A loopback IP target never goes through a proxy."""
    host, port = split_host_port(target)
    if _loopback_ip(host):
        return None
    proxy = next((environ[name].strip() for name in PROXY_VARIABLES if environ.get(name, "").strip()), "")
    if not proxy:
        return None
    no_proxy = next((environ[name] for name in NO_PROXY_VARIABLES if environ.get(name, "").strip()), "")
    if no_proxy and _bypassed(host, port, no_proxy):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def _bypassed(host: str, port: int, no_proxy: str) -> bool:
    """Whether a NO_PROXY list names `host:port`: `*`; a name, which covers its subdomains (a leading dot is
    optional); any of these with `:port`; an IP address or network (CIDR)."""
    host = host.lower()
    for entry in (item.strip().lower() for item in no_proxy.split(",")):
        if entry == "*":
            return True
        try:
            name, entry_port = split_host_port(entry, default_port=0)
        except ValueError:
            continue
        name = name.lstrip(".")
        if not name or entry_port not in (0, port):
            continue
        if host == name or host.endswith(f".{name}") or _in_network(host, name):
            return True
    return False


def _in_network(host: str, network: str) -> bool:
    try:
        return ipaddress.ip_address(host) in ipaddress.ip_network(network, strict=False)
    except ValueError:
        return False


@dataclass(frozen=True)
class ChannelPlan:
    """How a channel to `target` is opened: `tls` verified against `ca_file` (None: grpcio's bundled roots), through
    `proxy` (None: directly), with the gRPC channel `options`."""

    target: str
    tls: bool
    ca_file: str | None
    proxy: str | None
    options: tuple[tuple[str, Any], ...]


def plan_channel(target: str, *, insecure: bool | None = None, environ: Mapping[str, str] | None = None) -> ChannelPlan:
    """The channel plan of `target` under `environ` (default: the process's). `insecure` True forces plaintext,
    False TLS; None follows `uses_plaintext`. Raises ValueError when a CA variable names no file."""
    from cloud_sdk_core.net import ca_file

    variables = os.environ if environ is None else environ
    tls = not uses_plaintext(target) if insecure is None else not insecure
    proxy = proxy_for(target, variables)
    route = ("grpc.http_proxy", proxy) if proxy else ("grpc.enable_http_proxy", 0)
    return ChannelPlan(
        target=target,
        tls=tls,
        ca_file=ca_file(variables, CA_VARIABLES) if tls else None,
        proxy=proxy,
        options=(("grpc.primary_user_agent", USER_AGENT), *KEEPALIVE_OPTIONS, route),
    )


def open_channel(plan: ChannelPlan) -> grpc.Channel:
    """A new channel following `plan`. Raises ValueError when its CA file cannot be read."""
    options = list(plan.options)
    if not plan.tls:
        return grpc.insecure_channel(plan.target, options=options)
    roots = None
    if plan.ca_file is not None:
        try:
            with open(plan.ca_file, "rb") as file:
                roots = file.read()
        except OSError as exc:
            raise ValueError(f"the CA file {plan.ca_file} cannot be read: {exc.strerror}") from None
    return grpc.secure_channel(plan.target, grpc.ssl_channel_credentials(root_certificates=roots), options=options)


# Core connectivity states (grpc_connectivity_state):
# IDLE 0, CONNECTING 1, READY 2, TRANSIENT_FAILURE 3, SHUTDOWN 4.
_READY = 2
_SETTLED = frozenset({2, 3, 4})


class _Connector:
    """Connects the channel before a call is sent, so that "the request never left" is known for certain.

    gRPC has no public synchronous connectivity API (and `Channel.subscribe` leaves a polling thread that can
    crash when the channel closes), so this uses the core channel's `check_connectivity_state` /
    `watch_connectivity_state`, which grpc's own polling uses. If a channel does not expose them, calls are
    simply sent and no failure is ever reported as `RequestNotSent` (the conservative answer).
    """

    def __init__(self, channel: Any) -> None:
        self._core = _core_channel(channel)

    def connect(self, timeout: float) -> bool:
        """Block until the channel is READY (True) or failed to connect / `timeout` passed (False)."""
        if self._core is None:
            return True
        deadline = time.time() + timeout
        try:
            state = self._core.check_connectivity_state(True)
            while state not in _SETTLED and time.time() < deadline:
                self._core.watch_connectivity_state(state, deadline)
                state = self._core.check_connectivity_state(False)
        except ValueError:  # channel closed: let the call itself report it
            return True
        ready: bool = state == _READY
        return ready


def _core_channel(channel: Any) -> Any:
    """The cygrpc channel under a grpc.Channel (possibly wrapped by interceptors), or None."""
    for _ in range(4):
        if hasattr(channel, "check_connectivity_state") and hasattr(channel, "watch_connectivity_state"):
            return channel
        channel = getattr(channel, "_channel", None)
        if channel is None:
            return None
    return None


class _Link:
    """The channel's connection as calls see it: `ensure()` connects before a call is sent. Until the target was
    reached once, a channel that cannot connect for a reason that does not pass in seconds (`cloud_sdk_core.net`
    FAIL_FAST: DNS, refused, no route, TLS, proxy) raises `Unreachable` at once, with the cause; otherwise (after
    the first contact, or a target that is only slow) `RequestNotSent`, which the transport retries."""

    def __init__(self, channel: Any, target: str, plan: ChannelPlan | None) -> None:
        from cloud_sdk_core.net import FirstContact

        self._connector = _Connector(channel)
        self._target = target
        self._plan = plan
        self._tls = plan.tls if plan is not None else not uses_plaintext(target)
        host, port = split_host_port(target)
        self._contact = FirstContact(f"{'https' if self._tls else 'http'}://{join_host_port(host, port)}")

    @property
    def reached(self) -> bool:
        return self._contact.has_answered

    def ensure(self, method: str, timeout: float) -> None:
        """Block until connected, at most `timeout` seconds. Raises `Unreachable` or `RequestNotSent`."""
        if self._connector.connect(timeout):
            self._contact.answered()
            return
        plan = self._plan
        cause = self._contact.unreachable(
            ca_file=plan.ca_file if plan is not None else None,
            proxy=plan.proxy if plan is not None else None,
            tls=self._tls,
        )
        if cause is None:
            raise errors.RequestNotSent("could not connect", method=method, target=self._target)
        log.debug("%s: cannot reach %s: %s", method, self._target, cause.text)
        raise errors.Unreachable(host=self._contact.host, target=self._target, cause=cause, method=method)


@dataclass
class _CallContext:
    """Per-logical-call settings read by the interceptor; `method`, `request_id` and `credentials_failed` are
    filled in by it."""

    timeout: float
    idempotency_key: str = ""
    method: str = ""
    request_id: str = ""  # of the last successful attempt
    credentials_failed: bool = False  # the token source raised: its own retries are done, the call's are not due


_CURRENT_CALL: contextvars.ContextVar[_CallContext | None] = contextvars.ContextVar(
    "nebius_sdk_call", default=None
)


class _Details(NamedTuple):
    method: str
    timeout: float | None
    metadata: Any
    credentials: Any
    wait_for_ready: Any
    compression: Any


class _ClientCallDetails(_Details, grpc.ClientCallDetails):
    pass


class _Interceptor(grpc.UnaryUnaryClientInterceptor):
    """Adds the bearer token (asked of the token source on every call), a deadline (always) and the call's
    idempotency key, if it has one.

    Before sending, it makes sure the channel is connected (`_Link.ensure`): if it cannot be, the call is not sent
    and `Unreachable` or `RequestNotSent` is raised. A call answered UNAUTHENTICATED is sent once more, with the
    same idempotency key, when the source gives a different token after `invalidate`.
    """

    def __init__(self, credentials: TokenSource | None, default_timeout: float, link: _Link) -> None:
        self._credentials = credentials
        self._default_timeout = default_timeout
        self._link = link

    def __repr__(self) -> str:
        return f"<nebius_sdk interceptor timeout={self._default_timeout}>"

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        ctx = _CURRENT_CALL.get()
        timeout = ctx.timeout if ctx is not None else self._default_timeout
        if details.timeout is not None:
            timeout = min(timeout, details.timeout)
        if ctx is not None:
            ctx.method = details.method
        token = self._token(ctx)
        deadline = time.monotonic() + timeout
        self._link.ensure(details.method, timeout)
        outcome = self._send(continuation, details, request, ctx, token, deadline)
        if token and outcome.code() == grpc.StatusCode.UNAUTHENTICATED:
            assert self._credentials is not None
            self._credentials.invalidate(token)
            fresh = self._token(ctx)
            if fresh != token:
                log.debug("%s: the token was refused; sending the call again with a fresh one", details.method)
                outcome = self._send(continuation, details, request, ctx, fresh, time.monotonic() + timeout)
        if ctx is not None:
            ctx.request_id = _status.request_id(outcome.initial_metadata())
        return outcome

    def _token(self, ctx: _CallContext | None) -> str:
        """The source's token ("" without a source). What it raises propagates, marked in `ctx`."""
        if self._credentials is None:
            return ""
        try:
            return self._credentials.token()
        except Exception:
            if ctx is not None:
                ctx.credentials_failed = True
            raise

    @staticmethod
    def _send(
        continuation: Any, details: Any, request: Any, ctx: _CallContext | None, token: str, deadline: float
    ) -> Any:
        metadata = [*(details.metadata or ())]
        if token:
            metadata.append((AUTHORIZATION_KEY, f"Bearer {token}"))
        if ctx is not None and ctx.idempotency_key:
            metadata.append((IDEMPOTENCY_KEY, ctx.idempotency_key))
        new = _ClientCallDetails(
            details.method,
            max(deadline - time.monotonic(), 0.001),
            metadata,
            details.credentials,
            details.wait_for_ready,
            details.compression,
        )
        return continuation(new, request)


class Transport:
    """Owns (or borrows) the channel; `call()` runs one logical call with deadline, retries, typed errors.

    `credentials` None sends no authorization (the token service's own calls). `insecure` as for `plan_channel`;
    it is ignored for a borrowed `channel`. Raises ValueError for a timeout of 0 or less, or a CA variable that
    names no readable file.
    """

    def __init__(
        self,
        *,
        credentials: TokenSource | None,
        target: str,
        channel: grpc.Channel | None,
        timeout: float,
        retry: RetryPolicy,
        insecure: bool | None = None,
    ) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be > 0")
        self.target = target
        self.timeout = timeout
        self.retry = retry
        self._owns_channel = channel is None
        self.plan: ChannelPlan | None = None
        if channel is None:
            self.plan = plan_channel(target, insecure=insecure)
            channel = open_channel(self.plan)
        self._raw = channel
        self._link = _Link(self._raw, target, self.plan)
        self.channel = grpc.intercept_channel(self._raw, _Interceptor(credentials, timeout, self._link))
        self._rng = random.Random()

    @property
    def reached(self) -> bool:
        """Whether a call of this transport ever connected to the target."""
        return self._link.reached

    def close(self) -> None:
        """Close the channel if this transport opened it (a borrowed channel stays open)."""
        if self._owns_channel:
            self._raw.close()

    def call(
        self,
        rpc: Callable[[Any], Resp],
        request: Any,
        *,
        mutating: bool = False,
        timeout: float | None = None,
        max_attempts: int | None = None,
    ) -> Resp:
        """Call a generated stub method; retry transient failures with backoff; raise typed errors.

        `timeout` is the deadline of each attempt (default: the client's). A mutating call gets one
        idempotency key reused by all its attempts. `Unreachable` and the token source's failures are not
        retried.
        """
        ctx = _CallContext(timeout or self.timeout, str(uuid.uuid4()) if mutating else "")
        attempts = max_attempts or self.retry.max_attempts
        for attempt in range(attempts):
            ctx.credentials_failed = False
            try:
                return self._attempt(rpc, request, ctx, attempt)
            except errors.NebiusError as exc:
                if ctx.credentials_failed or not self._should_retry(exc) or attempt + 1 >= attempts:
                    raise
                delay = self.retry.delay(attempt + 1, None, self._rng)
                log.debug("retrying %s in %.3f s after %s", ctx.method, delay, type(exc).__name__)
                time.sleep(delay)
        raise AssertionError("unreachable")

    def _attempt(self, rpc: Callable[[Any], Resp], request: Any, ctx: _CallContext, attempt: int) -> Resp:
        token = _CURRENT_CALL.set(ctx)
        try:
            response = rpc(request)
        except grpc.RpcError as exc:
            error = _status.rpc_error(exc, method=ctx.method, target=self.target)
            log.debug("%s attempt %d failed: %s", ctx.method, attempt + 1, error)
            raise error from None
        except errors.NebiusError as exc:
            log.debug("%s attempt %d not sent: %s", ctx.method, attempt + 1, exc)
            raise
        finally:
            _CURRENT_CALL.reset(token)
        key = ctx.idempotency_key or "-"
        log.debug(
            "%s attempt %d ok (request id %s, idempotency key %s)",
            ctx.method,
            attempt + 1,
            ctx.request_id,
            key,
        )
        return response

    @staticmethod
    def _should_retry(exc: errors.NebiusError) -> bool:
        if isinstance(exc, errors.Unreachable):
            return False
        if isinstance(exc, _RETRYABLE):
            return True
        service_error = getattr(exc, "service_error", None)
        return service_error is not None and service_error.retry_type == ServiceErrorRetryType.CALL


def is_transient(exc: errors.NebiusError) -> bool:
    """Errors an operation poll may ignore until its deadline (the same set the transport retries)."""
    return Transport._should_retry(exc)
