"""HTTP transport: URL building, HMAC signing, retries, error mapping and redacted debug logs.

Retry rules (bounded by `RetryPolicy.max_attempts`, sleeping `RetryPolicy.delay`, Retry-After honoured):
- ConnectError is never retried: the endpoint has not answered this client yet and cannot be reached (its name
  does not resolve, nothing listens, TLS verification or the proxy failed; `cloud_sdk_core.net.diagnose` says
  which, in one line), so the call fails at once.
- RequestNotSent (connection refused, DNS, connect timeout) is retried for every call: nothing reached the
  server, so even a create cannot be duplicated.
- 429 is retried for every call: the rate limiter answers before the request is handled, so a refused create
  or action was not applied (research real-clouds.md 3.3 "Retries and 429").
- 5xx (except 501) and lost responses (NoResponse) are retried only for calls marked `idempotent`
  (GET, DELETE). A create or an instance action (POST/PATCH) is never retried after it may have been
  handled: Crusoe has no idempotency key, so the caller decides (see `CrusoeClient.find_instance`).
- Redirects are not followed (a redirected POST would become a GET): a 3xx is an APIError naming its Location.

TLS is verified against the CA bundle `cloud_sdk_core.net.ca_file` finds (REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE,
SSL_CERT_FILE, then the system trust store; certifi only when there is none), read when the transport is made.
Proxies come from HTTPS_PROXY/HTTP_PROXY/ALL_PROXY and NO_PROXY, as requests reads them, once, when the
transport is made (`owned_session`; an injected session is used as it is).
"""

from __future__ import annotations

import functools
import itertools
import logging
import os
import random
import time
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

import msgspec
import requests
import requests.adapters
import requests.utils
import urllib3
from cloud_sdk_core.net import Cause, FirstContact, ca_file

from . import _errormap, _signing, errors
from ._backoff import RetryPolicy

log = logging.getLogger("crusoe_sdk")

T = TypeVar("T")

USER_AGENT = "crusoe-sdk-python/0.1.0"
_NOT_RETRIED_5XX = frozenset({501})
CA_VARIABLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE")  # the first one set names the CA bundle
_RETRYABLE = (errors.RequestNotSent, errors.NoResponse, errors.RateLimited, errors.ServerError)
MIN_REQUEST_TIMEOUT = 1.0  # a request near a deadline still gets this long
POOL_SIZE = 64  # connections an owned session keeps open to the endpoint (requests keeps 10)
# requests errors raised once a connection was attempted; any other RequestException is raised before
_TRANSPORT_FAILURES = (
    requests.ConnectionError,
    requests.Timeout,
    requests.exceptions.ChunkedEncodingError,
    requests.exceptions.ContentDecodingError,
)


@dataclass(frozen=True)
class _Call:
    """One logical call, possibly sent several times (each attempt is signed afresh)."""

    method: str
    url: str  # with the canonical query
    signed_path: str  # the URL path, version prefix included
    query: str  # canonical query, exactly as sent
    payload: bytes | None
    idempotent: bool
    deadline: float | None
    project: str  # the project whose path this is ("" for none): a 403 there is ProjectUnavailable


