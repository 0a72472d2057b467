"""A lazy pager over Nebius `List` calls (`page_size` / `page_token` / `next_page_token`): the shared
`cloud_sdk_core.Pager` (README "Operations, pagers, retries"), raising Nebius's `PaginationLoop`, with its
optional one-page look-ahead (`decode`): the server works on page k+1 while the client decodes page k.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import cloud_sdk_core
from cloud_sdk_core import Page as Page

from .errors import PaginationLoop

T = TypeVar("T")

# Fetches one page: given a page token ("" for the first page), returns the items (still encoded when the pager
# has a `decode`) and the next token.
FetchPage = Callable[[str], tuple[Any, str]]


class Pager(cloud_sdk_core.Pager[T]):
    """Iterating yields every item across pages; nothing is fetched before iteration starts, and each iteration
    starts a fresh listing."""

    def __init__(self, fetch: FetchPage, decode: Callable[[Any], list[T]] | None = None) -> None:
        super().__init__(lambda token: Page(*fetch(token or "")), decode)

    def _loop_error(self, token: str) -> PaginationLoop:
        return PaginationLoop(token)
