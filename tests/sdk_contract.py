"""The one contract of the three SDKs' long-running operations and pagers, written once and run by each SDK.

The SDKs stay standalone packages (none imports another, nor vm-core): they share the mechanism through the small,
stdlib-only package cloud-sdk-core, and this contract, checked against each SDK's own classes. Each SDK's test
suite subclasses the classes below in its `tests/test_sdk_contract.py` and provides the fixtures they name (the
repository's conftest.py puts this folder on sys.path). The contract is modelled on azure-core's
LROPoller/NoPolling/ItemPaged (research aesthetics.md) and documented in each SDK's README, section "Operations,
pagers, retries".

Long-running operation (`Operation[T]`; Lambda's `LaunchOperation`, whose T is the instance):
- `id`, `resource_id`: known as soon as the call returned.
- `done() -> bool`: at most one request, none once known to be done.
- `status() -> str`: "running", "succeeded" or "failed", as last seen (no request).
- `wait(timeout=None) -> None`: blocks until done; raises the SDK's typed failure of a failed operation and its
  `OperationTimeout` at the deadline (None means the SDK's default deadline: a wait always has one). Stopping a
  wait never cancels the cloud operation.
- `result(timeout=None) -> T`: `wait`, then the resource.
- `continuation_token() -> str` and `client.resume_operation(token)`: the same operation, in any process.
- The already-finished object (`Operation.finished(...)`, e.g. what deleting a missing resource returns): `id` and
  `continuation_token()` are "", `done()` is True, status "succeeded", `wait`/`result` return at once without a
  request. `resume_operation("")` raises ValueError: there is nothing to resume.

Pager (`Pager[T]`, every list call): nothing is fetched before iteration; iterating yields the items across pages
and starts again from the first page each time; `by_page(continuation_token=None)` yields `Page`s with `items`
and `next_token` ("" on the last page), starting at an earlier page's `next_token`; `to_list()`; a page token
returned twice raises `PaginationLoop`.

Retry and poll policies: frozen dataclasses `RetryPolicy(max_attempts, initial, maximum, multiplier, jitter, ...)`
and `PollPolicy(initial, maximum, multiplier, jitter, timeout)`, passed to the client as `retry=` and `poll=`;
`delay(attempt, retry_after=None, rng=None)` is step `attempt` (1-based) `initial * multiplier**(attempt-1)` capped
at `maximum`, less a random `jitter` fraction of it, or a longer `retry_after`. What each SDK retries is written in
its RetryPolicy docstring.
"""

from __future__ import annotations

import dataclasses
import inspect
import random
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

WAIT = 120.0  # generous: the mock clouds finish their operations in well under a second
STATUSES = ("running", "succeeded", "failed")

# The pages every SDK's pager is built over: token asked for -> (items, next token). "" asks for the first page.
PAGES: dict[str, tuple[list[int], str]] = {"": ([1, 2], "t1"), "t1": ([3], "t2"), "t2": ([], "")}
LOOPING_PAGES: dict[str, tuple[list[int], str]] = {"": ([1], "a"), "a": ([2], "b"), "b": ([3], "a")}

# `make_pager(pages, calls)`: the SDK's Pager over `pages`, appending each token it is asked for to `calls`
# ("" for the first page, whatever the SDK sends on the wire for it).
MakePager = Callable[[dict[str, tuple[list[int], str]], list[str]], Any]


class OperationContract:
    """Fixtures to provide: `client` (against the SDK's mock cloud), `started` (an operation just begun that will
    succeed), `resource_id_of` (the id of a result value), `finished` (an already-finished operation and the value
    its result must be)."""

    def test_a_started_operation_names_itself_at_once(self, started: Any) -> None:
        assert started.id and started.resource_id
        assert isinstance(started.continuation_token(), str) and started.continuation_token()
        assert started.status() in STATUSES

    def test_wait_returns_none_and_then_the_operation_is_done(self, started: Any) -> None:
        assert started.wait(WAIT) is None
        assert started.done() is True and started.status() == "succeeded"

    def test_result_is_the_resource(self, started: Any, resource_id_of: Callable[[Any], str]) -> None:
        assert resource_id_of(started.result(WAIT)) == started.resource_id
        assert resource_id_of(started.result(0)) == started.resource_id  # done: no deadline needed

    def test_resume_from_the_continuation_token(self, client: Any, started: Any,
                                                resource_id_of: Callable[[Any], str]) -> None:
        resumed = client.resume_operation(started.continuation_token())
        assert (resumed.id, resumed.resource_id) == (started.id, started.resource_id)
        assert resource_id_of(resumed.result(WAIT)) == started.resource_id

    def test_an_empty_token_has_nothing_to_resume(self, client: Any) -> None:
        with pytest.raises(ValueError, match="nothing to resume"):
            client.resume_operation("")

    def test_the_already_finished_operation(self, finished: tuple[Any, Any]) -> None:
        # Its polling hook refuses to run, so any request here would fail the test.
        operation, value = finished
        assert operation.done() is True and operation.status() == "succeeded"
        assert operation.id == "" and operation.continuation_token() == "" and operation.resource_id
        assert operation.wait(0) is None
        assert operation.result(0) is value


