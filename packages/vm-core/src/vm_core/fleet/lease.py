"""Leases: which process may change a fleet, on any machine that shares the store.

Every operation that changes a fleet (create, scale, repair, destroy, reconcile) holds the lease on the fleet's name
for its whole run: holder `user@host:pid`, an expiry `lease_seconds` (VM_LEASE_SECONDS, default 60) ahead on the
store's clock, renewed by a heartbeat thread every third of that. The lease is released at the end. Another process
that finds a live lease refuses (UsageError, exit 2, naming the holder and when the lease lapses). A lease whose
holder was killed, or whose machine died, lapses; the next operation takes it over and first resolves what that
fleet left unresolved (destroy and reconcile look at every member that may exist). A holder whose lease was taken
over while it stalled (no heartbeat for a whole lease) is told through `on_lost` and stops starting new work.

A holder on the same machine need not be waited for: the lease records the holder process's exact identity (boot
id, PID namespace, pid and start time, from /proc), so a process on the same machine can prove the holder is gone
(killed, or its pid reused) and take over at once. Where /proc cannot tell (another machine, another container's
PID namespace, macOS) only the lapse counts.

Leases nest: a thread that holds a fleet's lease (the watchdog, around each fleet's duties) and then runs an
operation that takes it again (a repair, a reap) keeps it; the inner operation names itself in the lease and is
told `on_lost` as well. A process may say what it acts as (`acting_as("watchdog")`): its lease holder is then
`watchdog user@host:pid`, and the events it records name `watchdog user@host`.
"""

from __future__ import annotations

import getpass
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path

from ..errors import ConfigError, UsageError
from ..hints import Command, Hint
from .store import DEFAULT_LEASE_SECONDS, FleetStore, Lease, LeaseHeld

HEARTBEATS_PER_LEASE = 3
_role: list[str] = []  # what this process acts as ("watchdog"), said before user@host (acting_as)
_held = threading.local()  # `fleets`: fleet name -> the _Holding of the lease this thread holds on it


def user_at_host() -> str:
    """`user@host` of this process (the user id when the user has no name)."""
    try:
        user = getpass.getuser()
    except (OSError, KeyError):
        user = str(os.getuid())
    return f"{user}@{socket.gethostname()}"


def actor() -> str:
    """Who acts, as leases and events say it: `user@host`, or `ROLE user@host` while `acting_as(ROLE)`."""
    return " ".join([*_role, user_at_host()])


@contextmanager
def acting_as(role: str) -> Iterator[None]:
    """For the body, this process's leases and events say `role` before `user@host` (e.g. "watchdog")."""
    before = _role[:]
    _role[:] = [role]
    try:
        yield
    finally:
        _role[:] = before


def this_process() -> str:
    """The lease holder name of this process: `user@host:pid` (`ROLE user@host:pid` while acting_as)."""
    return f"{actor()}:{os.getpid()}"


def process_identity(pid: int | None = None) -> str:
    """`boot-id/pid-namespace/pid/start-ticks` of a running process (default: this one); "" when /proc cannot
    tell or the process is gone or a zombie. Equal identities are the same process, whatever the clocks say."""
    pid = os.getpid() if pid is None else pid
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = os.readlink("/proc/self/ns/pid")
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()
    except (OSError, IndexError):
        return ""
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return ""
    return f"{boot}/{namespace}/{pid}/{fields[19]}"


def holder_gone(held: Lease) -> bool:
    """True only when the holder provably no longer runs: same machine and PID namespace, and its pid is now
    no process, a zombie, or another process."""
    if not held.process or not (mine := process_identity()):
        return False
    boot, namespace, pid, _ = held.process.split("/", 3)
    if mine.split("/", 2)[:2] != [boot, namespace] or not pid.isdigit():
        return False
    return process_identity(int(pid)) != held.process


def live_lease(store: FleetStore, fleet: str) -> Lease | None:
    """The fleet's lease when its holder may still be at work: None when there is none, it lapsed, or its holder
    provably died."""
    held = store.lease(fleet)
    return None if held is None or holder_gone(held) else held


def lease_seconds(environ: Mapping[str, str]) -> float:
    """VM_LEASE_SECONDS (default 60); ConfigError unless it is a number of seconds from 1 to 86400."""
    text = environ.get("VM_LEASE_SECONDS", "").strip()
    if not text:
        return DEFAULT_LEASE_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 1 <= seconds <= 86400:
        raise ConfigError(f"VM_LEASE_SECONDS must be a number of seconds from 1 to 86400, not {text!r}")
    return seconds


