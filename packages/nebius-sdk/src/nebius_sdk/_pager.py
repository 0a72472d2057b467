"""A lazy pager over Nebius `List` calls (`page_size` / `page_token` / `next_page_token`).

It is the shared `cloud_sdk_core.Pager` (README "Operations, pagers, retries"; checked by tests/sdk_contract.py):
lazy, re-iterable, `by_page(continuation_token)`, `Page(items, next_token)`, `PaginationLoop`, and the optional
one-page look-ahead (`decode`) that lets the server work on page k+1 while the client decodes page k.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import cloud_sdk_core
from cloud_sdk_core import Page as Page

from .errors import PaginationLoop

T = TypeVar("T")

# Fetches one page: given a page token ("" for the first page), returns the items and the next token; with a
# `decode`, the items still encoded.
FetchPage = Callable[[str], tuple[Any, str]]


class Pager(cloud_sdk_core.Pager[T]):
    """Iterating yields every item across pages; nothing is fetched before iteration starts. Each iteration
    starts a fresh listing; a token seen before raises `PaginationLoop`."""

    def __init__(self, fetch: FetchPage, decode: Callable[[Any], list[T]] | None = None) -> None:
        super().__init__(lambda token: Page(*fetch(token or "")), decode)

    def _loop_error(self, token: str) -> PaginationLoop:
        return PaginationLoop(token)
