"""A lazy pager for list calls.

Lambda's list endpoints are not paginated today: each answers with one page and no next token. Every list
still returns a Pager, so that server-side paging can be added without changing callers (Azure `ItemPaged`,
AIP-158). The pager contract is the one shared by the three SDKs of this repository (README "Operations, pagers,
retries"; checked by tests/sdk_contract.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from .errors import PaginationLoop

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of results; `next_token` is "" on the last page and resumes the listing otherwise."""

    items: list[T]
    next_token: str = ""

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


FetchPage = Callable[[str | None], Page[T]]


@dataclass
class Pager(Generic[T]):
    """Iterate for items, or call `by_page()` for pages. Nothing is requested until iteration starts.

    Each iteration starts again from the first page (a fresh request).
    A token seen twice raises PaginationLoop.
    """

    fetch: FetchPage[T]

    def __iter__(self) -> Iterator[T]:
        for page in self.by_page():
            yield from page.items

    def by_page(self, continuation_token: str | None = None) -> Iterator[Page[T]]:
        """Yield pages from `continuation_token` (None = the first page) until a page has no next token."""
        seen: set[str] = set()
        token = continuation_token
        while True:
            page = self.fetch(token)
            yield page
            if not page.next_token:
                return
            if page.next_token in seen or page.next_token == continuation_token:
                raise PaginationLoop(f"page token {page.next_token!r} was returned twice")
            seen.add(page.next_token)
            token = page.next_token

    def to_list(self) -> list[T]:
        """Fetch every page and return all items."""
        return list(self)


def single_page(load: Callable[[], list[T]]) -> Pager[T]:
    """A pager over an endpoint that returns everything at once (all of Lambda's lists today)."""
    return Pager(lambda _token: Page(load()))
