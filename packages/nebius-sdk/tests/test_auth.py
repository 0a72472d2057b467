"""Credentials over the wire: the service account's JWT and its exchange (against a scriptable TokenExchangeService),
the cache and its renewal at 90 % of a token's lifetime, one exchange for many threads, a refused token renewed and
the call sent once more, token files and token commands, and no secret in any message, repr or debug log."""

from __future__ import annotations

import base64
import json
import logging
import os
import sys
import threading
import time
from datetime import UTC
from pathlib import Path
from typing import Any

import grpc
import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from nebius_sdk import (
    AuthError,
    CredentialsError,
    NebiusClient,
    RetryPolicy,
    ServiceAccount,
    StaticToken,
    TokenCommand,
    TokenFile,
    TokenSource,
    Unreachable,
)
from nebius_sdk.auth import build_jwt

SA_ID = "serviceaccount-e00testaccount01"
KEY_ID = "publickey-e00testkey000001"
UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED
FAST = RetryPolicy(max_attempts=3, initial=0.005, maximum=0.02)


@pytest.fixture(scope="module")
def private_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def pem(private_key: rsa.RSAPrivateKey) -> str:
    return private_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class TokenService:
    """The fake's TokenExchangeService: issues access-<n> tokens living `expires_in` seconds, records each request,
    and can refuse (`refuse` set to a message) or answer slowly (`delay`)."""

    def __init__(self, pb: Any, expires_in: int = 3600) -> None:
        self.pb = pb
        self.expires_in = expires_in
        self.requests: list[Any] = []
        self.refuse: str | None = None
        self.delay = 0.0
        self._lock = threading.Lock()

    @property
    def issued(self) -> list[str]:
        return [f"access-{n}-secret" for n in range(1, len(self.requests) + 1)]

    def __call__(self, request: Any) -> Any:
        time.sleep(self.delay)
        if self.refuse is not None:
            raise self.pb.Abort(UNAUTHENTICATED, self.refuse)
        with self._lock:
            self.requests.append(request)
            token = f"access-{len(self.requests)}-secret"
        return self.pb.iam_.CreateTokenResponse(
            access_token=token, issued_token_type="urn:ietf:params:oauth:token-type:access_token",
            token_type="Bearer", expires_in=self.expires_in,
        )


@pytest.fixture
def tokens(fake: Any, pb: Any) -> TokenService:
    service = TokenService(pb)
    fake.on("TokenExchangeService/Exchange", service)
    return service


def accept(fake: Any, pb: Any, valid: Any) -> None:
    """Serve InstanceService/Get and Stop to callers whose bearer token `valid(token)` accepts."""

    def guarded(respond: Any) -> Any:
        def handler(request: Any) -> Any:
            token = fake.calls[-1].metadata.get("authorization", "").removeprefix("Bearer ")
            if not valid(token):
                raise pb.Abort(UNAUTHENTICATED, "the token is expired")
            return respond(request)

        return handler

    fake.on("InstanceService/Get", guarded(lambda r: pb.instance(r.id)))
    fake.on("InstanceService/Stop", guarded(lambda r: pb.operation(resource_id=r.id)))


def service_account(pem: str, fake: Any, **options: Any) -> ServiceAccount:
    return ServiceAccount(SA_ID, KEY_ID, pem, target=fake.target, retry=FAST, **options)


def client_of(source: TokenSource | str, fake: Any) -> NebiusClient:
    return NebiusClient(source, target=fake.target, parent_id="project-e00test", timeout=5.0, retry=FAST)


def _unb64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def authorizations(fake: Any, method: str) -> list[str]:
    return [c.metadata.get("authorization", "") for c in fake.calls_to(method)]


