"""The provider kit (vm_core.kit) on its own: error tables, typed settings, poll_until and Pending blocks.

The adapters' tests (test_provider_*.py) prove the kit through the wire against the mock clouds; these pin the
contracts the adapters rely on, with fake SDK exceptions and an injected sleep (no wall-clock dependence)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from vm_core.errors import CapacityError, ConfigError, NotFound, RateLimited, Scope, Timeout, Transient, VmError
from vm_core.kit import (
    Backoff,
    ErrorTable,
    Finished,
    OperationPending,
    PolledPending,
    ShapesFile,
    optional_text,
    parse_settings,
    poll_until,
    positive_number,
    rate_limited,
    rule,
    seconds,
    setting,
    settings_of,
    translated,
)
from vm_core.kit.errors import capacity


class SdkError(Exception):
    retry_after: float | None = None


class SdkNotFound(SdkError):
    message = "no such thing"


class SdkGone(SdkNotFound):
    pass


class SdkThrottled(SdkError):
    retry_after = 7.5


class SdkFull(SdkError):
    pass


@dataclass(frozen=True)
class Ctx:
    region: str | None = None
    what: str = "thing"


def _table() -> dict[type[BaseException], Any]:
    return {
        SdkError: rule(VmError, "cloud error: {exc}", provider="toy"),
        SdkNotFound: rule(NotFound, "no {ctx.what}: {exc.message}", provider="toy", suggestion="list them"),
        SdkThrottled: rate_limited("slow down", provider="toy"),
        SdkFull: capacity("full", provider="toy", scope=Scope.ZONE),
    }


TABLE = ErrorTable(_table, Ctx())


def test_the_most_specific_listed_class_wins_whatever_the_order() -> None:
    gone = TABLE.translate(SdkGone(), Ctx(what="disk"))
    assert type(gone) is NotFound and gone.message == "no disk: no such thing" and gone.suggestion == "list them"
    assert type(TABLE.translate(SdkError("boom"))) is VmError
    assert TABLE.translate(KeyError("not an SDK error")) is None


def test_shared_rules_carry_retry_after_and_the_context_region() -> None:
    throttled = TABLE.translate(SdkThrottled())
    assert isinstance(throttled, RateLimited) and throttled.retry_after == 7.5 and throttled.exit_code == 8
    full = TABLE.translate(SdkFull(), Ctx(region="us-east1-a"))
    assert isinstance(full, CapacityError) and (full.scope, full.region) == (Scope.ZONE, "us-east1-a")


def test_translated_chains_sdk_errors_and_lets_others_through() -> None:
    with pytest.raises(NotFound) as err, translated(TABLE, Ctx(what="vm")):
        raise SdkNotFound()
    assert isinstance(err.value.__cause__, SdkNotFound)
    with pytest.raises(Transient), TABLE.translated():  # a vm-core error raised inside passes unchanged
        raise Transient("already ours")
    with pytest.raises(KeyError), TABLE.translated():
        raise KeyError("a bug stays a bug")


def test_the_table_is_loaded_once_on_first_use() -> None:
    loads: list[int] = []

    def load() -> dict[type[BaseException], Any]:
        loads.append(1)
        return _table()

    table = ErrorTable(load, Ctx())
    assert loads == []
    table.translate(SdkError()), table.translate(SdkFull())
    assert loads == [1]


# ------------------------------------------------------------------------------------------------ settings
@dataclass(frozen=True, kw_only=True)
class ToySettings:
    token: str = setting(env="TOY_TOKEN", secret=True, help="API token", missing_hint="make one in the console")
    endpoint: str | None = setting(default=None, parse=optional_text, help="API URL")
    time_scale: float = setting(default=1.0, parse=positive_number, help="multiplies intervals")
    interval: float = setting(env="TOY_INTERVAL", default=2.0, parse=seconds, help="seconds between calls")
    region: str = setting(help="where VMs go")


def parse(values: dict[str, Any]) -> ToySettings:
    return parse_settings(ToySettings, values, title="Toy Cloud", provider="toy")


def test_the_declaration_is_derived_from_the_dataclass() -> None:
    declared = {s.key: s for s in settings_of(ToySettings)}
    assert list(declared) == ["token", "endpoint", "time_scale", "interval", "region"]
    assert (declared["token"].env, declared["token"].secret, declared["token"].required) == ("TOY_TOKEN", True, True)
    assert [k for k, s in declared.items() if s.required] == ["token", "region"]
    assert declared["interval"].help == "seconds between calls"


def test_values_are_parsed_defaults_fill_unset_ones_and_env_vars_back_the_profile(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOY_TOKEN", raising=False)
    monkeypatch.setenv("TOY_INTERVAL", "0")
    parsed = parse({"token": " t0k ", "region": "r1", "time_scale": "0.5", "endpoint": ""})
    assert (parsed.token, parsed.endpoint, parsed.time_scale, parsed.interval, parsed.region) == \
        ("t0k", None, 0.5, 0.0, "r1")
    monkeypatch.setenv("TOY_TOKEN", "from-env")
    assert parse({"region": "r1"}).token == "from-env"
    assert parse({"region": "r1", "token": "profile-wins"}).token == "profile-wins"
    assert "from-env" not in repr(parse({"region": "r1"}))  # a secret field is left out of repr


def test_a_missing_setting_names_its_key_and_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOY_TOKEN", raising=False)
    with pytest.raises(ConfigError, match="'token' is missing.*TOY_TOKEN") as err:
        parse({"region": "r1", "token": "   "})
    assert err.value.exit_code == 4 and err.value.suggestion == "make one in the console"
    with pytest.raises(ConfigError, match="'region' is missing: set it in the profile$"):
        parse({"token": "t"})


@pytest.mark.parametrize(("key", "value", "wanted"), [
    ("time_scale", "fast", "a positive number"), ("time_scale", 0, "a positive number"),
    ("time_scale", True, "a positive number"), ("interval", -1, "a number of seconds"),
    ("interval", "inf", "a number of seconds"),
])
def test_a_malformed_value_is_a_config_error_naming_the_key(key: str, value: Any, wanted: str) -> None:
    with pytest.raises(ConfigError, match=f"Toy Cloud setting '{key}'.* must be {wanted}") as err:
        parse({"token": "s3cret", "region": "r1", key: value})
    assert "s3cret" not in str(err.value.to_json())


def test_a_refused_secret_is_never_echoed() -> None:
    def refuse(raw: Any) -> str:
        raise ValueError("a token of 32 characters")

    @dataclass(frozen=True, kw_only=True)
    class Strict:
        token: str = setting(env="STRICT_TOKEN", secret=True, parse=refuse)

    with pytest.raises(ConfigError, match=r"'token' \(or STRICT_TOKEN\) must be a token of 32 characters$") as err:
        parse_settings(Strict, {"token": "hunter2-secret"}, title="Strict", provider="strict")
    assert "hunter2-secret" not in str(err.value.to_json())


# ------------------------------------------------------------------------------------------------- polling
class Clockless:
    """Records the sleeps asked for instead of sleeping."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.sleeps.append(seconds)


