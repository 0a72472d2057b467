"""Running provider calls for a command: concurrently, waiting with progress, continuing past failures.

Every target runs in its own daemon thread, so one slow provider or VM never serializes the others, and Ctrl-C
in the calling thread returns at once (the threads are abandoned; cloud actions they started go on in the cloud).
Waiting never cancels a cloud action: a timeout or an interrupt says which actions go on and how to follow them.
"""

from __future__ import annotations

import copy
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .errors import Interrupted, NotFound, Timeout, Transient, VmError
from .hints import MARK, Command, Hint
from .model import Instance, InstanceState
from .provider import Explained, Pending, Provider

K = TypeVar("K")
T = TypeVar("T")
Progress = Callable[[str], None]

DEFAULT_TIMEOUT = 1800.0  # seconds a command waits for its cloud actions unless --timeout says otherwise
FIRST_POLL, MAX_POLL = 0.1, 5.0  # seconds between polls of a pending action (grows by half each time)


@dataclass(frozen=True, slots=True)
class Outcome(Generic[K, T]):
    """The result of one target: `value`, or the normalized `error`."""

    key: K
    value: T | None = None
    error: VmError | None = None


def fan_out(fn: Callable[[K], T], keys: Sequence[K], *, prepare: Callable[[K], object] | None = None,
            ) -> list[Outcome[K, T]]:
    """fn(key) for every key at once, one daemon thread each; outcomes in the order of `keys`.

    A VmError is the outcome of its key; any other exception becomes a VmError whose __cause__ is the original
    (so --debug can show its traceback). KeyboardInterrupt in the calling thread propagates at once.
    `prepare(key)`, when given, runs in the calling thread just before key's thread starts, one key after the
    other: for CPU work such as connecting a provider (which imports its SDK), which threads would only contend
    for, while the keys already started wait on the network. What it raises is that key's outcome, as fn's
    would be, and the key's thread is then not started."""
    results: queue.Queue[tuple[int, Outcome[K, T]]] = queue.Queue()

    def run(index: int, key: K) -> None:
        results.put((index, _attempt(fn, key)))

    for index, key in enumerate(keys):
        if prepare is not None and (refused := _attempt(prepare, key).error) is not None:
            results.put((index, Outcome(key, error=refused)))
            continue
        threading.Thread(target=run, args=(index, key), daemon=True, name=f"vm-{index}").start()
    collected: dict[int, Outcome[K, T]] = {}
    while len(collected) < len(keys):
        with _interruptible():
            index, outcome = results.get(timeout=0.2)
            collected[index] = outcome
    return [collected[i] for i in range(len(keys))]


def _attempt(fn: Callable[[K], T], key: K) -> Outcome[K, T]:
    """fn(key) as an Outcome: its value, or its error as a VmError (never raises but KeyboardInterrupt)."""
    try:
        return Outcome(key, value=fn(key))
    except VmError as exc:
        return Outcome(key, error=exc)
    except Exception as exc:  # noqa: BLE001 - a bug in one plugin must not hide the other targets' results
        error = VmError(f"unexpected {type(exc).__name__}: {exc}")
        error.__cause__ = exc
        return Outcome(key, error=error)