# ---------------------------------------------------------------------------------------------------- the JWT
def test_the_jwt_is_pysdks_byte_for_byte(private_key: rsa.RSAPrivateKey, monkeypatch: pytest.MonkeyPatch) -> None:
    pysdk = pytest.importorskip("nebius.base.service_account.service_account")
    from datetime import datetime

    frozen = datetime(2026, 5, 4, 3, 2, 1, 654321, tzinfo=UTC)

    class Frozen(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
            return frozen

    monkeypatch.setattr(pysdk, "datetime", Frozen)
    theirs = pysdk.ServiceAccount(private_key, KEY_ID, SA_ID).get_exchange_token_request()
    assert build_jwt(SA_ID, KEY_ID, private_key, frozen.timestamp()) == theirs.subject_token


def test_the_jwt_has_pysdks_claims_and_verifies_with_the_public_key(pem: str, fake: Any) -> None:
    jwt = service_account(pem, fake).jwt(now=1_800_000_000.75)
    header_b64, claims_b64, signature_b64 = jwt.split(".")
    assert json.loads(_unb64(header_b64)) == {"alg": "RS256", "kid": KEY_ID, "typ": "JWT"}
    assert json.loads(_unb64(claims_b64)) == {
        "iss": SA_ID, "sub": SA_ID, "aud": "token-service.iam.new.nebiuscloud.net",
        "exp": 1_800_000_060, "iat": 1_800_000_000,
    }
    public = serialization.load_pem_private_key(pem.encode(), None).public_key()
    assert isinstance(public, rsa.RSAPublicKey)
    public.verify(_unb64(signature_b64), f"{header_b64}.{claims_b64}".encode(), padding.PKCS1v15(), hashes.SHA256())


# ---------------------------------------------------------------------------------------------- the exchange
def test_the_exchange_request_and_the_token_it_gives_every_call(pem: str, fake: Any, pb: Any, tokens: Any) -> None:
    accept(fake, pb, lambda token: token == "access-1-secret")
    with client_of(service_account(pem, fake), fake) as client:
        client.get_instance("computeinstance-e00a")
        client.get_instance("computeinstance-e00b")
    [request] = tokens.requests
    assert request.grant_type == "urn:ietf:params:oauth:grant-type:token-exchange"
    assert request.requested_token_type == "urn:ietf:params:oauth:token-type:access_token"
    assert request.subject_token_type == "urn:ietf:params:oauth:token-type:jwt"
    claims = json.loads(_unb64(request.subject_token.split(".")[1]))
    assert claims["iss"] == claims["sub"] == SA_ID and claims["exp"] - claims["iat"] == 60
    assert authorizations(fake, "InstanceService/Get") == ["Bearer access-1-secret"] * 2
    assert authorizations(fake, "TokenExchangeService/Exchange") == [""]  # the exchange itself is anonymous


def test_the_token_is_renewed_when_90_percent_of_its_lifetime_passed(pem: str, fake: Any, tokens: Any) -> None:
    tokens.expires_in = 100
    clock = Clock()
    account = service_account(pem, fake, clock=clock)
    assert account.token() == "access-1-secret"
    clock.now += 89.9
    assert account.token() == "access-1-secret" and len(tokens.requests) == 1
    clock.now += 0.2  # 90.1 s of 100
    assert account.token() == "access-2-secret" and len(tokens.requests) == 2
    clock.now += 89.9
    assert account.token() == "access-2-secret"
    account.close()


def test_many_threads_wait_for_one_exchange(pem: str, fake: Any, tokens: Any) -> None:
    tokens.delay = 0.3
    account = service_account(pem, fake)
    start = threading.Barrier(16)
    got: list[str] = []

    def ask() -> None:
        start.wait()
        got.append(account.token())

    threads = [threading.Thread(target=ask) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert got == ["access-1-secret"] * 16
    assert len(tokens.requests) == 1
    account.close()


def test_a_refused_token_is_renewed_and_the_call_sent_once_more(pem: str, fake: Any, pb: Any, tokens: Any) -> None:
    accept(fake, pb, lambda token: token == tokens.issued[-1] and len(tokens.requests) > 1)  # access-1 is revoked
    with client_of(service_account(pem, fake), fake) as client:
        client.begin_stop_instance("computeinstance-e00a")
    stops = fake.calls_to("InstanceService/Stop")
    assert [c.metadata["authorization"] for c in stops] == ["Bearer access-1-secret", "Bearer access-2-secret"]
    assert stops[0].metadata["x-idempotency-key"] == stops[1].metadata["x-idempotency-key"]


def test_a_token_refused_again_after_renewal_is_an_auth_error(pem: str, fake: Any, pb: Any, tokens: Any) -> None:
    accept(fake, pb, lambda token: False)
    with client_of(service_account(pem, fake), fake) as client, pytest.raises(AuthError):
        client.get_instance("computeinstance-e00a")
    assert len(fake.calls_to("InstanceService/Get")) == 2 and len(tokens.requests) == 2


def test_a_refused_static_token_is_not_sent_again(fake: Any, pb: Any) -> None:
    accept(fake, pb, lambda token: False)
    with client_of(StaticToken("static-secret"), fake) as client, pytest.raises(AuthError) as info:
        client.get_instance("computeinstance-e00a")
    assert len(fake.calls) == 1 and "static-secret" not in str(info.value)


def test_a_refused_jwt_is_one_line_naming_the_account_never_the_jwt(pem: str, fake: Any, pb: Any) -> None:
    seen: list[str] = []

    def refuse(request: Any) -> Any:
        seen.append(request.subject_token)
        raise pb.Abort(UNAUTHENTICATED, f"bad signature on {request.subject_token}")  # a careless server

    fake.on("TokenExchangeService/Exchange", refuse)
    with client_of(service_account(pem, fake), fake) as client, pytest.raises(CredentialsError) as info:
        client.get_instance("computeinstance-e00a")
    error = info.value
    assert error.source == "service account" and error.code is not None and error.code.name == "UNAUTHENTICATED"
    assert SA_ID in str(error) and KEY_ID in str(error) and "\n" not in str(error)
    assert seen and seen[0] not in str(error) and "<hidden>" in str(error)
    assert len(seen) == 1 and not fake.calls_to("InstanceService/Get")  # not retried, the call never sent


def test_an_unreachable_token_service_fails_at_once(pem: str, fake: Any, pb: Any, closed_port: int) -> None:
    account = ServiceAccount(SA_ID, KEY_ID, pem, target=f"127.0.0.1:{closed_port}")  # default retry policy
    started = time.monotonic()
    with client_of(account, fake) as client, pytest.raises(Unreachable) as info:
        client.get_instance("computeinstance-e00a")
    assert time.monotonic() - started < 2.0  # retries with the default policy would take at least 2.8 s
    assert f"127.0.0.1:{closed_port}" in str(info.value) and info.value.cause.kind.name == "REFUSED"
    assert not fake.calls


def test_a_service_account_from_its_credentials_file(pem: str, fake: Any, tokens: Any, tmp_path: Path) -> None:
    file = tmp_path / "credentials.json"
    subject = {"alg": "RS256", "private-key": pem, "kid": KEY_ID, "iss": SA_ID, "sub": SA_ID}
    file.write_text(json.dumps({"subject-credentials": {"type": "JWT", **subject}}))
    account = ServiceAccount.from_credentials_file(file, target=fake.target)
    assert (account.service_account_id, account.public_key_id) == (SA_ID, KEY_ID)
    assert account.token() == "access-1-secret"
    key_file = tmp_path / "private.pem"
    key_file.write_text(pem)
    same = ServiceAccount.from_private_key_file(key_file, SA_ID, KEY_ID, target=fake.target)
    assert same.jwt(now=5.0) == account.jwt(now=5.0)
    account.close()


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"iss": "serviceaccount-e00other"}, "differs from sub"),
        ({"alg": "HS256"}, "is not RS256"),
        ({"type": "OAUTH"}, "is not JWT"),
        ({"kid": None}, "lacks kid"),
        ({"private-key": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"}, "not an unencrypted PEM"),
    ],
)
def test_malformed_credentials_files_are_named_never_quoted(
    pem: str, tmp_path: Path, change: dict[str, Any], said: str
) -> None:
    subject = {"alg": "RS256", "private-key": pem, "kid": KEY_ID, "iss": SA_ID, "sub": SA_ID, **change}
    file = tmp_path / "credentials.json"
    file.write_text(json.dumps({"subject-credentials": {k: v for k, v in subject.items() if v is not None}}))
    with pytest.raises(CredentialsError, match=said) as info:
        ServiceAccount.from_credentials_file(file)
    assert str(file) in str(info.value) and "PRIVATE KEY" not in str(info.value) and pem[40:80] not in str(info.value)


