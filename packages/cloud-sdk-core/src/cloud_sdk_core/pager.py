"""A lazy pager (modelled on azure-core's ItemPaged): what every list call of the SDKs returns. Only an empty
`next_token` ends a listing; errors of a page fetch propagate (after the SDK's call retries)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page: its items and `next_token`, which resumes the listing ("" on the last page)."""

    items: list[T] = field(default_factory=list)
    next_token: str = ""

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


# Fetches one page: given an earlier page's `next_token`, or None for the first page.
FetchPage = Callable[[str | None], Page[Any]]


class Pager(Generic[T]):
    """Iterate for the items, `by_page()` for the pages. Nothing is fetched before iteration starts; each page is
    fetched when the previous one is used up, and each iteration starts a fresh listing. A token returned twice
    raises `_loop_error(token)` (each SDK its own PaginationLoop) instead of looping forever.

    With `decode`, `fetch` returns each page's items still encoded and `decode` turns them into items: the next
    page is then requested (in a daemon thread) as soon as a page arrives, before it is decoded, so the server
    works on page k+1 while the client decodes page k. At most one page is fetched ahead of the one being read.
    """

    def __init__(self, fetch: FetchPage, decode: Callable[[list[Any]], list[T]] | None = None) -> None:
        self._fetch = fetch
        self._decode = decode

    def __iter__(self) -> Iterator[T]:
        for page in self.by_page():
            yield from page.items

    def to_list(self) -> list[T]:
        """Fetch every page and return all items."""
        return list(self)

    def first(self) -> T | None:
        """The first item, fetching only as many pages as needed (None for an empty collection)."""
        return next(iter(self), None)

    def by_page(self, continuation_token: str | None = None) -> Iterator[Page[T]]:
        """Yield pages from `continuation_token` (an earlier page's `next_token`; None: the first page) until a page
        has no next token."""
        return self._pages(continuation_token, None)

    def prefetched(self) -> Iterator[Page[T]]:
        """`by_page()`, but the first page is asked for now (in a daemon thread), not when iteration starts: a
        caller that reads several listings one after the other overlaps their first round trips. Iterating waits
        for that page and raises its error."""
        return self._pages(None, _fetch_ahead(self._fetch, None))

    def _pages(self, continuation_token: str | None, first: Future[Page[Any]] | None) -> Iterator[Page[T]]:
        seen: set[str] = {continuation_token} if continuation_token else set()
        page = first.result() if first is not None else self._fetch(continuation_token)
        while True:
            token = page.next_token
            ahead = _fetch_ahead(self._fetch, token) if self._decode and token and token not in seen else None
            yield Page(self._decode(page.items), token) if self._decode else page
            if not token:
                return
            if token in seen:
                raise self._loop_error(token)
            seen.add(token)
            page = ahead.result() if ahead is not None else self._fetch(token)

    def _loop_error(self, token: str) -> Exception:
        """The error of a listing whose server returned `token` a second time."""
        return RuntimeError(f"page token {token!r} was returned twice")


def _fetch_ahead(fetch: FetchPage, token: str | None) -> Future[Page[Any]]:
    """The page of `token`, fetched in a daemon thread (an abandoned listing never delays the exit)."""
    future: Future[Page[Any]] = Future()

    def run() -> None:
        try:
            future.set_result(fetch(token))
        except BaseException as exc:  # noqa: BLE001 - raised by future.result() in the iterating thread
            future.set_exception(exc)

    threading.Thread(target=run, daemon=True, name="sdk-page-ahead").start()
    return future
