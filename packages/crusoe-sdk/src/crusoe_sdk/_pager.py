"""A lazy pager over Crusoe's `limit`/`next_token` lists (and over unpaged lists, as one page): the shared
`cloud_sdk_core.Pager` (README "Operations, pagers, retries"), raising Crusoe's PaginationLoop. An empty
`next_page_token` ends the collection; `fetch` gets None for the first page.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import cloud_sdk_core
from cloud_sdk_core import Page as Page

from .errors import PaginationLoop

T = TypeVar("T")


class Pager(cloud_sdk_core.Pager[T]):
    """Iterate to get items; `by_page()` to get pages; `first()`, `to_list()`. Each iteration starts again from
    the first page. `description` names the list in its repr and in a PaginationLoop."""

    def __init__(self, fetch: Callable[[str | None], Page[T]], *, description: str = "list") -> None:
        super().__init__(fetch)
        self._description = description

    def __repr__(self) -> str:
        return f"Pager({self._description})"

    def _loop_error(self, token: str) -> PaginationLoop:
        return PaginationLoop(f"{self._description}: page token {token!r} was returned twice")
