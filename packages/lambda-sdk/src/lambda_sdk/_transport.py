"""HTTP transport: base URL, Bearer auth, timeouts, rate limiting, retries, and response-to-error mapping.

`requests` is imported here, and this module is only imported when a client is constructed.

TLS is verified against the CA bundle `cloud_sdk_core.net.ca_file` finds (REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE,
SSL_CERT_FILE, then the system trust store; certifi only when there is none), read when the transport is made.
Proxies come from HTTPS_PROXY/HTTP_PROXY/ALL_PROXY and NO_PROXY, as requests reads them, once, when the
transport is made (`owned_session`; an injected session is used as it is). Redirects
are not followed (a redirected POST would become a GET): a 3xx is an APIError naming its Location. Until the
endpoint has answered once, a connection failure whose cause does not pass in seconds (the name does not resolve,
nothing listens, TLS verification or the proxy fails) is raised at once as ConnectError, never retried.
"""

from __future__ import annotations

import enum
import functools
import logging
import os
import random
import threading
import time
from collections.abc import Hashable, Mapping
from typing import Any, TypeVar, cast

import msgspec
import requests
import requests.adapters
import requests.utils
import urllib3.exceptions
from cloud_sdk_core.net import Cause, FirstContact, ca_file

from . import errors
from ._policy import RateLimiter, RetryPolicy, TokenBucket, parse_retry_after
from .models import Envelope, ErrorEnvelope

log = logging.getLogger("lambda_sdk")

T = TypeVar("T")

CA_VARIABLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE")  # the first one set names the CA bundle
ABORT_CHECK = 0.1  # seconds between two looks at `abort` while a launch waits for the one under way
POOL_SIZE = 64  # connections an owned session keeps open to the endpoint (requests keeps 10)
# Headers that may carry a request id; Lambda does not document one, so take the first present.
_REQUEST_ID_HEADERS = ("x-request-id", "x-amzn-requestid", "request-id", "cf-ray")


class Retry(enum.Enum):
    """Which failures a call may be repeated after."""

    IDEMPOTENT = "idempotent"  # reads and idempotent writes: 429, 5xx and any transport failure
    IF_NOT_APPLIED = "if-not-applied"  # creates and restarts: only when the server certainly did nothing


class Bucket(enum.Enum):
    GENERAL = "general"
    LAUNCH = "launch"


