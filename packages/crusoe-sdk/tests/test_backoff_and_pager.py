"""Backoff policies and the lazy pager (pure)."""

from __future__ import annotations

import random

import pytest
from crusoe_sdk import Page, Pager, PaginationLoop, PollPolicy, RetryPolicy


def test_jitter_stays_in_the_upper_half_of_the_capped_step() -> None:
    rng = random.Random(1)
    policy = RetryPolicy(initial=4.0, maximum=10.0)
    delays = [policy.delay(1, rng=rng) for _ in range(200)]
    assert all(2.0 <= d <= 4.0 for d in delays)
    assert len({round(d, 6) for d in delays}) > 100  # really random
    assert all(5.0 <= policy.delay(9, rng=rng) <= 10.0 for _ in range(50))


def test_retry_delays_grow_exponentially_up_to_the_cap() -> None:
    policy = RetryPolicy(initial=1.0, multiplier=2.0, maximum=8.0)
    rng = random.Random(2)
    ceilings = [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    for attempt, ceiling in enumerate(ceilings, start=1):
        assert ceiling / 2 <= policy.delay(attempt, rng=rng) <= ceiling


def test_retry_after_wins_over_a_shorter_backoff() -> None:
    assert RetryPolicy(initial=0.1).delay(1, retry_after=3.0) == 3.0
    assert PollPolicy(initial=0.1).delay(1, retry_after=2.5) == 2.5


def test_poll_intervals_grow_and_are_capped() -> None:
    policy = PollPolicy(initial=1.0, multiplier=1.5, maximum=3.0)
    rng = random.Random(3)
    assert 0.5 <= policy.delay(1, rng=rng) <= 1.0
    assert all(1.5 <= policy.delay(n, rng=rng) <= 3.0 for n in range(5, 30))


def pages_fetcher(pages: dict[str | None, Page[int]], calls: list[str | None]):
    def fetch(token: str | None) -> Page[int]:
        calls.append(token)
        return pages[token]

    return fetch


PAGES = {None: Page([1, 2], "t1"), "t1": Page([3, 4], "t2"), "t2": Page([5], "")}


def test_pager_is_lazy_and_fetches_page_by_page() -> None:
    calls: list[str | None] = []
    pager = Pager(pages_fetcher(PAGES, calls))
    assert calls == []  # nothing fetched before iteration
    iterator = iter(pager)
    assert [next(iterator), next(iterator)] == [1, 2]
    assert calls == [None]
    assert list(iterator) == [3, 4, 5]
    assert calls == [None, "t1", "t2"]


def test_by_page_and_continuation_token() -> None:
    pager = Pager(pages_fetcher(PAGES, []))
    assert [(p.items, p.next_token) for p in pager.by_page()] == [([1, 2], "t1"), ([3, 4], "t2"), ([5], "")]
    assert [p.items for p in pager.by_page(continuation_token="t1")] == [[3, 4], [5]]


def test_first_fetches_only_the_first_page() -> None:
    calls: list[str | None] = []
    assert Pager(pages_fetcher(PAGES, calls)).first() == 1
    assert calls == [None]
    assert Pager(lambda _t: Page([])).first() is None


@pytest.mark.parametrize(
    "pages",
    [
        {None: Page([1], "a"), "a": Page([2], "a")},  # the same token again
        {None: Page([1], "a"), "a": Page([2], "b"), "b": Page([3], "a")},  # a cycle
    ],
)
def test_a_repeated_token_raises_instead_of_looping(pages: dict[str | None, Page[int]]) -> None:
    with pytest.raises(PaginationLoop):
        list(Pager(pages_fetcher(pages, [])))
