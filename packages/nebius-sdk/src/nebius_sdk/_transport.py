"""The gRPC channel, the auth/deadline/idempotency interceptor, and retries.

Every call made through a `Transport` (and any call on its intercepted channel) carries
`authorization: Bearer <token>` and a deadline. Mutating calls carry an `x-idempotency-key` that stays the
same across the retries of one logical call, so a retry after UNAVAILABLE or DEADLINE_EXCEEDED cannot act
twice.
"""

from __future__ import annotations

import contextvars
import ipaddress
import logging
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

import grpc

from . import _status, errors
from ._backoff import RetryPolicy
from ._pb.nebius.common.v1 import ServiceErrorRetryType

log = logging.getLogger("nebius_sdk")

DEFAULT_TARGET = "compute.api.nebius.cloud:443"
USER_AGENT = "nebius-sdk-python/0.1.0"
AUTHORIZATION_KEY = "authorization"
IDEMPOTENCY_KEY = "x-idempotency-key"

# Errors after which repeating the same call is safe (reads, or writes with the same idempotency key).
_RETRYABLE = (errors.Unavailable, errors.RateLimited, errors.RequestNotSent)

Resp = TypeVar("Resp")


def is_loopback(target: str) -> bool:
    """Whether a gRPC target ("host:port", "[::1]:port", "dns:///host:port", "ipv4:1.2.3.4:port") is local."""
    host = _host_of(target)
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_of(target: str) -> str:
    rest = target
    for scheme in ("dns:///", "dns:", "ipv4:", "ipv6:"):
        if rest.startswith(scheme):
            rest = rest[len(scheme) :]
            break
    if rest.startswith("["):
        return rest[1 : rest.find("]")]
    if rest.count(":") > 1:  # a bare IPv6 address without port
        return rest
    return rest.rsplit(":", 1)[0] if ":" in rest else rest


def open_channel(target: str) -> grpc.Channel:
    """TLS (system roots) for remote targets, plaintext for loopback ones (the mock clouds)."""
    options = [("grpc.primary_user_agent", USER_AGENT)]
    if is_loopback(target):
        return grpc.insecure_channel(target, options=options)
    return grpc.secure_channel(target, grpc.ssl_channel_credentials(), options=options)


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


@dataclass
class _CallContext:
    """Per-logical-call settings read by the interceptor; `method` and `request_id` are filled in by it."""

    timeout: float
    idempotency_key: str = ""
    method: str = ""
    request_id: str = ""  # of the last successful attempt


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
    """Adds the bearer token, a deadline (always) and the call's idempotency key, if it has one.

    Before sending, it makes sure the channel is connected: if it cannot be, the call is not sent and
    `RequestNotSent` is raised.
    """

    def __init__(self, token: str, default_timeout: float, connector: _Connector, target: str) -> None:
        self._token = token
        self._default_timeout = default_timeout
        self._connector = connector
        self._target = target

    def __repr__(self) -> str:
        return f"<nebius_sdk interceptor timeout={self._default_timeout}>"

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        ctx = _CURRENT_CALL.get()
        timeout = ctx.timeout if ctx is not None else self._default_timeout
        if details.timeout is not None:
            timeout = min(timeout, details.timeout)
        metadata = [*(details.metadata or ()), (AUTHORIZATION_KEY, f"Bearer {self._token}")]
        if ctx is not None:
            ctx.method = details.method
            if ctx.idempotency_key:
                metadata.append((IDEMPOTENCY_KEY, ctx.idempotency_key))
        deadline = time.monotonic() + timeout
        if not self._connector.connect(timeout):
            raise errors.RequestNotSent("could not connect", method=details.method, target=self._target)
        remaining = max(deadline - time.monotonic(), 0.001)
        new = _ClientCallDetails(
            details.method,
            remaining,
            metadata,
            details.credentials,
            details.wait_for_ready,
            details.compression,
        )
        outcome = continuation(new, request)
        if ctx is not None:
            ctx.request_id = _status.request_id(outcome.initial_metadata())
        return outcome


class Transport:
    """Owns (or borrows) the channel; `call()` runs one logical call with deadline, retries, typed errors."""

    def __init__(
        self,
        *,
        token: str,
        target: str,
        channel: grpc.Channel | None,
        timeout: float,
        retry: RetryPolicy,
    ) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be > 0")
        self.target = target
        self.timeout = timeout
        self.retry = retry
        self._owns_channel = channel is None
        self._raw = channel if channel is not None else open_channel(target)
        interceptor = _Interceptor(token, timeout, _Connector(self._raw), target)
        self.channel = grpc.intercept_channel(self._raw, interceptor)
        self._rng = random.Random()

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
        idempotency key reused by all its attempts.
        """
        ctx = _CallContext(timeout or self.timeout, str(uuid.uuid4()) if mutating else "")
        attempts = max_attempts or self.retry.max_attempts
        for attempt in range(attempts):
            try:
                return self._attempt(rpc, request, ctx, attempt)
            except errors.NebiusError as exc:
                if not self._should_retry(exc) or attempt + 1 >= attempts:
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
        except errors.RequestNotSent as exc:
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
        if isinstance(exc, _RETRYABLE):
            return True
        service_error = getattr(exc, "service_error", None)
        return service_error is not None and service_error.retry_type == ServiceErrorRetryType.CALL


def is_transient(exc: errors.NebiusError) -> bool:
    """Errors an operation poll may ignore until its deadline (the same set the transport retries)."""
    return Transport._should_retry(exc)