class Transport:
    """Sends signed requests to one Crusoe endpoint. Holds the secret; never prints it."""

    def __init__(
        self,
        *,
        base_url: str,
        access_key_id: str,
        secret_key: str,
        session: requests.Session | None,
        timeout: float,
        retry: RetryPolicy,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        _signing.decode_secret(secret_key)  # fail early, without echoing the secret
        self.base_url = base_url.rstrip("/")
        self._base_path = urlsplit(self.base_url).path
        self._access_key_id = access_key_id
        self._secret_key = secret_key
        self._owns_session = session is None
        self._session = session if session is not None else owned_session(self.base_url)
        self._reach = Reach(self._session, self.base_url, os.environ)
        self._timeout = (min(10.0, timeout), timeout)
        self.retry = retry
        self._sleep = sleep
        self._rng = rng

    def __repr__(self) -> str:
        return f"Transport(base_url={self.base_url!r})"

    def close(self) -> None:
        """Close the session if this transport created it (an injected session belongs to the caller)."""
        if self._owns_session:
            self._session.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        query: _signing.QueryParams | None = None,
        body: Any = None,
        idempotent: bool,
        into: type[T],
        deadline: float | None = None,
        project: str = "",
    ) -> T:
        """Send one call (retrying as the module docstring says) and decode its 2xx body into `into`.

        `deadline` (a `time.monotonic()` value) stops retries that would sleep past it and shortens the
        request timeout to the time left (never below MIN_REQUEST_TIMEOUT). `project` is the project whose
        path this is, if any. Raises an APIError subclass for an error response (a 2xx body that does not
        decode is an APIError too), ConnectError when the endpoint never answered and cannot be reached,
        RequestNotSent or NoResponse when no response came.
        """
        canonical = _signing.canonical_query(query or {})
        call = _Call(
            method=method, url=self.base_url + path + (f"?{canonical}" if canonical else ""),
            signed_path=self._base_path + path, query=canonical,
            payload=None if body is None else msgspec.json.encode(body),
            idempotent=idempotent, deadline=deadline, project=project,
        )
        for attempt in itertools.count(1):
            try:
                return _decode(self._send(call, attempt), into, method=method, url=call.url)
            except _RETRYABLE as exc:
                delay = self._retry_delay(call, exc, attempt)
                if delay is None:
                    raise
                log.debug("retrying %s %s in %.2fs after %s", method, call.url, delay, type(exc).__name__)
                self._sleep(delay)
        raise AssertionError("unreachable")

    def _retry_delay(self, call: _Call, exc: errors.CrusoeError, attempt: int) -> float | None:
        """Seconds to wait before trying `call` again, or None when `exc` must be raised."""
        if isinstance(exc, errors.ConnectError):
            return None
        safe = call.idempotent or isinstance(exc, errors.RequestNotSent | errors.RateLimited)
        if attempt >= self.retry.max_attempts or not safe:
            return None
        if isinstance(exc, errors.ServerError) and exc.status in _NOT_RETRIED_5XX:
            return None
        retry_after = exc.retry_after if isinstance(exc, errors.RateLimited) else None
        if retry_after is not None and retry_after > self.retry.max_retry_after:
            return None
        delay = self.retry.delay(attempt, retry_after, self._rng)
        if call.deadline is not None and time.monotonic() + delay >= call.deadline:
            return None
        return delay

    def _request_timeout(self, deadline: float | None) -> tuple[float, float]:
        if deadline is None:
            return self._timeout
        left = max(MIN_REQUEST_TIMEOUT, deadline - time.monotonic())
        return (min(self._timeout[0], left), min(self._timeout[1], left))

    def _send(self, call: _Call, attempt: int) -> requests.Response:
        headers = self._headers(call.method, call.signed_path, call.query, call.payload is not None)
        started = time.monotonic()
        try:
            response = self._session.request(
                call.method, call.url, data=call.payload, headers=headers,
                timeout=self._request_timeout(call.deadline), allow_redirects=False, verify=self._reach.verify,
            )
        except requests.RequestException as exc:
            log.debug("%s %s -> %s (attempt %d)", call.method, call.url, type(exc).__name__, attempt)
            cause = self._reach.unreachable(exc, self._session)
            if cause is not None:
                message = self._reach.contact.message(cause)
                log.debug("%s %s: %s", call.method, call.url, message)
                raise errors.ConnectError(message, cause=cause, endpoint=self._reach.contact.endpoint,
                                          method=call.method, url=call.url) from exc
            raise connection_error(exc, call.method, call.url) from exc
        self._reach.contact.answered()
        elapsed_ms = (time.monotonic() - started) * 1000
        log.debug("%s %s -> %d (%.0f ms, attempt %d)",
                  call.method, call.url, response.status_code, elapsed_ms, attempt)
        if response.status_code >= 300:
            raise _errormap.from_response(
                response.status_code, response.content, response.headers, method=call.method, url=call.url,
                project=call.project,
            )
        return response

    def _headers(self, method: str, signed_path: str, query: str, has_body: bool) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if has_body:
            headers["Content-Type"] = "application/json"
        headers.update(
            _signing.auth_headers(
                self._access_key_id, self._secret_key, method=method, path=signed_path, query=query
            )
        )
        return headers


def owned_session(base_url: str) -> requests.Session:
    """The session a transport makes for itself. It reads the environment once, here, not on every request as
    requests does (a fifth of a call's CPU): the proxy for `base_url` (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, less
    NO_PROXY) is fixed now, and .netrc is never read (every call carries its own credentials). It keeps up to
    POOL_SIZE connections open to the endpoint, so that many calls at once do not open a connection each."""
    session = requests.Session()
    session.proxies.update(requests.utils.get_environ_proxies(base_url))
    session.trust_env = False
    for scheme in ("https://", "http://"):
        session.mount(scheme, requests.adapters.HTTPAdapter(pool_maxsize=POOL_SIZE))
    return session


