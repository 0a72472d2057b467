"""Persistence of the world: one JSON document, written atomically, at most every `interval` seconds, and for a big
world no more than a tenth of the time (after a write that took t seconds, the next waits at least 9 t).

`mark_dirty` is cheap and called after every transaction; a background thread writes the snapshot. `close`
writes the final state synchronously, so a SIGTERM (which stops the servers and then closes the store) loses
nothing. The file is written to a temporary name, fsynced and renamed, so a crash never leaves half a file.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from .models import WorldState

STATE_FILE = "state.json"
# At most this share of the time goes to writing snapshots (encoding the world holds its lock).
SNAPSHOT_SHARE = 0.1


def load_state(state_dir: Path) -> WorldState | None:
    """The persisted world, or None if there is none yet. Raises ValueError for a corrupt file."""
    path = state_dir / STATE_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return msgspec.json.decode(data, type=WorldState)
    except msgspec.DecodeError as exc:
        raise ValueError(f"{path} is not a valid mock-clouds state file: {exc}") from exc


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` (mode 0600) so that readers see the old or the new file, never a mix."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}.{threading.get_ident()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class Snapshotter:
    """Writes `snapshot()` to `state_dir` in the background whenever marked dirty."""

    def __init__(self, state_dir: Path, snapshot: Callable[[], bytes], interval: float = 0.05) -> None:
        self._dir = state_dir
        self._snapshot = snapshot
        self._interval = interval
        self._dirty = threading.Event()
        self._stop = threading.Event()
        self._write_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="mock-clouds-store", daemon=True)
        self._thread.start()

    def mark_dirty(self) -> None:
        self._dirty.set()

    def flush(self) -> None:
        with self._write_lock:
            self._dirty.clear()
            write_atomic(self._dir / STATE_FILE, self._snapshot())

    def _run(self) -> None:
        while not self._stop.is_set():
            if self._dirty.wait(timeout=0.5) and not self._stop.is_set():
                started = time.monotonic()
                self.flush()
                took = time.monotonic() - started
                self._stop.wait(max(self._interval, took * (1 - SNAPSHOT_SHARE) / SNAPSHOT_SHARE))

    def close(self) -> None:
        self._stop.set()
        self._dirty.set()
        self._thread.join(timeout=5)
        self.flush()