def test_poll_until_returns_the_result_and_backs_off_up_to_the_maximum() -> None:
    answers = iter([(False, None), (False, None), (False, None), (True, "ready")])
    sleep = Clockless()
    result = poll_until(lambda: next(answers), 3600.0, Backoff(1.0, 3.0), on_timeout=lambda: Timeout("late"),
                        sleep=sleep)
    assert result == "ready" and sleep.sleeps == [1.0, 2.0, 3.0]


def test_poll_until_checks_once_then_raises_at_the_deadline() -> None:
    calls: list[int] = []

    def check() -> tuple[bool, None]:
        calls.append(1)
        return False, None

    with pytest.raises(Timeout, match="late"):
        poll_until(check, 0.0, Backoff(1.0, 1.0), on_timeout=lambda: Timeout("late"), sleep=Clockless())
    assert calls == [1]


def test_poll_until_tolerates_only_the_named_failures() -> None:
    answers: list[Any] = [Transient("read failed"), (True, 42)]

    def check() -> tuple[bool, int]:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[no-any-return]

    assert poll_until(check, 3600.0, Backoff(0.5, 1.0), on_timeout=lambda: Timeout("late"), tolerate=(Transient,),
                      sleep=Clockless()) == 42
    with pytest.raises(NotFound):
        poll_until(lambda: (_ for _ in ()).throw(NotFound("gone")), 3600.0, Backoff(0.5, 1.0),
                   on_timeout=lambda: Timeout("late"), tolerate=(Transient,), sleep=Clockless())


# ------------------------------------------------------------------------------------------------ pendings
class ToyOperation:
    def __init__(self, outcome: Any) -> None:
        self.outcome = outcome

    def done(self) -> bool:
        return True

    def wait(self, timeout: float) -> Any:
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome


def pending(operation: ToyOperation, **kwargs: Any) -> OperationPending[str]:
    return OperationPending(operation, TABLE.translated, id="op-1", resource_id="vm-1", block=operation.wait,
                            finish=lambda answer: f"finished {answer}", **kwargs)


def test_an_operation_pending_translates_and_finishes() -> None:
    ok = pending(ToyOperation("vm-1"))
    assert (ok.id, ok.resource_id, ok.done(), ok.wait(1.0)) == ("op-1", "vm-1", True, "finished vm-1")
    with pytest.raises(CapacityError):
        pending(ToyOperation(SdkFull())).wait(1.0)


def test_a_failed_operation_goes_through_the_failure_hook_first() -> None:
    seen: list[VmError] = []

    def cleanup(error: VmError, deadline: float) -> VmError:
        seen.append(error)
        return VmError(f"{error.message}; it was removed")

    with pytest.raises(VmError, match="full; it was removed") as err:
        pending(ToyOperation(SdkFull()), failed=cleanup).wait(1.0)
    assert isinstance(seen[0], CapacityError) and err.value.__cause__ is seen[0]


def test_a_finished_pending_is_done_at_once() -> None:
    finished = Finished("vm-9", None)
    assert (finished.id, finished.resource_id, finished.done(), finished.wait(0.0)) == ("vm-9", "vm-9", True, None)


def test_a_polled_pending_follows_a_probe_and_tolerates_failed_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    answers: list[Any] = [Transient("read failed"), (False, None), (True, "running")]

    def probe() -> tuple[bool, str]:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[no-any-return]

    monkeypatch.setattr("time.sleep", Clockless())  # poll_until's default sleep, looked up when it polls
    polled = PolledPending("vm-3", probe, Backoff(0.5, 1.0), on_timeout=lambda t: Timeout(f"late after {t:g}s"),
                           tolerate=(Transient,))
    assert (polled.id, polled.resource_id, polled.finished()) == ("vm-3", "vm-3", False)  # the failed read
    assert polled.wait(3600.0) == "running"
    never = PolledPending("vm-4", lambda: (False, None), Backoff(0.5, 1.0), on_timeout=lambda t: Timeout(f"late {t:g}"))
    with pytest.raises(Timeout, match="late 0"):
        never.wait(0.0)


def test_shapes_are_the_providers_rows_of_its_file_read_once() -> None:
    class Plugin:
        shapes = ShapesFile("lambda", "vm_core.providers", "lambda_shapes.toml")

    first = Plugin().shapes
    assert first and {s.provider for s in first} == {"lambda"} and Plugin().shapes is first
