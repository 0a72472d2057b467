"""The shared lazy pager: laziness, pages, resuming, the loop guard and the one-page look-ahead."""

from __future__ import annotations

import threading

import pytest
from cloud_sdk_core import Page, Pager

PAGES = {None: Page([1, 2], "t1"), "t1": Page([3], "t2"), "t2": Page([], "")}


class Loop(Exception):
    """The own PaginationLoop of a pager subclass."""


class OwnLoop(Pager[int]):
    def _loop_error(self, token: str) -> Exception:
        return Loop(token)


def fetcher(pages: dict[str | None, Page[int]], calls: list[str | None]):
    def fetch(token: str | None) -> Page[int]:
        calls.append(token)
        return pages[token]

    return fetch


def test_nothing_is_fetched_before_iteration_and_each_iteration_starts_again() -> None:
    calls: list[str | None] = []
    pager = Pager(fetcher(PAGES, calls))
    assert calls == []
    assert list(pager) == [1, 2, 3] and pager.to_list() == [1, 2, 3]
    assert calls == [None, "t1", "t2"] * 2


def test_first_fetches_only_what_it_needs() -> None:
    calls: list[str | None] = []
    assert Pager(fetcher(PAGES, calls)).first() == 1 and calls == [None]
    assert Pager(lambda _token: Page([])).first() is None


def test_by_page_yields_pages_and_resumes_from_a_continuation_token() -> None:
    pager = Pager(fetcher(PAGES, []))
    assert [(page.items, page.next_token) for page in pager.by_page()] == [([1, 2], "t1"), ([3], "t2"), ([], "")]
    assert [len(page) for page in pager.by_page(continuation_token="t1")] == [1, 0]


@pytest.mark.parametrize(
    "pages",
    [
        {None: Page([1], "a"), "a": Page([2], "b"), "b": Page([3], "a")},  # a cycle
        {None: Page([1], "a"), "a": Page([2], "a")},  # a page pointing at itself
    ],
)
def test_a_token_returned_twice_raises_the_subclass_error(pages: dict[str | None, Page[int]]) -> None:
    calls: list[str | None] = []
    with pytest.raises(Loop, match="a"):
        list(OwnLoop(fetcher(pages, calls)))
    assert calls.count("a") == 1  # the repeated page is never fetched again


def test_a_continuation_token_that_comes_back_raises() -> None:
    with pytest.raises(RuntimeError, match="returned twice"):
        list(Pager(lambda _token: Page([1], "same")).by_page(continuation_token="same"))


def test_with_decode_the_next_page_is_asked_for_before_this_one_is_decoded() -> None:
    asked_next = threading.Event()
    seen_when_decoding: list[bool] = []

    def fetch(token: str | None) -> Page[str]:
        if token == "t1":
            asked_next.set()
            return Page(["3"], "")
        return Page(["1", "2"], "t1")

    def decode(encoded: list[str]) -> list[int]:
        seen_when_decoding.append(asked_next.wait(5))
        return [int(item) for item in encoded]

    assert list(Pager(fetch, decode=decode)) == [1, 2, 3]
    assert seen_when_decoding[0] is True  # page 2 was requested while page 1 was being decoded


def test_with_decode_a_failed_look_ahead_is_raised_where_its_page_is_read() -> None:
    def fetch(token: str | None) -> Page[str]:
        if token == "t1":
            raise ConnectionError("page 2 failed")
        return Page(["1"], "t1")

    pages = Pager(fetch, decode=lambda encoded: [int(item) for item in encoded]).by_page()
    assert next(pages).items == [1]
    with pytest.raises(ConnectionError, match="page 2 failed"):
        next(pages)


def test_with_decode_the_loop_guard_holds_and_a_repeated_page_is_not_fetched_ahead() -> None:
    calls: list[str | None] = []

    def fetch(token: str | None) -> Page[str]:
        calls.append(token)
        return {None: Page(["1"], "a"), "a": Page(["2"], "a")}[token]

    with pytest.raises(Loop):
        list(OwnLoop(fetch, decode=lambda encoded: [int(item) for item in encoded]))
    assert calls == [None, "a"]


def test_prefetched_asks_for_the_first_page_before_iteration_starts() -> None:
    asked, release = threading.Event(), threading.Event()
    calls: list[str | None] = []

    def fetch(token: str | None) -> Page[int]:
        calls.append(token)
        if token is None:
            asked.set()
            assert release.wait(10)
        return PAGES[token]

    pages = Pager(fetch).prefetched()
    assert asked.wait(10) and calls == [None]  # asked for while nobody iterates
    release.set()
    assert [page.items for page in pages] == [[1, 2], [3], []] and calls == [None, "t1", "t2"]


def test_prefetched_raises_the_first_page_error_where_it_is_read() -> None:
    def fetch(token: str | None) -> Page[int]:
        raise ConnectionError("down")

    pages = Pager(fetch).prefetched()
    with pytest.raises(ConnectionError, match="down"):
        next(pages)
