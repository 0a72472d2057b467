"""How a `vm` process ends (cli/exiting.py): exit handlers run, output is written out, the exit code is kept,
other threads are waited for, a closed pipe is exit 1 without a traceback; a late Ctrl-C is exit 130."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

PROBE = textwrap.dedent("""
    import atexit, signal, sys, threading, time
    from vm_core.cli.exiting import exit_process

    atexit.register(lambda: sys.stderr.write("handler ran\\n"))
    mode = sys.argv[1]
    if mode == "thread":
        def late() -> None:
            time.sleep(0.3)
            sys.stdout.write("thread done\\n")
        threading.Thread(target=late).start()
    if mode == "closed":
        sys.stdin.readline()  # the reader closes its end of stdout first
    sys.stdout.write("x" * 1_000_000 + "\\n" if mode == "big" else "small\\n")
    exit_process(int(sys.argv[2]))
""")


def probe(mode: str, code: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PROBE, mode, str(code)], capture_output=True, text=True,
                          timeout=60)


def test_every_byte_written_the_handlers_run_and_the_code_is_kept() -> None:
    done = probe("big", 3)
    assert done.returncode == 3
    assert done.stdout == "x" * 1_000_000 + "\n"
    assert done.stderr == "handler ran\n"


def test_a_running_thread_is_waited_for() -> None:
    done = probe("thread", 0)
    assert done.returncode == 0
    assert done.stdout == "small\nthread done\n"
    assert done.stderr == "handler ran\n"


def test_a_closed_pipe_is_exit_1_without_a_traceback() -> None:
    """What is still buffered when the reader has gone cannot be written: exit 1, no traceback."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    child = subprocess.Popen([sys.executable, "-c", PROBE, "closed", "0"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert child.stdout is not None and child.stdin is not None
    child.stdout.close()
    child.stdin.write("go\n")
    child.stdin.close()
    assert child.wait(timeout=60) == 1
    assert child.stderr is not None and child.stderr.read() == "handler ran\n"


def test_a_ctrl_c_after_the_command_is_exit_130_and_later_ones_are_ignored() -> None:
    """A SIGINT that escapes `run` (during its last clean-up) must not end `vm` with a traceback or by the signal;
    once the command has finished, a late Ctrl-C (while the process exits) is ignored."""
    script = textwrap.dedent("""
        import atexit, signal, sys
        from vm_core.cli import main as cli_main

        def interrupted_late(argv=None):
            raise KeyboardInterrupt

        atexit.register(lambda: print("SIGINT ignored:", signal.getsignal(signal.SIGINT) is signal.SIG_IGN))
        cli_main.run = interrupted_late
        cli_main.main()
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 130
    assert done.stdout == "SIGINT ignored: True\n"
    assert "Traceback" not in done.stderr


INTERRUPTED_WHILE_IMPORTING = textwrap.dedent("""
    import importlib.abc, os, signal, sys

    class SigintOnClick(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "click":  # the first third-party module the CLI imports
                os.kill(os.getpid(), signal.SIGINT)  # a real Ctrl-C, delivered while the CLI is being imported
            return None

    sys.meta_path.insert(0, SigintOnClick())
    sys.argv = ["vm", *sys.argv[1:]]
    from vm_core.cli.entry import main
    main()
""")


def test_a_ctrl_c_while_the_cli_is_still_being_imported_is_exit_130_without_a_traceback() -> None:
    """The console script (cli/entry.py) imports the CLI inside its own handler: a Ctrl-C that comes before the
    CLI could install its own (a loaded machine spends tenths of a second importing it) is the same exit 130."""
    plain = subprocess.run([sys.executable, "-c", INTERRUPTED_WHILE_IMPORTING, "list"], capture_output=True,
                           text=True, timeout=60)
    assert (plain.returncode, plain.stderr, plain.stdout) == (130, "vm: error: interrupted\n", "")
    as_json = subprocess.run([sys.executable, "-c", INTERRUPTED_WHILE_IMPORTING, "list", "-o", "json"],
                             capture_output=True, text=True, timeout=60)
    assert as_json.returncode == 130
    assert json.loads(as_json.stderr)["error"]["code"] == "interrupted"


def test_the_console_script_is_the_entry_module() -> None:
    """The installed `vm` script must start at cli/entry.py, not at cli/main.py (whose imports a Ctrl-C could
    interrupt with a traceback)."""
    from importlib.metadata import entry_points

    (script,) = entry_points(group="console_scripts", name="vm")
    assert script.value == "vm_core.cli.entry:main"
