"""Helpers of the watchdog tests (tests/e2e/test_watchdog*.py): `vm watchdog` as a process of its own, read as
it writes, signalled through its process group; waiting for what must happen; the mock clouds' admin calls."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from mock_clouds import control

if TYPE_CHECKING:
    from e2e.conftest import VmHome

VM = str(Path(sys.executable).parent / "vm")
DEADLINE = 120.0  # seconds to wait for something that must happen; never a pass condition


def live(vm: VmHome, fleet: str) -> list[dict[str, Any]]:
    """The fleet's instances that exist in a cloud (running, or any state but terminated)."""
    return [i for i in vm.inventory() if i["name"].startswith(f"{fleet}-") and i["state"] != "terminated"]


def wait_for(what: str, condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def preempt(vm: VmHome, provider: str, instance_id: str) -> None:
    done = control.admin_call(vm.endpoints(), "POST", f"/preempt/{provider}/{instance_id}")
    assert done["preempted"], done


class Watched:
    """`vm watchdog` in its own process group, its stderr read line by line as it comes."""

    def __init__(self, vm: VmHome, *args: str, **env: str) -> None:
        self.process = subprocess.Popen([VM, "watchdog", *args], env={**vm.env, **env}, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.lines: list[str] = []
        assert self.process.stderr is not None
        self._reader = threading.Thread(target=self._read, args=(self.process.stderr,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.append(line)

    def said(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def signal(self, signum: int) -> int:
        os.killpg(self.process.pid, signum)
        code = self.process.wait(timeout=DEADLINE)
        self._reader.join(timeout=DEADLINE)
        return code