@contextmanager
def lease(store: FleetStore, fleet: str, operation: str, *,
          on_lost: Callable[[], None] = lambda: None) -> Iterator[Lease]:
    """Hold the fleet's lease for the body: UsageError when another process holds a live one. When this thread
    holds it already, the body runs under that lease (renamed `operation`), and `on_lost` joins its callbacks."""
    holdings: dict[str, _Holding] = _held.__dict__.setdefault("fleets", {})
    if fleet in holdings:
        with holdings[fleet].nested(store, operation, on_lost) as inner:
            yield inner
        return
    holder, seconds, process = this_process(), store.lease_seconds, process_identity()
    try:
        held = store.acquire_lease(fleet, holder, operation, seconds, process=process)
    except LeaseHeld as exc:
        if not holder_gone(exc.lease):
            raise refusal(exc.lease, operation) from None
        try:
            held = store.acquire_lease(fleet, holder, operation, seconds, process=process,
                                       replacing=exc.lease.holder)
        except LeaseHeld as again:  # another process took the dead holder's lease first
            raise refusal(again.lease, operation) from None
    if held.previous:
        from ..events.recording import lease_taken_over

        lease_taken_over(store, held, actor())
    stop = threading.Event()
    holdings[fleet] = holding = _Holding(held, on_lost)
    beat = threading.Thread(target=_heartbeat, args=(store, held, seconds, stop, holding.lost),
                            name=f"lease-{fleet}", daemon=True)
    beat.start()
    try:
        yield held
    finally:
        del holdings[fleet]
        stop.set()
        beat.join()
        with suppress(Exception):  # the store is unreachable: the lease lapses by itself
            store.release_lease(fleet, holder)


class _Holding:
    """A lease this thread holds: the callbacks told when it is lost (its own, and those of nested bodies)."""

    def __init__(self, held: Lease, on_lost: Callable[[], None]) -> None:
        self.held, self.callbacks = held, [on_lost]

    def lost(self) -> None:
        for callback in list(self.callbacks):
            callback()

    @contextmanager
    def nested(self, store: FleetStore, operation: str, on_lost: Callable[[], None]) -> Iterator[Lease]:
        """The held lease, renamed `operation` (and extended) in `store`: LeaseRefused when it was taken over."""
        try:
            held = store.acquire_lease(self.held.fleet, self.held.holder, operation, store.lease_seconds,
                                       process=self.held.process)
        except LeaseHeld as exc:
            raise refusal(exc.lease, operation) from None
        self.callbacks.append(on_lost)
        try:
            yield held
        finally:
            self.callbacks.remove(on_lost)


class LeaseRefused(UsageError):
    """Another process holds a live lease on the fleet (exit 2, as any UsageError); `lease` is that lease."""

    def __init__(self, message: str, held: Lease, *, suggestion: str | Hint | None = None) -> None:
        super().__init__(message, suggestion=suggestion)
        self.lease = held


def refusal(held: Lease, operation: str) -> LeaseRefused:
    """The UsageError for `operation` finding `held` live. A create is told the name is taken, with the hint of
    any taken name (see the fleet, or pick another name): whoever holds the lease is creating, changing or
    destroying a fleet of that name, so the same create would be refused again. Any other operation is told to
    wait for the holder."""
    lapses = time.strftime("%H:%M:%S UTC", time.gmtime(held.expires_at))
    creating = operation == "fleet create"
    taken = f"a fleet named {held.fleet!r} already exists and" if creating else f"fleet {held.fleet!r}"
    status = Command.of("fleet", "status", held.fleet)
    hint = Hint.say("see {}, or pick another name", status) if creating else \
        Hint.say("wait for it to finish and run this again ({} shows the fleet); if that process died, run this "
                 "again after the lease lapses", status)
    return LeaseRefused(f"{taken} is being changed by {held.holder} ({held.operation}); its lease "
                        f"lapses at {lapses} (in {max(held.remaining, 0):.0f} s) unless that process renews it", held,
                        suggestion=hint)


def _heartbeat(store: FleetStore, held: Lease, seconds: float, stop: threading.Event,
               on_lost: Callable[[], None]) -> None:
    """Renew the lease every third of its length until `stop`; a store that cannot be reached is tried again at
    the next beat. Calls `on_lost` (once) when the lease was taken over."""
    while not stop.wait(seconds / HEARTBEATS_PER_LEASE):
        try:
            renewed = store.renew_lease(held.fleet, held.holder, seconds)
        except Exception:  # noqa: BLE001 - retried at the next beat; the lease holds for two more beats
            continue
        if not renewed:
            on_lost()
            return
