"""The progress of `vm fleet create` through the real executable: on a terminal one line of counts redrawn in
place (per-VM lines with -v); on a stderr that is not a terminal every line, as before."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conftest import VmHome

VM = str(Path(sys.executable).parent / "vm")
COUNTS = re.compile(r"(\d+)/(\d+) running, (\d+) creating, (\d+) retrying")


def on_a_terminal(home: VmHome, args: list[str]) -> tuple[int, str, str]:
    """Run vm with stdin and stderr on a pseudo-terminal, stdout piped: (exit code, stdout, what the terminal
    received)."""
    primary, secondary = pty.openpty()
    proc = subprocess.Popen([VM, *args], env=home.env, stdin=secondary, stderr=secondary, stdout=subprocess.PIPE)
    os.close(secondary)
    seen = b""
    try:
        while True:
            ready, _, _ = select.select([primary], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # the last holder of the terminal's other end exited
                break
            if not chunk:
                break
            seen += chunk
        out = proc.stdout.read().decode() if proc.stdout else ""
        code = proc.wait(timeout=300)
    finally:
        os.close(primary)
        if proc.stdout:
            proc.stdout.close()
    return code, out, seen.decode(errors="replace")


def member_lines(text: str, fleet: str) -> list[str]:
    """The per-VM progress lines of the fleet (its create calls, its running VMs)."""
    return [line for line in re.split(r"[\r\n]", text) if f" {fleet}--" in line and ("creating" in line
                                                                                     or "running (" in line)]


def test_on_a_terminal_one_line_of_counts_is_redrawn_in_place(shared_home: VmHome) -> None:
    vm = shared_home
    vm.ok("providers")
    code, out, screen = on_a_terminal(vm, ["fleet", "create", "--gpu", "H100", "--count", "10", "--name", "agg",
                                           "-o", "json"])
    assert code == 0, screen
    assert json.loads(out)["state"] == "active"  # stdout is the result, as always
    drawn = COUNTS.findall(screen)
    assert drawn and drawn[-1] == ("10", "10", "0", "0"), screen  # the last state, drawn
    assert all(int(total) == 10 and sum(map(int, (r, c, t))) <= 10 for r, total, c, t in drawn), drawn
    assert "\r10/10 running, 0 creating, 0 retrying\x1b[K" in screen  # in place: carriage return, erase
    assert member_lines(screen, "agg") == [], screen  # no per-VM line
    assert "crusoe sells H100 only as H100:8" in screen  # other lines are still printed
    vm.ok("fleet", "destroy", "agg")


def test_verbose_adds_the_per_vm_lines(shared_home: VmHome) -> None:
    vm = shared_home
    code, _, screen = on_a_terminal(vm, ["fleet", "create", "--gpu", "H100", "--count", "4", "--name", "loud",
                                         "-v"])
    assert code == 0, screen
    assert len([line for line in member_lines(screen, "loud") if "running (" in line]) == 4, screen
    assert COUNTS.findall(screen)[-1] == ("4", "4", "0", "0")
    vm.ok("fleet", "destroy", "loud")


def test_without_a_terminal_every_line_is_printed_and_no_counts(shared_home: VmHome) -> None:
    vm = shared_home
    made = vm.ok("fleet", "create", "--gpu", "H100", "--count", "4", "--name", "logged")
    assert len([line for line in member_lines(made.err, "logged") if "running (" in line]) == 4, made.err
    assert "\r" not in made.err and not COUNTS.search(made.err), made.err
    vm.ok("fleet", "destroy", "logged")
