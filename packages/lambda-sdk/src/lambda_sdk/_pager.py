"""A lazy pager for list calls: the shared `cloud_sdk_core.Pager` (README "Operations, pagers, retries").

Lambda's list endpoints are not paginated today: each answers with one page and no next token. Every list
still returns a Pager, so that server-side paging can be added without changing callers (AIP-158).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import cloud_sdk_core
from cloud_sdk_core import Page as Page

from .errors import PaginationLoop

T = TypeVar("T")


class Pager(cloud_sdk_core.Pager[T]):
    """Iterate for items, or call `by_page()` for pages. Nothing is requested until iteration starts; each
    iteration starts again from the first page (a fresh request)."""

    def _loop_error(self, token: str) -> PaginationLoop:
        return PaginationLoop(f"page token {token!r} was returned twice")


def single_page(load: Callable[[], list[T]]) -> Pager[T]:
    """A pager over an endpoint that returns everything at once (all of Lambda's lists today)."""
    return Pager(lambda _token: Page(load()))