def test_missing_and_non_json_credentials_files(tmp_path: Path) -> None:
    with pytest.raises(CredentialsError, match="does not exist"):
        ServiceAccount.from_credentials_file(tmp_path / "nowhere.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(CredentialsError, match="is not JSON"):
        ServiceAccount.from_credentials_file(tmp_path / "bad.json")


# ---------------------------------------------------------------------------------------------- token files
def test_a_token_file_is_read_again_when_it_changes(fake: Any, pb: Any, tmp_path: Path) -> None:
    accept(fake, pb, lambda token: True)
    file = tmp_path / "token"
    file.write_text("file-token-one\n")
    with client_of(TokenFile(file), fake) as client:
        client.get_instance("computeinstance-e00a")
        client.get_instance("computeinstance-e00a")
        file.write_text("file-token-number-two\n")
        client.get_instance("computeinstance-e00a")
    assert authorizations(fake, "InstanceService/Get") == [
        "Bearer file-token-one", "Bearer file-token-one", "Bearer file-token-number-two",
    ]


def test_a_refused_file_token_makes_it_read_again(fake: Any, pb: Any, tmp_path: Path) -> None:
    accept(fake, pb, lambda token: token == "file-token-new")
    file = tmp_path / "token"
    file.write_text("file-token-old")
    source = TokenFile(file)
    assert source.token() == "file-token-old"
    stat = file.stat()
    file.write_text("file-token-new")  # the same size; the same times, so only a refusal tells
    os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert source.token() == "file-token-old"
    with client_of(source, fake) as client:
        client.get_instance("computeinstance-e00a")
    assert authorizations(fake, "InstanceService/Get") == ["Bearer file-token-old", "Bearer file-token-new"]


def test_a_file_token_refused_and_unchanged_is_not_sent_again(fake: Any, pb: Any, tmp_path: Path) -> None:
    accept(fake, pb, lambda token: False)
    (tmp_path / "token").write_text("file-token-old")
    with client_of(TokenFile(tmp_path / "token"), fake) as client, pytest.raises(AuthError):
        client.get_instance("computeinstance-e00a")
    assert len(fake.calls) == 1


def test_a_missing_or_empty_token_file_names_its_path(fake: Any, tmp_path: Path) -> None:
    with client_of(TokenFile(tmp_path / "token"), fake) as client, pytest.raises(CredentialsError) as info:
        client.get_instance("computeinstance-e00a")
    assert str(tmp_path / "token") in str(info.value) and "does not exist" in str(info.value)
    assert info.value.source == "token file" and not fake.calls
    (tmp_path / "token").write_text("  \n")
    with pytest.raises(CredentialsError, match="is empty"):
        TokenFile(tmp_path / "token").token()


# -------------------------------------------------------------------------------------------- token commands
def counting_command(tmp_path: Path, *, fail: bool = False, sleep: float = 0.0) -> list[str]:
    """A command printing cmd-token-<n>, n counting its runs (in tmp_path/runs)."""
    script = tmp_path / "token.py"
    script.write_text(
        "import pathlib, sys, time\n"
        f"time.sleep({sleep})\n"
        f"runs = pathlib.Path({str(tmp_path / 'runs')!r})\n"
        "n = int(runs.read_text()) + 1 if runs.exists() else 1\n"
        "runs.write_text(str(n))\n"
        "print(f'cmd-token-{n}-secret')\n"
        + ("print('nebius: profile default: federation login needed', file=sys.stderr)\nsys.exit(3)\n" if fail else "")
    )
    return [sys.executable, str(script)]


def test_a_token_command_runs_again_when_its_token_is_refused(fake: Any, pb: Any, tmp_path: Path) -> None:
    accept(fake, pb, lambda token: token == "cmd-token-2-secret")
    with client_of(TokenCommand(counting_command(tmp_path)), fake) as client:
        client.get_instance("computeinstance-e00a")
        client.get_instance("computeinstance-e00a")
    assert authorizations(fake, "InstanceService/Get") == [
        "Bearer cmd-token-1-secret", "Bearer cmd-token-2-secret", "Bearer cmd-token-2-secret",
    ]
    assert (tmp_path / "runs").read_text() == "2"


def test_a_token_command_runs_again_after_its_max_age(tmp_path: Path) -> None:
    clock = Clock()
    source = TokenCommand(counting_command(tmp_path), clock=clock)
    assert source.token() == "cmd-token-1-secret"
    clock.now += 11 * 3600 - 1
    assert source.token() == "cmd-token-1-secret"
    clock.now += 2
    assert source.token() == "cmd-token-2-secret"


def test_a_failing_token_command_says_its_status_and_stderr_not_its_output(tmp_path: Path) -> None:
    with pytest.raises(CredentialsError) as info:
        TokenCommand(counting_command(tmp_path, fail=True)).token()
    message = str(info.value)
    assert "exited with status 3" in message and "federation login needed" in message
    assert "cmd-token" not in message and info.value.source == "token command"


def test_a_token_command_has_a_time_limit(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(CredentialsError, match="did not finish within 0.5 s"):
        TokenCommand(counting_command(tmp_path, sleep=30), timeout=0.5).token()
    assert time.monotonic() - started < 10


def test_a_missing_token_command() -> None:
    with pytest.raises(CredentialsError, match="not found"):
        TokenCommand(["no-such-nebius-cli-here", "iam", "get-access-token"]).token()


# ------------------------------------------------------------------------------------------------- secrets
def test_no_secret_in_messages_reprs_or_debug_logs(
    pem: str, fake: Any, pb: Any, tokens: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    accept(fake, pb, lambda token: token == tokens.issued[-1] and len(tokens.requests) > 1)
    account = service_account(pem, fake)
    seen: list[str] = []
    with client_of(account, fake) as client:
        client.begin_stop_instance("computeinstance-e00a")  # refused once, renewed, sent again
        seen += [repr(client), repr(vars(client)), repr(account)]
    jwts = [r.subject_token for r in tokens.requests]
    tokens.refuse = "no"
    account.invalidate(account.token())
    with pytest.raises(CredentialsError) as info:
        account.token()
    file = tmp_path / "token"
    file.write_text("file-secret-token")
    command = TokenCommand(counting_command(tmp_path))
    seen += [str(info.value), repr(TokenFile(file)), repr(command), repr(StaticToken("static-secret-token"))]
    command.token()
    TokenFile(file).token()
    account.close()
    text = "\n".join(seen + [record.getMessage() for record in caplog.records])
    assert "exchanging a JWT" in text  # the debug log was captured
    secrets = [*tokens.issued, *jwts, "file-secret-token", "cmd-token-1-secret", "static-secret-token",
               *pem.splitlines()[1:-1]]
    assert [secret for secret in secrets if secret in text] == []
