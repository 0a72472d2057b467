"""Credentials: where the IAM access token of every call comes from.

A `TokenSource` gives the token the client sends as `authorization: Bearer <token>`. The client asks for it on
every call (a cached token costs a lock), and when the server answers UNAUTHENTICATED it calls `invalidate(token)`
and retries the call once if the source then gives a different token. Every source here is thread-safe and meant
to be shared by all the threads of a client; concurrent callers of a source that must renew wait for one renewal.

    StaticToken(token)                         a fixed token (NEBIUS_IAM_TOKEN); never renewed
    TokenFile(path)                            a file holding a token (pysdk's `token-file`), re-read when it changes
    TokenCommand(argv)                         a command printing a token (`nebius iam get-access-token`), run again
                                               when the token is refused or `max_age` old
    ServiceAccount(id, public_key_id, pem)     a service account: a JWT signed with its key, exchanged for an access
                                               token through `nebius.iam.v1.TokenExchangeService` and renewed when
                                               90 % of its lifetime has passed (as pysdk does)

Tokens, JWTs and private keys stay in memory: they are never written to disk, logged, shown in a repr or put in an
exception. A source that cannot give a token raises `CredentialsError`; the token service's network failures are
the transport's (`Unreachable`, `RequestNotSent`, `Unavailable`).

Importing this module is cheap: `cryptography` and grpc load when a service account first needs them.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ._backoff import RetryPolicy
from .endpoints import DEFAULT_DOMAIN, TOKENS, service_address
from .errors import APIError, CredentialsError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

    from ._transport import Transport

log = logging.getLogger("nebius_sdk")

TOKEN_ENV = "NEBIUS_IAM_TOKEN"

# The JWT of a service account, as pysdk builds it (base/service_account/service_account.py).
JWT_AUDIENCE = "token-service.iam.new.nebiuscloud.net"
JWT_LIFETIME = 60  # seconds
GRANT_TYPE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"  # noqa: S105 - a URN, not a password
JWT_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:jwt"  # noqa: S105 - a URN, not a password
RENEW_AFTER = 0.9  # of a token's `expires_in`, as pysdk's renewable bearer (lifetime_safe_fraction)

DEFAULT_MAX_AGE = 11 * 3600.0  # seconds a command's token is used: user access tokens last 12 hours
DEFAULT_COMMAND_TIMEOUT = 30.0  # seconds a token command may run
DEFAULT_EXCHANGE_TIMEOUT = 20.0  # seconds per attempt of a token exchange
DEFAULT_EXCHANGE_RETRY = RetryPolicy(max_attempts=3)

Clock = Callable[[], float]


@runtime_checkable
class TokenSource(Protocol):
    """Gives the IAM access token of a call. Implementations are thread-safe and shared by all threads."""

    def token(self) -> str:
        """The token to send now. May block to obtain or renew one (read a file, run a command, call the token
        service); raises `CredentialsError` when none can be had, or the transport's errors for the token
        service's network failures. Never returns an empty string."""
        ...

    def invalidate(self, token: str) -> None:
        """The server refused `token` (UNAUTHENTICATED): do not give it again if a fresh one can be had. A token
        that is no longer the current one is ignored (another thread renewed it already). Does no I/O itself but
        may wait for a renewal in progress to finish; never raises."""
        ...


class StaticToken:
    """A fixed token, e.g. `nebius iam get-access-token`'s output in NEBIUS_IAM_TOKEN. `invalidate` does nothing:
    a refused static token stays refused (the call raises `AuthError`)."""

    kind = "token"

    def __init__(self, token: str) -> None:
        if not token.strip():
            raise ValueError("an empty IAM token")
        self._token = token.strip()

    def __repr__(self) -> str:
        return "StaticToken(<hidden>)"

    def token(self) -> str:
        """The token given. Never blocks."""
        return self._token

    def invalidate(self, token: str) -> None:
        """Nothing to renew."""

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> StaticToken:
        """The token in NEBIUS_IAM_TOKEN. Raises ValueError when it is unset or empty."""
        value = (os.environ if environ is None else environ).get(TOKEN_ENV, "")
        if not value.strip():
            raise ValueError(f"no IAM token: pass one or set {TOKEN_ENV}")
        return cls(value)


