"""The `vm` console script's own module. It imports only the standard library's `os` and `sys`, and cli/argv.py
(which imports nothing), at load, so that a Ctrl-C that arrives while the CLI is still being imported (a loaded
machine takes a few tenths of a second for click and the command modules) ends the process as every other
interruption does: exit 130 and one line on stderr, never a traceback. Once `cli.main` is imported, its own
handling applies (main.py `main`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from .argv import wants_json

INTERRUPTED = 130  # errors.Interrupted.exit_code, written out: importing errors could itself be interrupted


def main() -> NoReturn:
    """Import the CLI and run it; never returns. A KeyboardInterrupt during the import ends the process at once
    with exit 130: the error line in the form the CLI prints it (one JSON object under `-o json`)."""
    try:
        from .main import main as run
    except KeyboardInterrupt:
        _say_interrupted(sys.argv[1:])
        os._exit(INTERRUPTED)
    run()


def _say_interrupted(args: Sequence[str]) -> None:
    line = ('{"error": {"code": "interrupted", "message": "interrupted", "provider": null, "retryable": false}}'
            if wants_json(args) else "vm: error: interrupted")
    try:
        os.write(2, (line + "\n").encode())
    except OSError:  # stderr closed: the exit code still says it
        return
