"""The lazy pager: items, pages, laziness and the loop guard."""

from __future__ import annotations

import pytest
from lambda_sdk import PaginationLoop
from lambda_sdk._pager import Page, Pager, single_page


def _pages(book: dict[str | None, Page[int]], calls: list[str | None]):
    def fetch(token: str | None) -> Page[int]:
        calls.append(token)
        return book[token]

    return fetch


def test_iterates_items_across_pages_lazily() -> None:
    calls: list[str | None] = []
    pager = Pager(_pages({None: Page([1, 2], "a"), "a": Page([3], "b"), "b": Page([4])}, calls))
    assert calls == []  # nothing fetched before iteration
    it = iter(pager)
    assert next(it) == 1 and calls == [None]
    assert list(it) == [2, 3, 4]
    assert calls == [None, "a", "b"]


def test_by_page_yields_pages_and_resumes_from_a_token() -> None:
    calls: list[str | None] = []
    pager = Pager(_pages({None: Page([1], "a"), "a": Page([2], "b"), "b": Page([3], "")}, calls))
    assert [p.items for p in pager.by_page()] == [[1], [2], [3]]
    assert [p.items for p in pager.by_page(continuation_token="b")] == [[3]]


def test_a_repeated_token_raises_instead_of_looping_forever() -> None:
    calls: list[str | None] = []
    pager = Pager(_pages({None: Page([1], "a"), "a": Page([2], "b"), "b": Page([3], "a")}, calls))
    with pytest.raises(PaginationLoop):
        list(pager)
    assert calls == [None, "a", "b"]


def test_a_page_pointing_at_itself_raises() -> None:
    pager = Pager(lambda token: Page([1], "same"))
    with pytest.raises(PaginationLoop):
        list(pager.by_page(continuation_token="same"))


def test_single_page_fetches_once_per_iteration() -> None:
    loads: list[int] = []

    def load() -> list[str]:
        loads.append(1)
        return ["x", "y"]

    pager = single_page(load)
    assert pager.to_list() == ["x", "y"]
    assert [len(p) for p in pager.by_page()] == [2]
    assert len(loads) == 2
