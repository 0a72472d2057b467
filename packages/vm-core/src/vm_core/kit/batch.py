"""Actions on many resources at once (vm_core.provider.SupportsBatchDestroy): ids checked, then sent in batches,
and every id answered, by a Pending or by its error; and the answer of a batch read (SupportsGetMany)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import TypeVar

from ..errors import UsageError, VmError
from ..provider import Pending
from .errors import ErrorTable
from .pending import Finished

T = TypeVar("T")
C = TypeVar("C")
N = TypeVar("N")
Answers = dict[str, Pending[None] | VmError]


def chunks(items: Sequence[T], size: int) -> Iterator[list[T]]:
    """`items` in consecutive lists of at most `size`."""
    return (list(items[start:start + size]) for start in range(0, len(items), size))


def destroy_many(ids: Iterable[str], *, check: Callable[[str], object], limit: int,
                 send: Callable[[list[str]], Mapping[str, Pending[None] | VmError]]) -> Answers:
    """Each distinct id of `ids` answered: a malformed one (`check` raises UsageError) by that error, without any
    call; the others by `send(batch)`, called with at most `limit` ids at a time, in order."""
    answers: Answers = {}
    valid: list[str] = []
    for instance_id in dict.fromkeys(ids):
        try:
            check(instance_id)
            valid.append(instance_id)
        except UsageError as exc:
            answers[instance_id] = exc
    for batch in chunks(valid, limit):
        answers.update(send(batch))
    return answers


def batch_call(ids: Sequence[str], call: Callable[[], Collection[str]], follow: Callable[[str], Pending[None]],
               errors: ErrorTable[C], context: C | None = None, *,
               passing: tuple[type[Exception], ...] = ()) -> Answers:
    """One call acting on `ids`: `call()` returns the ids the action goes on for, each followed by `follow(id)`;
    the other ids had nothing left to do (already gone: `Finished`). When the call fails, every id is answered
    with its vm-core error (`errors`, in `context`); exceptions of a `passing` class propagate (the caller has
    its own way out), as does one the table does not list (a bug)."""
    try:
        going = set(call())
    except passing:
        raise
    except Exception as exc:
        return dict(errors.answers(ids, exc, context))
    return {i: follow(i) if i in going else Finished(i, None) for i in ids}


def read_many(found: Mapping[str, N | Exception], convert: Callable[[N], T], *,
              gone: tuple[type[Exception], ...]) -> dict[str, T | None]:
    """The answer of a batch read (SupportsGetMany) from what the cloud answered per id (`found`: a native VM or
    an exception): the converted VM, None for an exception of a `gone` class (the VM does not exist), and no
    entry for any other exception (unknown)."""
    return {i: None if isinstance(item, Exception) else convert(item) for i, item in found.items()
            if isinstance(item, gone) or not isinstance(item, Exception)}