class TokenFile:
    """A file holding an IAM access token (pysdk's profile key `token-file`), kept up to date by someone else.

    The file is read again when its modification time, size or inode changes (one `stat` a call), and after the
    server refused its token. A missing, unreadable or empty file raises `CredentialsError` naming the path.
    """

    kind = "token file"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        self._lock = threading.Lock()
        self._token = ""
        self._seen: tuple[int, int, int] | None = None  # (mtime_ns, size, inode) of the file `_token` came from

    def __repr__(self) -> str:
        return f"TokenFile({str(self.path)!r})"

    def token(self) -> str:
        """The file's token; blocks for a `stat` (and a read when the file changed)."""
        with self._lock:
            seen = self._stat()
            if self._token and seen == self._seen:
                return self._token
            self._token, self._seen = self._read(), seen
            log.debug("read the token file %s", self.path)
            return self._token

    def invalidate(self, token: str) -> None:
        """Read the file again next time (it may hold a newer token already)."""
        with self._lock:
            if token == self._token:
                self._seen = None

    def _stat(self) -> tuple[int, int, int]:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            raise CredentialsError(f"token file {self.path} does not exist", source=self.kind) from None
        except OSError as exc:
            raise CredentialsError(f"token file {self.path}: {exc.strerror}", source=self.kind) from None
        return stat.st_mtime_ns, stat.st_size, stat.st_ino

    def _read(self) -> str:
        try:
            text = self.path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise CredentialsError(f"token file {self.path} cannot be read: {reason}", source=self.kind) from None
        if not text:
            raise CredentialsError(f"token file {self.path} is empty", source=self.kind)
        return text


class TokenCommand:
    """A command whose standard output is an IAM access token, e.g. `("nebius", "iam", "get-access-token")`.

    It is run on first use, again after the server refused its token, and again when its token is `max_age`
    seconds old (default 11 hours: user access tokens last 12). It runs without a shell and without standard input,
    for at most `timeout` seconds. A failure raises `CredentialsError` naming the program with its exit status and
    the last line of its standard error, never its output. `clock` (monotonic seconds) is for tests.
    """

    kind = "token command"

    def __init__(
        self,
        argv: Sequence[str],
        *,
        max_age: float = DEFAULT_MAX_AGE,
        timeout: float = DEFAULT_COMMAND_TIMEOUT,
        clock: Clock = time.monotonic,
    ) -> None:
        if not argv or not argv[0]:
            raise ValueError("an empty token command")
        if max_age <= 0 or timeout <= 0:
            raise ValueError("max_age and timeout must be > 0")
        self.argv = tuple(argv)
        self.max_age = max_age
        self.timeout = timeout
        self._clock = clock
        self._lock = threading.Lock()
        self._token = ""
        self._expires = 0.0

    def __repr__(self) -> str:
        return f"TokenCommand({self.argv[0]!r}, max_age={self.max_age:g})"

    def token(self) -> str:
        """The last token the command printed, or a new one (blocks while the command runs)."""
        with self._lock:
            if self._token and self._clock() < self._expires:
                return self._token
            started = self._clock()
            self._token = self._run()
            self._expires = started + self.max_age
            return self._token

    def invalidate(self, token: str) -> None:
        """Run the command again next time."""
        with self._lock:
            if token == self._token:
                self._token = ""

    def _run(self) -> str:
        program = self.argv[0]
        log.debug("running the token command %s", program)
        try:
            done = subprocess.run(  # noqa: S603 - the user's own command, without a shell
                self.argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=self.timeout, check=False
            )
        except FileNotFoundError:
            raise CredentialsError(f"token command {program!r} not found", source=self.kind) from None
        except PermissionError:
            raise CredentialsError(f"token command {program!r} is not executable", source=self.kind) from None
        except subprocess.TimeoutExpired:
            raise CredentialsError(
                f"token command {program!r} did not finish within {self.timeout:g} s", source=self.kind
            ) from None
        output = done.stdout.decode("utf-8", "replace").strip()
        if done.returncode != 0:
            said = _last_line(done.stderr.decode("utf-8", "replace"), output)
            raise CredentialsError(
                f"token command {program!r} exited with status {done.returncode}" + (f": {said}" if said else ""),
                source=self.kind,
            )
        if not output:
            raise CredentialsError(f"token command {program!r} printed no token", source=self.kind)
        if len(output.split()) != 1:
            raise CredentialsError(f"token command {program!r} printed more than one word", source=self.kind)
        return output


