"""How the `vm` process ends: without the interpreter's teardown when nothing else is running, and with its own
exit code when the reader of its output went away.

A `vm` process that talked to the three clouds holds about 500 modules (click, requests, urllib3, grpc,
betterproto2 and the SDKs' generated messages). At a normal exit CPython frees them one by one after the exit
handlers have run, which costs 30-40 ms of a 0.2 s `vm list` and changes nothing the user can see.

A closed pipe is not a failure of the command: `vm list | head -1` stops reading after one line, as the user
asked, so what `vm` has not written yet is dropped quietly and the exit code stays the command's own (0 here),
even under `set -o pipefail`; the command itself runs to its end. Other write failures (a full disk) are exit 1.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from contextlib import suppress
from typing import Any, NoReturn, TextIO

UNWRITABLE_OUTPUT = 1  # the exit code when what vm printed could not be written out (a full disk): "other error"


class ReaderTolerant:
    """A text stream (stdout, stderr) whose reader may go away. The first write or flush that finds the pipe
    closed (EPIPE) points the stream's file descriptor at /dev/null: what was not written yet, and everything
    written later, is dropped without an error, and `reader_gone` is True from then on. Every other attribute,
    and every other error, is the wrapped stream's."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.reader_gone = False

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._drop()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._drop()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def _drop(self) -> None:
        """From now on the descriptor writes to /dev/null; what is still buffered goes there too."""
        self.reader_gone = True
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, self._stream.fileno())
        finally:
            os.close(null)
        with suppress(OSError, ValueError):
            self._stream.flush()


def tolerate_closed_pipes() -> None:
    """Make sys.stdout and sys.stderr ReaderTolerant (the `vm` console script does, before its command runs)."""
    sys.stdout = ReaderTolerant(sys.stdout)
    sys.stderr = ReaderTolerant(sys.stderr)


def reader_gone(stream: object) -> bool:
    """Whether nothing reads `stream` any more (a ReaderTolerant stream whose pipe was closed)."""
    return bool(getattr(stream, "reader_gone", False))


def exit_process(code: int) -> NoReturn:
    """End the process with `code`; never returns.

    When this is the only thread still running, the exit handlers run (`atexit`: logging's flush among them),
    stdout and stderr are flushed, and the process ends at once (`os._exit`). An output that can no longer be
    written is exit 1, not a traceback; one whose reader went away (a closed pipe, on a ReaderTolerant stream)
    keeps `code`. When another non-daemon thread is still
    running, this is `sys.exit(code)`: Python waits for that thread as usual."""
    if _others_running():
        sys.exit(code)
    atexit._run_exitfuncs()  # what Python would run before its teardown; reports its own failures, never raises
    written = [_flushed(sys.stdout), _flushed(sys.stderr)]  # both, even when the first fails
    if not all(written):
        code = code or UNWRITABLE_OUTPUT
    os._exit(code)


def _others_running() -> bool:
    me = threading.current_thread()
    return any(t is not me and not t.daemon and t.is_alive() for t in threading.enumerate())


def _flushed(stream: object) -> bool:
    """Whether `stream` was written out (True when there is none)."""
    flush = getattr(stream, "flush", None)
    if flush is None:
        return True
    try:
        flush()
    except (OSError, ValueError):  # a closed pipe (on a plain stream), a full disk, or a stream already closed
        return False
    return True
