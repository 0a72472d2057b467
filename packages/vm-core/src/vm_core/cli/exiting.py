"""How the `vm` process ends: without the interpreter's teardown when nothing else is running.

A `vm` process that talked to the three clouds holds about 500 modules (click, requests, urllib3, grpc,
betterproto2 and the SDKs' generated messages). At a normal exit CPython frees them one by one after the exit
handlers have run, which costs 30-40 ms of a 0.2 s `vm list` and changes nothing the user can see.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn

UNWRITABLE_OUTPUT = 1  # the exit code when what vm printed could not be written out (a closed pipe): "other error"


def exit_process(code: int) -> NoReturn:
    """End the process with `code`; never returns.

    When this is the only thread still running, the exit handlers run (`atexit`: logging's flush among them),
    stdout and stderr are flushed, and the process ends at once (`os._exit`). An output that can no longer be
    written (the reader of a pipe is gone) is exit 1, not a traceback. When another non-daemon thread is still
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
    except (OSError, ValueError):  # a closed pipe, or a stream already closed
        return False
    return True