class Reach:
    """How the transport reaches its endpoint, as requests does (CA bundle, proxy), and whether it ever has.

    `verify` is what every request passes as requests' `verify`: the bundle `ca_file(environ, CA_VARIABLES)`
    finds, or True (requests' certifi) when there is none; None for a plain-HTTP endpoint or a session whose own
    `verify` was set (requests then decides, as always). Raises ValueError when a CA variable names no file.
    """

    def __init__(self, session: requests.Session, base_url: str, environ: Mapping[str, str]) -> None:
        self.contact = FirstContact(base_url)
        self.verify: str | bool | None = None
        if self.contact.tls and session.verify is True:
            self.verify = ca_file(environ, CA_VARIABLES) or True

    def unreachable(self, exc: requests.RequestException, session: requests.Session) -> Cause | None:
        """Why the endpoint cannot be reached, when `exc` is a failure to connect (not a timeout) before the
        endpoint has ever answered and `diagnose` finds a cause that does not pass in seconds; else None."""
        if not isinstance(exc, requests.ConnectionError) or isinstance(exc, requests.Timeout):
            return None
        verify = self.verify if self.verify is not None else session.verify
        bundle = verify if isinstance(verify, str) else requests.utils.DEFAULT_CA_BUNDLE_PATH if verify else None
        tls = self.contact.tls and bool(verify)  # a session that does not verify fails on no certificate
        return self.contact.unreachable(ca_file=bundle, proxy=self.proxy(session), tls=tls)

    def proxy(self, session: requests.Session) -> str | None:
        """The proxy requests uses for the endpoint (the session's, else HTTPS_PROXY/NO_PROXY...), or None."""
        url = self.contact.endpoint
        proxies = session.merge_environment_settings(url, {}, None, None, None)["proxies"]
        return requests.utils.select_proxy(url, proxies)


@functools.lru_cache(maxsize=64)
def _decoder(into: Any) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(into)


def _decode(response: requests.Response, into: type[T], *, method: str, url: str) -> T:
    """Decode a 2xx body (an empty body decodes as `{}`) as the Go server means it: a member whose value is
    `null` (a nil slice or pointer) reads as absent, so the field keeps its default; numbers and booleans sent
    as strings (`"6"`: quota counters, dstack backends/crusoe/compute.py:174-175) read as numbers. A body that
    still does not fit `into` is an APIError. A body that fits `into` as it is takes the typed decoder alone
    (a listing of thousands of VMs is not built as Python objects twice)."""
    body = response.content or b"{}"
    # A class is hashable; mypy does not match class objects against the Hashable protocol.
    decoder: msgspec.json.Decoder[T] = _decoder(cast(Hashable, into))
    try:
        return decoder.decode(body)
    except msgspec.DecodeError:
        return _decode_leniently(body, into, response.status_code, method=method, url=url)


def _decode_leniently(body: bytes, into: type[T], status: int, *, method: str, url: str) -> T:
    """`body` as `into` with nulls dropped and numbers read from strings; APIError when it still does not fit."""
    try:
        return msgspec.convert(drop_nulls(msgspec.json.decode(body)), into, strict=False)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise errors.APIError(f"unexpected response body: {exc}", status=status, method=method, url=url) from exc


def drop_nulls(value: Any) -> Any:
    """`value` without the object members whose value is JSON `null`, at any depth (list items are kept)."""
    if isinstance(value, dict):
        return {key: drop_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [drop_nulls(item) for item in value]
    return value


def connection_error(exc: requests.RequestException, method: str, url: str) -> errors.CrusoeError:
    """RequestNotSent when the request provably never reached the server, else NoResponse."""
    detail = str(exc)[:300]  # host, port and path only: requests never puts headers in messages
    message = f"{method} {url}: {type(exc).__name__}: {detail}"
    if _never_sent(exc):
        return errors.RequestNotSent(f"request not sent: {message}", method=method, url=url)
    return errors.NoResponse(f"no response (the action may have happened): {message}", method=method, url=url)


def _never_sent(exc: requests.RequestException) -> bool:
    if isinstance(exc, requests.ConnectTimeout):
        return True
    if not isinstance(exc, _TRANSPORT_FAILURES):
        return True  # invalid URL/header/schema: requests refused before connecting
    return any(isinstance(cause, urllib3.exceptions.NewConnectionError) for cause in _causes(exc))


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and what it wraps: args, urllib3's MaxRetryError.reason, __cause__/__context__ (bounded walk)."""
    pending: list[BaseException] = [exc]
    seen: set[int] = set()
    while pending and len(seen) < 32:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        pending.extend(arg for arg in current.args if isinstance(arg, BaseException))
        for linked in (getattr(current, "reason", None), current.__cause__, current.__context__):
            if isinstance(linked, BaseException):
                pending.append(linked)
