"""List paging: `page_size` (0 = server default) and an opaque `page_token`; "" marks the last page.

The token is a cursor (the sort key of the last item returned), so items created or deleted between two pages
neither repeat nor shift the rest of the listing. Items must already be sorted by `key`.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from typing import TypeVar

import msgspec

from . import errors

T = TypeVar("T")
SortKey = tuple[float, str]

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000  # validation rule of the real list requests: page_size in [1..1000], 0 = default


def page(
    items: Sequence[T], key: Callable[[T], SortKey], page_size: int, page_token: str
) -> tuple[list[T], str]:
    """The page of `items` after `page_token`, and the token of the next page ("" when this is the last)."""
    size = _size(page_size)
    after = _decode(page_token)
    remaining = [item for item in items if after is None or key(item) > after]
    chosen = remaining[:size]
    more = len(remaining) > size
    return chosen, _encode(key(chosen[-1])) if more else ""


def _size(page_size: int) -> int:
    if page_size < 0 or page_size > MAX_PAGE_SIZE:
        raise errors.bad_request([("page_size", f"must be between 0 and {MAX_PAGE_SIZE}")])
    return page_size or DEFAULT_PAGE_SIZE


def _encode(cursor: SortKey) -> str:
    return base64.urlsafe_b64encode(msgspec.json.encode(list(cursor))).decode().rstrip("=")


def _decode(token: str) -> SortKey | None:
    if not token:
        return None
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        stamp, last = msgspec.json.decode(raw, type=tuple[float, str])
    except (ValueError, msgspec.DecodeError):
        raise errors.bad_request([("page_token", "invalid page token")]) from None
    return stamp, last
