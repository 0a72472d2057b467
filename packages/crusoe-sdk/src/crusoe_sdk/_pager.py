"""A lazy pager over Crusoe's `limit`/`next_token` lists (and over unpaged lists, as one page).

Nothing is fetched until iteration starts; each page is fetched when the previous one is used up. An empty
`next_page_token` ends the collection; a token seen before raises PaginationLoop instead of looping forever.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from .errors import PaginationLoop

T = TypeVar("T")


class Page(Generic[T]):
    """One page: its items and the token of the next page ("" on the last page)."""

    __slots__ = ("items", "next_token")

    def __init__(self, items: list[T], next_token: str = "") -> None:
        self.items = items
        self.next_token = next_token

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __repr__(self) -> str:
        return f"Page({len(self.items)} items, next_token={self.next_token!r})"


FetchPage = Callable[[str | None], Page[T]]


class Pager(Generic[T]):
    """Iterate to get items; `by_page()` to get pages. Each iteration starts again from the first page."""

    def __init__(self, fetch: FetchPage[T], *, description: str = "list") -> None:
        self._fetch = fetch
        self._description = description

    def __iter__(self) -> Iterator[T]:
        for page in self.by_page():
            yield from page.items

    def __repr__(self) -> str:
        return f"Pager({self._description})"

    def by_page(self, continuation_token: str | None = None) -> Iterator[Page[T]]:
        """Yield pages, starting at `continuation_token` (a `next_token` of an earlier page) or the first.

        Raises PaginationLoop when the server repeats a token.
        """
        seen: set[str] = set()
        token = continuation_token
        while True:
            page = self._fetch(token)
            yield page
            if not page.next_token:
                return
            if page.next_token in seen or page.next_token == token:
                raise PaginationLoop(
                    f"{self._description}: page token {page.next_token!r} was returned twice"
                )
            seen.add(page.next_token)
            token = page.next_token

    def to_list(self) -> list[T]:
        """Fetch every page and return all items."""
        return list(self)

    def first(self) -> T | None:
        """The first item, fetching only as many pages as needed (None for an empty collection)."""
        return next(iter(self), None)
