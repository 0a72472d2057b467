"""A lazy pager over Nebius `List` calls (`page_size` / `page_token` / `next_page_token`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from .errors import PaginationLoop

T = TypeVar("T")

# Fetches one page: given a page token ("" for the first page), returns the items and the next token.
FetchPage = Callable[[str], tuple[list[T], str]]


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of results. `next_page_token` is "" on the last page and resumes the listing otherwise."""

    items: list[T] = field(default_factory=list)
    next_page_token: str = ""

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


class Pager(Generic[T]):
    """Iterating yields every item across pages; nothing is fetched before iteration starts.

    Each iteration starts a fresh listing. Only an empty `next_page_token` ends it; a token seen before raises
    `PaginationLoop` instead of looping forever. Errors of a page fetch propagate (after the SDK's retries).
    """

    def __init__(self, fetch: FetchPage[T]) -> None:
        self._fetch = fetch

    def __iter__(self) -> Iterator[T]:
        for page in self.by_page():
            yield from page.items

    def by_page(self, continuation_token: str = "") -> Iterator[Page[T]]:
        """Yield whole pages, starting at `continuation_token` (a `next_page_token` from an earlier page)."""
        token = continuation_token
        seen = {token} if token else set()
        while True:
            items, next_token = self._fetch(token)
            yield Page(items, next_token)
            if not next_token:
                return
            if next_token in seen:
                raise PaginationLoop(next_token)
            seen.add(next_token)
            token = next_token