class Transport:
    """Sends one API call with auth, rate limiting and bounded retries; decodes `{"data": ...}` or raises."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        session: requests.Session | None,
        timeout: float | tuple[float, float],
        limiter: RateLimiter,
        retry: RetryPolicy,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._auth = f"Bearer {api_key}"
        self._owns_session = session is None
        self.session = session or owned_session(self.base_url)
        self._reach = Reach(self.session, self.base_url, os.environ)
        self.timeout = timeout
        self.limiter = limiter
        self.retry_policy = retry
        self._launching = threading.Lock()  # held by a launch from its first token to its answer
        self._rng = random.Random()

    def __repr__(self) -> str:
        return f"Transport(base_url={self.base_url!r}, api_key=<redacted>)"

    def close(self) -> None:
        if self._owns_session:
            self.session.close()

    def call(
        self,
        method: str,
        path: str,
        type_: type[T],
        *,
        body: Any = None,
        retry: Retry = Retry.IDEMPOTENT,
        bucket: Bucket = Bucket.GENERAL,
        params: dict[str, str] | None = None,
        deadline: float | None = None,
        abort: threading.Event | None = None,
    ) -> T:
        """Send the call; repeat it as `retry` allows, within the policy's attempts and the `deadline`.

        Returns the decoded `data`. Raises an APIError subclass for an error (or redirect) response, ConnectError
        when the endpoint never answered and cannot be reached, RequestNotSent or ResponseNotReceived when no
        response came back. With `abort`: once it is set, the call is not sent (nor sent again): Aborted, raised
        as soon as it is set while the call waits (for another launch, the rate limiter, or a retry's delay).
        """
        url = self.base_url + path
        payload = None if body is None else msgspec.json.encode(body)
        if bucket is Bucket.LAUNCH:
            self._lock_launching(method, url, abort)  # one launch at a time, its retries included (_take_tokens)
            try:
                return self._repeated(method, url, payload, params, type_, bucket, retry, deadline, abort)
            finally:
                self._launching.release()
        return self._repeated(method, url, payload, params, type_, bucket, retry, deadline, abort)

    def _lock_launching(self, method: str, url: str, abort: threading.Event | None) -> None:
        """Take `_launching`; Aborted as soon as `abort` is set while another launch holds it."""
        while not self._launching.acquire(timeout=ABORT_CHECK):
            if abort is not None and abort.is_set():
                raise errors.Aborted("not sent: aborted while another launch was under way", method=method,
                                     url=url)

    def _repeated(self, method: str, url: str, payload: bytes | None, params: dict[str, str] | None,
                  type_: type[T], bucket: Bucket, retry: Retry, deadline: float | None,
                  abort: threading.Event | None = None) -> T:
        """Send the call, repeating it as `retry` allows (see `call`)."""
        attempt = 1
        while True:
            try:
                return self._once(method, url, payload, params, type_, bucket, deadline, abort)
            except errors.Aborted:
                raise
            except errors.LambdaError as exc:
                delay = self._retry_delay(exc, retry, attempt, deadline)
                if delay is None:
                    raise
                log.debug("retrying %s %s in %.3fs after %s", method, url, delay, type(exc).__name__)
                if abort is None:
                    time.sleep(delay)
                elif abort.wait(delay):
                    raise errors.Aborted("not sent again: aborted before the retry", method=method,
                                         url=url) from exc
                attempt += 1

    def _retry_delay(self, exc: errors.LambdaError, retry: Retry, attempt: int,
                     deadline: float | None) -> float | None:
        """Seconds to wait before repeating after `exc`, or None when the call must not be repeated."""
        if attempt >= self.retry_policy.max_attempts or not _retryable(exc, retry):
            return None
        retry_after = exc.retry_after if isinstance(exc, errors.APIError) else None
        delay = self.retry_policy.delay(attempt, retry_after, self._rng)
        if deadline is not None and time.monotonic() + delay > deadline:
            return None
        return delay

    def _once(self, method: str, url: str, payload: bytes | None, params: dict[str, str] | None,
              type_: type[T], bucket: Bucket, deadline: float | None, abort: threading.Event | None = None) -> T:
        waited = self._take_tokens(bucket, abort)
        if waited is None:
            raise errors.Aborted("not sent: aborted while waiting for the rate limiter", method=method, url=url)
        started = time.monotonic()
        response = self._send(method, url, payload, params, self._timeout_for(deadline))
        elapsed_ms = (time.monotonic() - started) * 1000
        log.debug("%s %s -> %d (%.0f ms, waited %.3fs for the rate limiter)",
                  method, url, response.status_code, elapsed_ms, waited)
        if response.status_code >= 300:
            exc = _api_error(response, method, url)
            if isinstance(exc, errors.RateLimited) and bucket is Bucket.LAUNCH:
                self.limiter.launch.restart(exc.retry_after or 0.0)  # refused: this launch used no launch slot
            elif isinstance(exc, errors.RateLimited) and exc.retry_after:
                self._bucket(bucket).penalize(exc.retry_after)
            raise exc
        return _decode(response, type_, method, url)

    def _take_tokens(self, bucket: Bucket, abort: threading.Event | None = None) -> float | None:
        """Wait until the call may be sent; returns the seconds waited. A launch waits for its launch slot, then
        for a general slot, and is sent at once; the next launch is then spaced a full launch interval from this
        moment, not from the slot, so waiting for a general slot never brings two launches closer than the
        launch limit (Lambda would answer the second 429); a launch refused with 429 gives its slot back (the
        retry goes when Lambda's Retry-After says, not a whole interval later). Launches are sent one at a time
        (`call` holds `_launching`), so no other launch reserves a slot meanwhile. None: `abort` was set while
        waiting, and the call must not be sent."""
        if abort is not None and abort.is_set():
            return None
        if bucket is not Bucket.LAUNCH:
            return self.limiter.general.acquire() if abort is None else self.limiter.general.acquire_unless(abort)
        if abort is None:
            waited = self.limiter.launch.acquire() + self.limiter.general.acquire()
        else:
            launch = self.limiter.launch.acquire_unless(abort)
            general = None if launch is None else self.limiter.general.acquire_unless(abort)
            if launch is None or general is None:
                return None
            waited = launch + general
        self.limiter.launch.restart(self.limiter.launch.interval)
        return waited

    def _bucket(self, bucket: Bucket) -> TokenBucket:
        return self.limiter.launch if bucket is Bucket.LAUNCH else self.limiter.general

    def _timeout_for(self, deadline: float | None) -> float | tuple[float, float]:
        """The configured timeout, shortened so that a call made near a deadline ends by it (at least 1 s)."""
        if deadline is None:
            return self.timeout
        left = max(deadline - time.monotonic(), 1.0)
        if isinstance(self.timeout, tuple):
            return (min(self.timeout[0], left), min(self.timeout[1], left))
        return min(self.timeout, left)

    def _send(self, method: str, url: str, payload: bytes | None, params: dict[str, str] | None,
              timeout: float | tuple[float, float]) -> requests.Response:
        headers = {"Authorization": self._auth, "Accept": "application/json"}
        if payload is not None:
            headers["Content-Type"] = "application/json"
        try:
            response = self.session.request(
                method, url, data=payload, params=params, headers=headers, timeout=timeout,
                allow_redirects=False, verify=self._reach.verify,
            )
        except requests.RequestException as exc:
            cause = self._reach.unreachable(exc, self.session)
            if cause is not None:
                message = self._reach.contact.message(cause)
                log.debug("%s %s: %s", method, url, message)
                raise errors.ConnectError(message, cause=cause, endpoint=self._reach.contact.endpoint,
                                          method=method, url=url) from exc
            raise _transport_error(exc, method, url) from exc
        self._reach.contact.answered()
        return response


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


def _retryable(exc: errors.LambdaError, retry: Retry) -> bool:
    """A 429 or an unsent request never took effect, so any call may repeat; the rest only when idempotent. A
    ConnectError is never repeated: the endpoint cannot be reached and never has been."""
    if isinstance(exc, errors.ConnectError):
        return False
    if isinstance(exc, (errors.RateLimited, errors.RequestNotSent)):
        return True
    return retry is Retry.IDEMPOTENT and isinstance(exc, (errors.ServerError, errors.ResponseNotReceived))


def _transport_error(exc: requests.RequestException, method: str, url: str) -> errors.TransportError:
    """RequestNotSent when no connection was made, else ResponseNotReceived (the outcome is unknown)."""
    kind = type(exc).__name__
    if _never_sent(exc):
        return errors.RequestNotSent(f"request not sent: {kind}", method=method, url=url)
    return errors.ResponseNotReceived(f"no response: {kind}", method=method, url=url)


def _never_sent(exc: requests.RequestException) -> bool:
    if isinstance(exc, (requests.exceptions.ConnectTimeout, requests.exceptions.InvalidURL,
                        requests.exceptions.MissingSchema, requests.exceptions.InvalidSchema)):
        return True
    if not isinstance(exc, requests.exceptions.ConnectionError):
        return False
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return isinstance(reason, (urllib3.exceptions.NewConnectionError, urllib3.exceptions.ConnectTimeoutError))


def _api_error(response: requests.Response, method: str, url: str) -> errors.APIError:
    """Build the typed error for an error response from its status and Lambda error code; a redirect (3xx) is
    an APIError naming where it points (redirects are never followed)."""
    if 300 <= response.status_code < 400:
        where = response.headers.get("location") or "no location"
        return errors.APIError(f"redirected to {where}; redirects are not followed: set the endpoint to the new URL",
                               status=response.status_code, method=method, url=url,
                               request_id=_request_id(response))
    try:
        body = msgspec.json.decode(response.content, type=ErrorEnvelope).error
        code, message, suggestion = body.code, body.message, body.suggestion or ""
    except msgspec.DecodeError:
        code, message, suggestion = "", response.text[:500] or response.reason or "", ""
    cls = errors.error_class(response.status_code, code)
    return cls(
        message,
        status=response.status_code,
        code=code,
        suggestion=suggestion,
        request_id=_request_id(response),
        method=method,
        url=url,
        retry_after=_retry_after(response),
    )


def _retry_after(response: requests.Response) -> float | None:
    """Seconds to wait: `retry-after-ms` (precise; sent by some APIs and by the mock), else `Retry-After`."""
    millis = parse_retry_after(response.headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    return parse_retry_after(response.headers.get("Retry-After"))


def _request_id(response: requests.Response) -> str:
    return next((response.headers[h] for h in _REQUEST_ID_HEADERS if h in response.headers), "")


@functools.lru_cache(maxsize=64)
def _decoder(type_: Any) -> msgspec.json.Decoder[Envelope[Any]]:
    return msgspec.json.Decoder(Envelope[type_])


def _decode(response: requests.Response, type_: type[T], method: str, url: str) -> T:
    # A class is hashable; mypy does not match class objects against the Hashable protocol.
    decoder: msgspec.json.Decoder[Envelope[T]] = _decoder(cast(Hashable, type_))
    try:
        return decoder.decode(response.content).data
    except msgspec.DecodeError as exc:
        raise errors.APIError(
            f"unexpected response body: {exc}", status=response.status_code, method=method, url=url,
            request_id=_request_id(response),
        ) from exc