class _interruptible:
    """Treat an empty poll of the results queue as nothing happened (the loop polls so Ctrl-C is seen)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, *_: Any) -> bool:
        return kind is queue.Empty


@dataclass(frozen=True, slots=True)
class Accepted:
    """A cloud action that was accepted: what `--no-wait` prints and what an interrupt leaves running."""

    provider: str
    verb: str
    instance_id: str
    operation_id: str
    name: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"provider": self.provider, "action": self.verb, "id": self.instance_id,
                "operation_id": self.operation_id, "name": self.name or None}

    @property
    def follow(self) -> Command:
        """The command that shows how the action goes on."""
        return Command.of("get", self.instance_id, "--provider", self.provider)


class Tracker:
    """The actions accepted during one command (thread-safe), for interrupt and timeout messages."""

    def __init__(self) -> None:
        self._accepted: list[Accepted] = []
        self._lock = threading.Lock()

    def add(self, accepted: Accepted) -> None:
        with self._lock:
            self._accepted.append(accepted)

    def interrupted(self, providers: Sequence[str]) -> Interrupted:
        """The error for Ctrl-C: what goes on in the cloud and how to follow it."""
        with self._lock:
            running = list(self._accepted)
        if not running:
            checks = [Command.of("list", "--provider", p) for p in providers] or [Command.of("list")]
            return Interrupted("interrupted; requests already sent may still complete in the cloud",
                               suggestion=_listed("check with ", checks))
        lines = "; ".join(f"{a.provider} {a.verb} of {a.name or a.instance_id} (operation {a.operation_id})"
                          for a in running)
        follow = list(dict.fromkeys(a.follow for a in running))
        return Interrupted(f"interrupted; the cloud operation keeps running: {lines}",
                           suggestion=_listed("follow it with ", follow))


def _listed(lead: str, commands: Sequence[Command]) -> Hint:
    """The hint `lead` followed by the commands, separated by commas."""
    return Hint(lead + ", ".join(MARK for _ in commands), tuple(commands))


def start(provider: Provider, verb: str, begin: Callable[[], Pending[T]], tracker: Tracker, progress: Progress,
          name: str = "", on_accepted: Callable[[Accepted], None] | None = None) -> tuple[Pending[T], Accepted]:
    """Ask the cloud for an action (one blocking call), record it (`on_accepted` first: what is recorded there
    is recorded before anything says the action was accepted) and announce it."""
    pending = begin()
    accepted = Accepted(provider.name, verb, pending.resource_id, pending.id, name)
    if on_accepted is not None:
        on_accepted(accepted)
    tracker.add(accepted)
    label = f"{name} ({pending.resource_id})" if name else pending.resource_id
    progress(f"{provider.name}: {verb} {label}: accepted, operation {pending.id}")
    if note := _note(pending):
        progress(f"{provider.name}: {name or pending.resource_id}: {note}")
    return pending, accepted


def wait(pending: Pending[T], provider: Provider, accepted: Accepted, *, timeout: float,
         progress: Progress, warn: Progress | None = None) -> T:
    """Block until the action is done, printing one progress line per state change of its instance, and (to
    `warn`, else `progress`) a note of the finished action that was not there when it began (see Explained).

    Raises the action's normalized error, or Timeout (the action goes on) after `timeout` seconds."""
    before = _note(pending)
    deadline = time.monotonic() + timeout
    label = f"{provider.name}: {accepted.name or accepted.instance_id}"
    last, delay = None, FIRST_POLL
    while not _done(pending):
        state = _state(provider, pending.resource_id)
        if state is not None and state != last:
            progress(f"{label}: {state}")
            last = state
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise Timeout(f"{provider.name}: gave up waiting after {timeout:g} s for the {accepted.verb} of"
                          f" {accepted.name or accepted.instance_id}; operation {accepted.operation_id} goes on"
                          " in the cloud", provider=provider.name,
                          suggestion=Hint.say("follow it with {}", accepted.follow))
        time.sleep(min(delay, remaining))
        delay = min(delay * 1.5, MAX_POLL)
    result = pending.wait(max(deadline - time.monotonic(), 30.0))
    # An action that returns no instance is a destroy (Pending[None] in the Provider protocol).
    final = result.state.value if isinstance(result, Instance) else InstanceState.TERMINATED.value
    if final != last:
        progress(f"{label}: {final}")
    if (after := _note(pending)) and after != before:
        (warn or progress)(f"{label}: {after}")
    return result


def _note(pending: Pending[Any]) -> str:
    return pending.note if isinstance(pending, Explained) else ""


def _done(pending: Pending[Any]) -> bool:
    try:
        return pending.done()
    except Transient:
        return False  # ask again at the next poll


def _state(provider: Provider, instance_id: str) -> str | None:
    """The instance's state for progress lines; None when it cannot be read just now."""
    try:
        return provider.get_instance(instance_id).state.value
    except NotFound:
        return InstanceState.TERMINATED.value
    except VmError:
        return None


def failure_error(failures: Sequence[tuple[str, VmError]], total: int, what: str) -> VmError:
    """The error of a command over `total` targets of which `failures` failed (at least one).

    One target: its own error. Several: PartialFailure ("N of M failed", exit 7), unless all failed for the same
    kind of reason, which then keeps that reason's exit code."""
    from .errors import PartialFailure

    if total == 1:
        return failures[0][1]
    first = failures[0][1]
    summary = f"{len(failures)} of {total} {what} failed"
    if len(failures) == total and len({type(e) for _, e in failures}) == 1:
        error = copy.copy(first)
        error.message = f"{summary}: {first.message}"
        error.args = (error.message,)
        return error
    return PartialFailure(summary, provider=first.provider)