def _last_line(stderr: str, secret: str) -> str:
    """The last non-blank line of a command's standard error, at most 300 characters, without `secret`."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    if secret:
        last = last.replace(secret, "<hidden>")
    return last[:300]


class ServiceAccount:
    """A service account's key pair: access tokens are obtained by exchanging a JWT signed with its private key
    (`nebius.iam.v1.TokenExchangeService/Exchange`), cached in memory, and renewed when 90 % of their `expires_in`
    has passed or after the server refused one. Renewal happens inside `token()`; concurrent callers wait for one
    exchange.

    `private_key_pem` is the unencrypted PEM of an RSA key (PKCS#8 or PKCS#1). The token service is
    `tokens.iam.<domain>` (`endpoints.service_address`), or `target`; `insecure`, `timeout` (per exchange attempt)
    and `retry` are as for `NebiusClient`. `clock` (monotonic seconds) is for tests. Raises `CredentialsError` for
    a key that is not one. Close it to release its channel (a later exchange opens a new one).
    """

    kind = "service account"

    def __init__(
        self,
        service_account_id: str,
        public_key_id: str,
        private_key_pem: str | bytes,
        *,
        domain: str = DEFAULT_DOMAIN,
        target: str | None = None,
        insecure: bool | None = None,
        timeout: float = DEFAULT_EXCHANGE_TIMEOUT,
        retry: RetryPolicy = DEFAULT_EXCHANGE_RETRY,
        clock: Clock = time.monotonic,
    ) -> None:
        if not service_account_id or not public_key_id:
            raise CredentialsError("a service account needs its id and its public key id", source=self.kind)
        self.service_account_id = service_account_id
        self.public_key_id = public_key_id
        self.target = target or service_address(TOKENS, domain)
        self._key = _private_key(private_key_pem, f"service account {service_account_id}")
        self._insecure = insecure
        self._timeout = timeout
        self._retry = retry
        self._clock = clock
        self._lock = threading.Lock()
        self._transport: Transport | None = None
        self._token = ""
        self._renew_at: float | None = None  # monotonic time; None: keep until refused

    def __repr__(self) -> str:
        return (
            f"ServiceAccount(service_account_id={self.service_account_id!r}, "
            f"public_key_id={self.public_key_id!r}, target={self.target!r})"
        )

    @classmethod
    def from_credentials_file(cls, path: str | os.PathLike[str], **options: Any) -> ServiceAccount:
        """The service account of a credentials file as the nebius CLI writes it and pysdk reads it
        (`{"subject-credentials": {"type": "JWT", "alg": "RS256", "private-key": PEM, "kid": public key id,
        "iss": service account id, "sub": the same id}}`); `options` as for the constructor. Raises
        `CredentialsError` naming the file for one that is missing or malformed (never quoting the key)."""
        file = Path(path).expanduser()
        subject = _subject_credentials(file)
        try:
            return cls(subject["sub"], subject["kid"], subject["private-key"], **options)
        except CredentialsError as exc:
            raise CredentialsError(f"{file}: {exc.message}", source=cls.kind) from None

    @classmethod
    def from_private_key_file(
        cls, path: str | os.PathLike[str], service_account_id: str, public_key_id: str, **options: Any
    ) -> ServiceAccount:
        """The service account whose private key is the PEM file `path` (pysdk's `private-key-file-path` with
        `service-account-id` and `public-key-id`). Raises `CredentialsError` naming the file."""
        file = Path(path).expanduser()
        try:
            pem = file.read_bytes()
        except OSError as exc:
            raise CredentialsError(f"private key file {file}: {exc.strerror}", source=cls.kind) from None
        try:
            return cls(service_account_id, public_key_id, pem, **options)
        except CredentialsError as exc:
            raise CredentialsError(f"{file}: {exc.message}", source=cls.kind) from None

    def jwt(self, now: float | None = None) -> str:
        """A fresh signed JWT of this service account (RS256; `now`: seconds since the epoch, default the time)."""
        return build_jwt(self.service_account_id, self.public_key_id, self._key, time.time() if now is None else now)

    def token(self) -> str:
        """The cached access token, or a new one from the token service (blocks for the exchange). Raises
        `CredentialsError` when the token service refuses the JWT, and the transport's errors (`Unreachable`,
        `Unavailable`, ...) when it cannot be reached."""
        with self._lock:
            if self._token and (self._renew_at is None or self._clock() < self._renew_at):
                return self._token
            self._token, self._renew_at = self._exchange()
            return self._token

    def invalidate(self, token: str) -> None:
        """Exchange a new JWT next time."""
        with self._lock:
            if token == self._token:
                self._token = ""

    def close(self) -> None:
        """Close the channel to the token service (the cached token stays usable)."""
        with self._lock:
            if self._transport is not None:
                self._transport.close()
                self._transport = None

    def _exchange(self) -> tuple[str, float | None]:
        """A new access token and when to renew it; the caller holds the lock."""
        from ._pb.nebius.iam.v1 import ExchangeTokenRequest, TokenExchangeServiceStub
        from ._transport import is_transient

        transport = self._open()
        subject = self.jwt()
        request = ExchangeTokenRequest(
            grant_type=GRANT_TYPE,
            requested_token_type=ACCESS_TOKEN_TYPE,
            subject_token=subject,
            subject_token_type=JWT_TOKEN_TYPE,
        )
        log.debug("exchanging a JWT of service account %s for an access token at %s", self.service_account_id,
                  self.target)
        started = self._clock()
        try:
            response = transport.call(TokenExchangeServiceStub(transport.channel).exchange, request)
        except APIError as exc:
            if is_transient(exc):
                raise
            refused = exc.message.replace(subject, "<hidden>")
            raise CredentialsError(
                f"the token service {self.target} refused the JWT of service account {self.service_account_id} "
                f"(public key {self.public_key_id}): {exc.code.name}" + (f": {refused}" if refused else ""),
                source=self.kind,
                code=exc.code,
            ) from None
        if response.token_type != "Bearer" or not response.access_token:  # noqa: S105 - a token type, not a secret
            raise CredentialsError(
                f"the token service {self.target} answered without a Bearer access token "
                f"(token type {response.token_type!r})",
                source=self.kind,
            )
        lifetime = response.expires_in
        log.debug("received an access token for service account %s, expires in %d s", self.service_account_id,
                  lifetime)
        return response.access_token, (started + RENEW_AFTER * lifetime if lifetime > 0 else None)

    def _open(self) -> Transport:
        if self._transport is None:
            from ._transport import Transport

            self._transport = Transport(
                credentials=None,
                target=self.target,
                channel=None,
                timeout=self._timeout,
                retry=self._retry,
                insecure=self._insecure,
            )
        return self._transport


def build_jwt(service_account_id: str, public_key_id: str, private_key: RSAPrivateKey, now: float) -> str:
    """The JWT pysdk sends for a service account, byte for byte (PyJWT's encoding): header
    `{"alg":"RS256","kid":<public key id>,"typ":"JWT"}`, claims `iss` = `sub` = the service account id, `aud`
    token-service.iam.new.nebiuscloud.net, `exp` one minute after `iat` (`now`, whole seconds), signed RS256."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    issued = int(now)
    header = {"alg": "RS256", "kid": public_key_id, "typ": "JWT"}
    claims = {
        "iss": service_account_id,
        "sub": service_account_id,
        "aud": JWT_AUDIENCE,
        "exp": issued + JWT_LIFETIME,
        "iat": issued,
    }
    signing_input = f"{_b64url(_json(header))}.{_b64url(_json(claims))}"
    signature = private_key.sign(signing_input.encode("ascii"), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input}.{_b64url(signature)}"


def _json(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _private_key(pem: str | bytes, whose: str) -> RSAPrivateKey:
    """The RSA private key of an unencrypted PEM; `CredentialsError` (saying nothing of the key) otherwise."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    data = pem.encode("utf-8") if isinstance(pem, str) else pem
    try:
        key = load_pem_private_key(data, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        key = None
    if not isinstance(key, RSAPrivateKey):
        raise CredentialsError(
            f"the private key of {whose} is not an unencrypted PEM RSA private key", source=ServiceAccount.kind
        )
    return key


def _subject_credentials(file: Path) -> dict[str, str]:
    """The validated `subject-credentials` of a service account credentials file (pysdk's checks)."""
    kind = ServiceAccount.kind
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CredentialsError(f"service account credentials file {file} does not exist", source=kind) from None
    except OSError as exc:
        raise CredentialsError(f"service account credentials file {file}: {exc.strerror}", source=kind) from None
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise CredentialsError(f"service account credentials file {file} is not JSON", source=kind) from None
    subject = data.get("subject-credentials") if isinstance(data, dict) else None
    if not isinstance(subject, dict):
        raise CredentialsError(f"{file} has no \"subject-credentials\" object", source=kind)
    missing = [key for key in ("alg", "private-key", "kid", "iss", "sub") if not isinstance(subject.get(key), str)]
    if missing:
        raise CredentialsError(f"{file}: subject-credentials lacks {', '.join(missing)}", source=kind)
    if subject.get("type", "") not in ("", "JWT"):
        raise CredentialsError(f"{file}: credentials type {subject['type']!r} is not JWT", source=kind)
    if subject["alg"] != "RS256":
        raise CredentialsError(f"{file}: algorithm {subject['alg']!r} is not RS256", source=kind)
    if subject["iss"] != subject["sub"]:
        raise CredentialsError(f"{file}: iss {subject['iss']!r} differs from sub {subject['sub']!r}", source=kind)
    return subject