class PagerContract:
    """Fixtures to provide: `sdk` (the SDK's package), `make_pager` (see MakePager)."""

    def test_the_names_are_public(self, sdk: ModuleType) -> None:
        for name in ("Pager", "Page", "PaginationLoop", "OperationTimeout"):
            assert name in sdk.__all__ and getattr(sdk, name)

    def test_nothing_is_fetched_before_iteration(self, make_pager: MakePager) -> None:
        calls: list[str] = []
        items = iter(make_pager(PAGES, calls))
        assert calls == []
        assert next(items) == 1 and calls == [""]

    def test_iteration_yields_every_item_and_starts_again_each_time(self, make_pager: MakePager) -> None:
        calls: list[str] = []
        pager = make_pager(PAGES, calls)
        assert list(pager) == [1, 2, 3] and pager.to_list() == [1, 2, 3]
        assert calls == ["", "t1", "t2"] * 2

    def test_by_page_yields_pages_with_their_next_token(self, make_pager: MakePager) -> None:
        pages = list(make_pager(PAGES, []).by_page())
        assert [(list(page.items), page.next_token) for page in pages] == [([1, 2], "t1"), ([3], "t2"), ([], "")]

    def test_by_page_resumes_from_a_continuation_token(self, make_pager: MakePager) -> None:
        calls: list[str] = []
        pager = make_pager(PAGES, calls)
        assert [list(page.items) for page in pager.by_page(continuation_token="t1")] == [[3], []]
        assert [list(page.items) for page in pager.by_page(None)] == [[1, 2], [3], []]
        assert calls == ["t1", "t2", "", "t1", "t2"]

    def test_a_repeated_token_raises_pagination_loop(self, sdk: ModuleType, make_pager: MakePager) -> None:
        calls: list[str] = []
        with pytest.raises(sdk.PaginationLoop):
            list(make_pager(LOOPING_PAGES, calls))
        assert calls == ["", "a", "b"]


class PolicyContract:
    """Fixtures to provide: `sdk` (the SDK's package), `client_class`."""

    def test_one_dataclass_shape(self, sdk: ModuleType) -> None:
        retry = {f.name for f in dataclasses.fields(sdk.RetryPolicy)}
        poll = {f.name for f in dataclasses.fields(sdk.PollPolicy)}
        assert {"max_attempts", "initial", "maximum", "multiplier", "jitter"} <= retry
        assert {"initial", "maximum", "multiplier", "jitter", "timeout"} <= poll
        with pytest.raises(dataclasses.FrozenInstanceError):
            sdk.RetryPolicy().initial = 0.0
        assert sdk.PollPolicy().timeout == 1800.0  # a wait's default deadline: 30 minutes in every SDK
        assert "what is retried" in (sdk.RetryPolicy.__doc__ or "").lower()

    def test_the_client_takes_both(self, client_class: type) -> None:
        parameters = inspect.signature(client_class).parameters
        assert {"retry", "poll"} <= set(parameters)

    def test_delays_grow_exponentially_up_to_the_maximum(self, sdk: ModuleType) -> None:
        for policy in (sdk.RetryPolicy(initial=1.0, maximum=8.0, multiplier=2.0, jitter=0.0),
                       sdk.PollPolicy(initial=1.0, maximum=8.0, multiplier=2.0, jitter=0.0)):
            assert [policy.delay(n) for n in range(1, 7)] == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]

    def test_jitter_takes_off_at_most_its_fraction(self, sdk: ModuleType) -> None:
        rng = random.Random(5)
        policy = sdk.RetryPolicy(initial=4.0, maximum=4.0, multiplier=2.0, jitter=0.5)
        delays = [policy.delay(3, rng=rng) for _ in range(200)]
        assert all(2.0 <= d <= 4.0 for d in delays) and len(set(delays)) > 100

    def test_a_longer_retry_after_wins(self, sdk: ModuleType) -> None:
        policy = sdk.PollPolicy(initial=0.1, maximum=1.0, jitter=0.0)
        assert policy.delay(1, retry_after=2.5) == 2.5 and policy.delay(1, retry_after=0.01) == 0.1

    def test_nonsense_is_refused(self, sdk: ModuleType) -> None:
        for bad in ({"initial": 2.0, "maximum": 1.0}, {"jitter": 1.5}, {"multiplier": 0.5}):
            with pytest.raises(ValueError):
                sdk.RetryPolicy(**bad)
