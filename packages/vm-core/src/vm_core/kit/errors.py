"""One translator of SDK exceptions into vm_core.errors, driven by a per-provider table.

A provider declares an `ErrorTable`: SDK exception type -> factory `(exc, context) -> VmError`. The most specific
class of an exception wins (its MRO is walked), never its message text. The table is built on first use by a
loader, so an adapter module can declare it without importing its SDK. The factories most clouds need are here
(`rule`, `capacity`, `rate_limited`); what only one cloud says stays a function in its adapter.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from ..errors import CapacityError, RateLimited, Scope, VmError

C = TypeVar("C")
Factory = Callable[[Any, C], VmError]
Text = str | Callable[[Any, C], str]


class ErrorTable(Generic[C]):
    """SDK exception type -> vm-core error factory for one provider. `default` is the context of calls that name
    none. Thread-safe; `load` runs once (it may import the SDK)."""

    def __init__(self, load: Callable[[], Mapping[type[BaseException], Factory[C]]], default: C) -> None:
        self._load = load
        self._table: Mapping[type[BaseException], Factory[C]] | None = None
        self._lock = threading.Lock()
        self.default = default

    def _factories(self) -> Mapping[type[BaseException], Factory[C]]:
        if self._table is None:
            with self._lock:
                if self._table is None:
                    self._table = dict(self._load())
        return self._table

    def translate(self, exc: BaseException, context: C | None = None) -> VmError | None:
        """The vm-core error for `exc` (the factory of its most specific listed class), or None when no class of
        `exc` is listed (a VmError or a bug: callers re-raise it unchanged)."""
        factories = self._factories()
        for cls in type(exc).__mro__:
            factory = factories.get(cls)
            if factory is not None:
                return factory(exc, self.default if context is None else context)
        return None

    def answers(self, ids: Iterable[str], exc: Exception, context: C | None = None) -> dict[str, VmError]:
        """Every id answered with the vm-core error of `exc`, the failure of one call about all of them; `exc`
        itself is re-raised when the table does not list it (a bug)."""
        error = self.translate(exc, context)
        if error is None:
            raise exc
        return dict.fromkeys(ids, error)

    def translated(self, context: C | None = None) -> contextlib.AbstractContextManager[None]:
        """`translated(self, context)`, as a method (adapters bind it once: `translated = ERRORS.translated`)."""
        return translated(self, context)


@contextlib.contextmanager
def translated(table: ErrorTable[C], context: C | None = None) -> Iterator[None]:
    """Re-raise an exception listed in `table` as its vm-core error (chained to it); others pass unchanged."""
    try:
        yield
    except Exception as exc:
        error = table.translate(exc, context)
        if error is None:
            raise
        raise error from exc


def _render(text: Text[C] | None, exc: Any, context: C) -> str | None:
    """A template (`{exc}`, `{exc.message}`, `{ctx.region}`...) filled in, or a function's answer."""
    if text is None or isinstance(text, str):
        return text.format(exc=exc, ctx=context) if text else text
    return text(exc, context)


def rule(kind: type[VmError], message: Text[C], *, provider: str,
         suggestion: Text[C] | None = None) -> Factory[C]:
    """A factory raising `kind` with a templated message and suggestion (an empty suggestion is none)."""
    def build(exc: Any, context: C) -> VmError:
        return kind(_render(message, exc, context) or "", provider=provider,
                    suggestion=_render(suggestion, exc, context) or None)
    return build


def rate_limited(message: Text[C], *, provider: str, suggestion: Text[C] | None = None) -> Factory[C]:
    """RateLimited carrying the SDK error's `retry_after` seconds (None when the cloud sent no hint)."""
    def build(exc: Any, context: C) -> VmError:
        error = RateLimited(_render(message, exc, context) or "", provider=provider,
                            suggestion=_render(suggestion, exc, context) or None)
        error.retry_after = getattr(exc, "retry_after", None)
        return error
    return build


def capacity(message: Text[C], *, provider: str, scope: Scope = Scope.REGION,
             suggestion: Text[C] | None = None) -> Factory[C]:
    """CapacityError of `scope` in the context's `region` (None when the context names no region)."""
    def build(exc: Any, context: C) -> VmError:
        return CapacityError(_render(message, exc, context) or "", scope=scope,
                             region=getattr(context, "region", None), provider=provider,
                             suggestion=_render(suggestion, exc, context) or None)
    return build
