"""A lazy pager over Nebius `List` calls (`page_size` / `page_token` / `next_page_token`).

The pager contract is the one shared by the three SDKs of this repository (README "Operations, pagers, retries";
checked by tests/sdk_contract.py): lazy, re-iterable, `by_page(continuation_token)`, `Page(items, next_token)`,
`PaginationLoop`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from .errors import PaginationLoop

T = TypeVar("T")

# Fetches one page: given a page token ("" for the first page), returns the items and the next token.
FetchPage = Callable[[str], tuple[list[T], str]]
# With a `decode`, fetches one page still encoded: given a page token, returns the page and the next token.
FetchRaw = Callable[[str], tuple[Any, str]]


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of results. `next_token` (the response's `next_page_token`) is "" on the last page and resumes
    the listing otherwise."""

    items: list[T] = field(default_factory=list)
    next_token: str = ""

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


class _Ahead:
    """One page fetch running in a daemon thread (so an abandoned listing never delays the exit)."""

    def __init__(self, fetch: FetchRaw, token: str) -> None:
        self._done = threading.Event()
        self._page: tuple[Any, str] | None = None
        self._error: BaseException | None = None
        threading.Thread(target=self._run, args=(fetch, token), daemon=True, name="nebius-sdk-page").start()

    def _run(self, fetch: FetchRaw, token: str) -> None:
        try:
            self._page = fetch(token)
        except BaseException as exc:  # noqa: BLE001 - raised to the iterating thread by result()
            self._error = exc
        finally:
            self._done.set()

    def result(self) -> tuple[Any, str]:
        self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._page is not None
        return self._page


class Pager(Generic[T]):
    """Iterating yields every item across pages; nothing is fetched before iteration starts.

    Each iteration starts a fresh listing. Only an empty `next_page_token` ends it; a token seen before raises
    `PaginationLoop` instead of looping forever. Errors of a page fetch propagate (after the SDK's retries).

    With `decode`, `fetch` returns each page still encoded and `decode` turns it into items: the next page is
    then requested (in a daemon thread) as soon as a page arrives, before it is decoded, so the server works on
    page k+1 while the client decodes page k. At most one page is fetched ahead of the one being read.
    """

    def __init__(self, fetch: FetchPage[T] | FetchRaw, decode: Callable[[Any], list[T]] | None = None) -> None:
        self._fetch = fetch
        self._decode = decode

    def __iter__(self) -> Iterator[T]:
        for page in self.by_page():
            yield from page.items

    def to_list(self) -> list[T]:
        """Fetch every page and return all items."""
        return list(self)

    def by_page(self, continuation_token: str | None = None) -> Iterator[Page[T]]:
        """Yield whole pages, starting at `continuation_token` (a `next_token` of an earlier page; None or ""
        for the first page)."""
        token = continuation_token or ""
        seen = {token} if token else set()
        raw, next_token = self._fetch(token)
        while True:
            ahead = (_Ahead(self._fetch, next_token)
                     if self._decode is not None and next_token and next_token not in seen else None)
            yield Page(self._decode(raw) if self._decode is not None else raw, next_token)
            if not next_token:
                return
            if next_token in seen:
                raise PaginationLoop(next_token)
            seen.add(next_token)
            raw, next_token = ahead.result() if ahead is not None else self._fetch(next_token)
