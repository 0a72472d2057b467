"""Is the process that creates a fleet still at work?

`vm fleet status` shows the fleet of a dead creator as interrupted; `vm fleet destroy` and `reconcile` refuse to
run while the creator lives (they would delete records it is about to update, and a VM it creates next would be
recorded nowhere). A pid alone is not enough after a crash: the pid may be reused, and a killed process may
linger as a zombie, so where /proc tells, the process must also have started before the fleet was registered.
"""

from __future__ import annotations

import os
from pathlib import Path

START_SLACK = 2.0  # seconds: /proc's boot time is whole seconds


def creator_alive(pid: int, registered_at: float) -> bool:
    """True when process `pid` runs, is not a zombie, and did not start after `registered_at` (epoch seconds).
    Never blocks; without /proc only the pid is checked."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    started = _process_start(pid)
    if started is None:
        return True
    state, start = started
    return state != "Z" and start <= registered_at + START_SLACK


def _process_start(pid: int) -> tuple[str, float] | None:
    """(state letter, start time in epoch seconds) from /proc, or None where /proc cannot tell."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
        return fields[0], boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError, StopIteration):
        return None
