"""The exit codes of `vm`, once: how each ExitKind (vm_core.api.outcome) ends the process.

    0 ok, 1 other error, 2 bad input, 3 not found, 4 auth/config, 5 unsupported by the provider,
    6 capacity/quota/budget, 7 partial failure, 8 transient (retry), 9 timeout, 130 interrupted.
"""

from __future__ import annotations

from ..api.outcome import ExitKind

EXIT_CODES: dict[ExitKind, int] = {
    ExitKind.OK: 0, ExitKind.ERROR: 1, ExitKind.USAGE: 2, ExitKind.NOT_FOUND: 3, ExitKind.CONFIG: 4,
    ExitKind.UNSUPPORTED: 5, ExitKind.CAPACITY: 6, ExitKind.PARTIAL: 7, ExitKind.TRANSIENT: 8, ExitKind.TIMEOUT: 9,
    ExitKind.INTERRUPTED: 130,
}


def exit_for(kind: ExitKind) -> int:
    """The documented exit code of a command that ended as `kind`."""
    return EXIT_CODES[kind]
