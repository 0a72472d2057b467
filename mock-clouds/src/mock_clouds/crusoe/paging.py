"""Keyset paging of VM lists: `limit`, `next_token` / `prev_token`, `sort` (`created_at` or `name`).

Tokens are opaque base64url strings naming the sort and the key of the page's last (next) or first (prev)
item, so pages stay consistent while VMs come and go. The real API has no deterministic default order (its
support pages warn about duplicates without `sort=created_at`); the mock always orders by (created_at, id)
unless asked for `name` (name, created_at, id), so paging is stable either way. Without `limit` every match
is returned on one page (the real default page size is undocumented).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from ..core.models import VM
from .errors import bad_request

SortKey = tuple[Any, ...]


@dataclass(frozen=True)
class SortOrder:
    key: Callable[[VM], SortKey]
    key_type: Any  # the msgspec type a decoded token key must have


SORT_ORDERS: dict[str, SortOrder] = {
    "created_at": SortOrder(key=lambda vm: (vm.created_at, vm.id), key_type=tuple[float, str]),
    "name": SortOrder(key=lambda vm: (vm.name, vm.created_at, vm.id), key_type=tuple[str, float, str]),
}
DEFAULT_SORT = "created_at"


class _Token(msgspec.Struct):
    sort: str
    key: Any


@dataclass(frozen=True)
class Page:
    items: list[VM]
    next_token: str  # "" on the last page
    prev_token: str  # "" on the first page


def paginate(vms: list[VM], *, sort: str, limit: str, next_token: str, prev_token: str) -> Page:
    """One page of `vms`; raises ApiError(400) for an unknown sort, a bad limit or a bad token."""
    sort = sort or DEFAULT_SORT
    order = SORT_ORDERS.get(sort)
    if order is None:
        raise bad_request(f"invalid sort {sort!r}: use one of {', '.join(SORT_ORDERS)}")
    if next_token and prev_token:
        raise bad_request("next_token and prev_token are mutually exclusive")
    ordered = sorted(vms, key=order.key)
    keys = [order.key(vm) for vm in ordered]
    size = _limit(limit, len(ordered))
    if next_token:
        after = _decode(next_token, sort, order, "next_token")  # refused even when there is nothing to page
        start = sum(1 for k in keys if k <= after)
    elif prev_token:
        before = _decode(prev_token, sort, order, "prev_token")
        end = sum(1 for k in keys if k < before)
        start = max(0, end - size)
    else:
        start = 0
    window = ordered[start : start + size]
    if not window:
        return Page(items=[], next_token="", prev_token="")
    end = start + len(window)
    return Page(
        items=window,
        next_token=_encode(sort, keys[end - 1]) if end < len(ordered) else "",
        prev_token=_encode(sort, keys[start]) if start > 0 else "",
    )


def _limit(raw: str, total: int) -> int:
    if not raw:
        return max(total, 1)
    if not raw.isdigit() or int(raw) < 1:
        raise bad_request(f"invalid limit {raw!r}: must be a positive integer")
    return int(raw)


def _encode(sort: str, key: SortKey) -> str:
    return base64.urlsafe_b64encode(msgspec.json.encode(_Token(sort=sort, key=key))).rstrip(b"=").decode()


def _decode(token: str, sort: str, order: SortOrder, name: str) -> SortKey:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        decoded = msgspec.json.decode(raw, type=_Token)
        if decoded.sort != sort:
            raise ValueError("token was issued for another sort order")
        return tuple(msgspec.convert(decoded.key, order.key_type))
    except (binascii.Error, ValueError, msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise bad_request(f"invalid {name}") from exc
