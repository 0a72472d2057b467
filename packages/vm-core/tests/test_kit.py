"""The provider kit (vm_core.kit) on its own: error tables, typed settings, poll_until, Pending blocks, the
create-watch round, batch plumbing, hints, memos and account keys.

The adapters' tests (test_provider_*.py) prove the kit through the wire against the mock clouds; these pin the
contracts the adapters rely on, with fake SDK exceptions and an injected sleep (no wall-clock dependence)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import pytest
from vm_core.catalog import Catalog, ShapeEntry, default_catalog
from vm_core.cli.spelling import render
from vm_core.errors import (
    CapacityError,
    ConfigError,
    NotFound,
    RateLimited,
    Scope,
    Timeout,
    Transient,
    UsageError,
    VmError,
)
from vm_core.hints import Command, Hint
from vm_core.kit import (
    AccountKeys,
    Backoff,
    ErrorTable,
    Finished,
    GivenCatalog,
    Memo,
    Noted,
    OperationPending,
    PolledPending,
    ShapesFile,
    batch_call,
    chunks,
    destroy_many,
    follow,
    gave_up,
    id_check,
    key_fingerprint,
    offer,
    optional_text,
    parse_settings,
    poll_until,
    positive_number,
    rate_limited,
    read_many,
    rule,
    scaled,
    seconds,
    setting,
    settings_of,
    still_running,
    table,
    texts,
    translated,
)
from vm_core.kit.errors import capacity
from vm_core.kit.keys import key_name
from vm_core.model import Offer


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


def parse(values: dict[str, Any], environ: dict[str, str] | None = None) -> ToySettings:
    return parse_settings(ToySettings, values, title="Toy Cloud", provider="toy", environ=environ)


def test_the_declaration_is_derived_from_the_dataclass() -> None:
    declared = {s.key: s for s in settings_of(ToySettings)}
    assert list(declared) == ["token", "endpoint", "time_scale", "interval", "region"]
    assert (declared["token"].env, declared["token"].secret, declared["token"].required) == ("TOY_TOKEN", True, True)
    assert [k for k, s in declared.items() if s.required] == ["token", "region"]
    assert declared["interval"].help == "seconds between calls"


def test_values_are_parsed_defaults_fill_unset_ones_and_env_vars_back_the_profile(
        monkeypatch: pytest.MonkeyPatch) -> None:
    parsed = parse({"token": " t0k ", "region": "r1", "time_scale": "0.5", "endpoint": ""}, {"TOY_INTERVAL": "0"})
    assert (parsed.token, parsed.endpoint, parsed.time_scale, parsed.interval, parsed.region) == \
        ("t0k", None, 0.5, 0.0, "r1")
    given = {"TOY_TOKEN": "from-env"}
    assert parse({"region": "r1"}, given).token == "from-env"
    assert parse({"region": "r1", "token": "profile-wins"}, given).token == "profile-wins"
    assert "from-env" not in repr(parse({"region": "r1"}, given))  # a secret field is left out of repr
    monkeypatch.setenv("TOY_TOKEN", "from-the-process")  # only the environment given is read (the session's)
    with pytest.raises(ConfigError, match="'token' is missing"):
        parse({"region": "r1"})


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


# ------------------------------------------------------------------------------------------ batches
def test_destroy_many_answers_malformed_ids_and_sends_the_rest_in_batches() -> None:
    sent: list[list[str]] = []

    def check(instance_id: str) -> None:
        if not instance_id.startswith("vm-"):
            raise UsageError(f"bad id {instance_id}")

    def send(batch: list[str]) -> dict[str, Any]:
        sent.append(batch)
        return {i: Finished(i, None) for i in batch}

    answers = destroy_many(["vm-1", "x", "vm-2", "vm-1", "vm-3"], check=check, limit=2, send=send)
    assert sent == [["vm-1", "vm-2"], ["vm-3"]]  # each id once, in order, at most `limit` a call
    assert isinstance(answers["x"], UsageError) and list(answers) == ["x", "vm-1", "vm-2", "vm-3"]
    assert list(chunks([1, 2, 3, 4, 5], 2)) == [[1, 2], [3, 4], [5]] and list(chunks([], 3)) == []


def test_a_batch_call_follows_what_goes_on_and_answers_a_failure_per_id() -> None:
    followed = batch_call(["a", "b"], lambda: ["a"], lambda i: Finished(i, None), TABLE)
    assert followed["a"].done() and followed["b"].wait(0.0) is None  # type: ignore[union-attr]

    def fail() -> list[str]:
        raise SdkNotFound()

    failed = batch_call(["a", "b"], fail, lambda i: Finished(i, None), TABLE, Ctx(what="batch"))
    assert failed["a"] is failed["b"] and isinstance(failed["a"], NotFound) and "no batch" in str(failed["a"])
    with pytest.raises(SdkFull):  # a `passing` class is the caller's to handle
        batch_call(["a"], lambda: (_ for _ in ()).throw(SdkFull()), lambda i: Finished(i, None), TABLE,
                   passing=(SdkFull,))
    with pytest.raises(KeyError):  # not an SDK error: a bug, re-raised
        batch_call(["a"], lambda: {}["x"], lambda i: Finished(i, None), TABLE)


def test_a_batch_read_maps_gone_ids_to_none_and_leaves_unknown_ones_out() -> None:
    found = {"a": "native-a", "b": SdkGone(), "c": SdkFull()}
    assert read_many(found, lambda n: f"vm {n}", gone=(SdkNotFound,)) == {"a": "vm native-a", "b": None}


# ------------------------------------------------------------------------------------------ hints
def test_an_action_that_goes_on_is_a_timeout_hinting_how_to_follow_it() -> None:
    assert follow("toy", "vm-1") == Command.of("get", "vm-1", "--provider", "toy")
    assert follow("toy") == Command.of("list", "--provider", "toy")
    late = still_running("op 7 is slow", provider="toy", instance_id="vm-1", after=" (operation 7)")
    assert isinstance(late, Timeout) and late.provider == "toy" and late.suggestion is None  # the CLI spells it
    assert render(late.hint) == "follow it with `vm get vm-1 --provider toy` (operation 7)"  # type: ignore[arg-type]
    timeout = gave_up("the restart of vm-2", provider="toy", instance_id="vm-2")(2.5)
    assert timeout.message == "the restart of vm-2 has not finished after 2.5s; it continues in the cloud"
    assert timeout.hint == Hint.say("follow it with {}", Command.of("get", "vm-2", "--provider", "toy"))


# ------------------------------------------------------------------------------------------ small blocks
def test_scaled_multiplies_a_policys_intervals_and_keeps_the_rest() -> None:
    @dataclass(frozen=True)
    class Policy:
        initial: float = 1.0
        maximum: float = 8.0
        attempts: int = 5

    assert scaled(Policy(), 0.5) == Policy(0.5, 4.0, 5)


def test_a_noted_pending_explains_its_result_after_wait() -> None:
    noted = Noted(Finished("vm-1", "on-demand"), lambda result: f"came back {result}")
    assert (noted.id, noted.resource_id, noted.note, noted.done()) == ("vm-1", "vm-1", "", True)
    assert noted.wait(1.0) == "on-demand" and noted.note == "came back on-demand"

    def refuse(result: str) -> str:
        raise CapacityError("not what was asked for")

    with pytest.raises(CapacityError):
        Noted(Finished("vm-2", "x"), refuse).wait(1.0)


def test_an_offer_takes_its_rows_shape_and_the_given_catalog_wins_over_the_default() -> None:
    row = ShapeEntry("toy", "H100", "h100.8x", 8, price_per_hour=20.0)
    assert offer(row, "r1", 18.5, None, reservation_id="res-1") == Offer(
        "toy", "r1", "H100", 8, "h100.8x", 18.5, None, reservation_id="res-1")

    class Provider:
        _catalog = GivenCatalog()

        def __init__(self, given: Catalog | None) -> None:
            self._given_catalog = given

    mine = Catalog(default_catalog().gpus, (row,))
    assert Provider(mine)._catalog is mine and Provider(None)._catalog is default_catalog()


def test_an_id_check_refuses_an_id_its_pattern_does_not_match_whole() -> None:
    check = id_check(r"vm-[0-9]+", "{id!r} is not a toy id", provider="toy")
    assert check("vm-12") is None
    for bad in ("vm-12x", "xvm-1", ""):
        with pytest.raises(UsageError, match="is not a toy id"):
            check(bad)


def test_table_settings_parse_each_value_and_refuse_anything_else() -> None:
    projects = texts("a region -> project table")
    assert projects({"eu": "p-1"}) == {"eu": "p-1"}
    for bad in ("p-1", {"eu": ""}, {"eu": 3}):
        with pytest.raises(ValueError, match="a region -> project table"):
            projects(bad)
    assert texts("subnets", blank=True)({"eu": ""}) == {"eu": ""}
    sized = table("sizes", lambda key, raw: int(raw))
    assert sized({1: "2"}) == {"1": 2}


# ------------------------------------------------------------------------------------------ memo, keys
def test_a_memo_computes_once_per_key_until_its_ttl_runs_out() -> None:
    now = [0.0]
    calls: list[str] = []

    def compute(key: str) -> str:
        calls.append(key)
        if key == "bad":
            raise Transient("read failed")
        return key.upper()

    memo = Memo(compute, ttl=60.0, clock=lambda: now[0])
    assert (memo("a"), memo("a"), memo("b")) == ("A", "A", "B") and calls == ["a", "b"]
    now[0] = 59.0
    assert memo("a") == "A" and calls == ["a", "b"]
    now[0] = 60.0
    assert memo("a") == "A" and calls == ["a", "b", "a"]  # read again after the ttl
    for _ in range(2):  # a failed computation is not remembered
        with pytest.raises(Transient):
            memo("bad")
    assert calls.count("bad") == 2


def test_a_memo_computes_a_key_once_among_concurrent_callers() -> None:
    started, release = threading.Event(), threading.Event()
    calls: list[str] = []

    def slow(key: str) -> str:
        calls.append(key)
        started.set()
        release.wait(5)
        return key

    memo: Memo[str, str] = Memo(slow)
    first = threading.Thread(target=memo, args=("k",))
    first.start()
    started.wait(5)
    second = threading.Thread(target=memo, args=("k",))
    second.start()
    release.set()
    first.join(5)
    second.join(5)
    assert calls == ["k"]


def test_a_memo_says_what_it_remembers_and_can_compute_afresh_or_forget() -> None:
    now, calls = [0.0], []
    memo = Memo(lambda key: calls.append(key) or f"{key}{len(calls)}", ttl=10.0, clock=lambda: now[0])
    assert memo.remembered("a") is None and calls == []  # asking computes nothing
    assert memo("a") == "a1" and memo.remembered("a") == ("a1",)
    assert memo.fresh("a") == "a2" and memo("a") == "a2"  # a fresh value replaces the remembered one
    now[0] = 10.0
    assert memo.remembered("a") is None  # too old
    assert memo("a") == "a3"
    memo.forget("a")
    assert memo.remembered("a") is None and memo("a") == "a4" and calls == ["a"] * 4


class Account:
    """A toy cloud account holding SSH keys by name; `add` refuses a name that is taken."""

    def __init__(self, keys: dict[str, str]) -> None:
        self.keys = keys
        self.adds = 0

    def listed(self) -> list[tuple[str, str]]:
        return list(self.keys.items())

    def add(self, name: str, public_key: str) -> str:
        self.adds += 1
        if name in self.keys:
            raise UsageError(f"key name {name} is taken")
        self.keys[name] = public_key
        return name

    def keys_for(self, preferred: str | None = None, **kwargs: Any) -> AccountKeys:
        return AccountKeys(**{"listed": self.listed, "add": self.add, "preferred": preferred, "title": "Toy",
                              "provider": "toy", "add_at": "https://toy.example/keys", **kwargs})


def test_account_keys_find_add_once_and_never_fall_back_to_the_first_key() -> None:
    account = Account({"theirs": "ssh-ed25519 AAAA theirs ", "ci": "ssh-ed25519 CCCC ci"})
    keys = account.keys_for()
    assert account.keys_for("ci").name_for(None) == "ci"  # a key the setting names
    assert keys.name_for(" ssh-ed25519 CCCC me@elsewhere ") == "ci" and account.adds == 0  # comments do not count
    new = "ssh-ed25519 BBBB new"
    assert keys.name_for(new) == key_name(new) == keys.name_for(new) and account.adds == 1
    assert account.keys[key_name(new)] == new and key_name(new).startswith("vm-")
    assert key_name(new) == key_name("ssh-ed25519 BBBB another comment")  # named by its fingerprint


def test_account_keys_without_a_key_or_a_usable_name_are_refused() -> None:
    with pytest.raises(ConfigError, match="no SSH key named 'gone'; it has: laptop"):
        Account({"laptop": "ssh-ed25519 AAAA"}).keys_for("gone").name_for(None)
    calls = []
    account = Account({"theirs": "ssh-ed25519 AAAA theirs"})
    with pytest.raises(UsageError, match="no SSH public key") as err:  # the account's first key is someone's
        account.keys_for(listed=lambda: calls.append(1) or []).name_for(None)
    assert calls == [] and "ssh-keygen" in render(err.value.hint)  # refused before any call


def test_account_keys_find_a_key_another_process_added_first() -> None:
    racing = "ssh-ed25519 CCCC racing"
    account = Account({key_name(racing): "a key of another process"})
    answers = iter([[], [("theirs", racing)]])  # not there when first listed, there once the add is refused
    assert account.keys_for(listed=lambda: next(answers)).name_for(racing) == "theirs"
    with pytest.raises(UsageError, match="taken"):  # refused and still not there: the error stands
        account.keys_for().name_for(racing)


def test_an_api_keys_fingerprint_tells_keys_apart_without_showing_them() -> None:
    one, two = key_fingerprint("secret-one"), key_fingerprint("secret-two")
    assert one != two and one.startswith("key sha256:") and "secret" not in one and len(one) == len("key sha256:") + 16
