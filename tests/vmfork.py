"""Run the `vm` console script as a fresh process forked from one that has already imported the CLI.

A `vm` process spends most of its CPU importing click, the SDKs, grpc and the generated messages before it does
anything; the end-to-end and reliability suites run thousands of them. `run()` gives the same result as
`subprocess.run([VM, *args], env=env, stdin=DEVNULL, capture_output=True, text=True, timeout=timeout)`: a new
process (its own pid, environment, working directory and file descriptors 0-2; stdin /dev/null; stdout and stderr
pipes) that runs the console script's `main()` with `sys.argv = [VM, *args]` and ends through the interpreter's
normal exit (atexit handlers, non-daemon threads), exit code or -signal as `returncode`. The only difference is
that the modules are already imported: module-level code ran once, in the fork server, under the environment of
the test process.

So a run takes the real executable instead (`subprocess.run`) whenever the difference could show:
- VM_TESTS_EXEC=1 in the test process's environment (every run, for comparison or doubt);
- the run's environment differs from the fork server's in any variable the interpreter reads at start-up
  (PYTHON*, LANG, LC_*), since those shaped the server's interpreter;
- the fork server cannot start or has died.
Tests of the process itself (signals, a terminal, the import-time Ctrl-C handling) use `subprocess` directly.

One fork server per test process (an xdist worker), started on first use; it exits when that process does (it
watches a pipe from it). The server is single-threaded: it accepts a request on a Unix socket, forks, and reports
the child's pid, then its exit status.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import locale
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

STARTUP_ENV = ("PYTHON", "LANG", "LC_")
READY_TIMEOUT = 120.0  # importing the CLI on a loaded machine


def run(command: list[str], env: Mapping[str, str], timeout: float | None) -> subprocess.CompletedProcess[str]:
    """`command` is [path of the vm script, *args]. Blocks until the process ends (its output pipes close) or
    `timeout` seconds pass, then kills it and raises subprocess.TimeoutExpired, as subprocess.run does."""
    server = _server() if _forkable(env) else None
    if server is None:
        return subprocess.run(command, env=dict(env), capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, check=False)
    return server.run(command, dict(env), timeout)


def start_mock(state_dir: Path, time_scale: str, env: Mapping[str, str]) -> int | None:
    """Start the mock clouds of `state_dir` in the background as `mock-clouds serve --detach` does (a new session,
    stdio on STATE_DIR/server.log), in a process forked from the fork server, and return its pid once it answers;
    None when the run could not fork (the caller then leaves the start to `vm`'s autostart). The process runs
    `mock-clouds serve --state-dir DIR --time-scale T`, the command the detached server runs. Raises what
    control.wait_until_ready raises when it does not come up."""
    server = _server() if _forkable(env) else None
    if server is None:
        return None
    from mock_clouds import control

    _private_dirs(state_dir)
    log = os.open(state_dir / "server.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    stdin = os.open(os.devnull, os.O_RDONLY)
    argv = [sys.executable, "-m", "mock_clouds", "serve", "--state-dir", str(state_dir), "--time-scale", time_scale]
    request = {"kind": "mock", "argv": argv, "env": dict(env), "cwd": os.getcwd()}
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as conn:
        try:
            conn.connect(server.path)
            socket.send_fds(conn, [json.dumps(request).encode()], [stdin, log, log])
        finally:
            os.close(stdin)
            os.close(log)
        pid = int(_receive(conn, None)["pid"])
    control.wait_until_ready(state_dir, pid, time.monotonic() + READY_TIMEOUT)
    return pid


def _private_dirs(path: Path) -> None:
    """Create `path` and its missing parents with mode 0700, as vm does for its state."""
    for directory in reversed([p for p in (path, *path.parents) if not p.exists()]):
        directory.mkdir(mode=0o700, exist_ok=True)


def _forkable(env: Mapping[str, str]) -> bool:
    if os.environ.get("VM_TESTS_EXEC", "") not in ("", "0"):
        return False
    keys = {k for k in {*env, *os.environ} if k.startswith(STARTUP_ENV)}
    return all(env.get(k) == os.environ.get(k) for k in keys)


_lock = threading.Lock()
_servers: dict[int, _Client | None] = {}  # by the test process's pid (a forked test process starts its own)


def _server() -> _Client | None:
    with _lock:
        pid = os.getpid()
        client = _servers.get(pid, False)
        if client is False or (client is not None and not client.alive()):
            client = _Client.start()
            _servers[pid] = client
        return client  # type: ignore[return-value]


class _Client:
    def __init__(self, proc: subprocess.Popen[bytes], path: str, directory: str) -> None:
        self.proc, self.path, self.directory = proc, path, directory

    @classmethod
    def start(cls) -> _Client | None:
        directory = tempfile.mkdtemp(prefix="vmfork-")
        path = os.path.join(directory, "sock")
        proc = subprocess.Popen([sys.executable, __file__, path], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ))
        deadline = time.monotonic() + READY_TIMEOUT
        while not os.path.exists(path):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                return None
            time.sleep(0.02)
        client = cls(proc, path, directory)
        atexit.register(client.close)
        return client

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()  # the server exits on EOF
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        for name in ("sock",):
            Path(self.directory, name).unlink(missing_ok=True)
        os.rmdir(self.directory)

    def run(self, command: list[str], env: dict[str, str], timeout: float | None) -> subprocess.CompletedProcess[str]:
        deadline = None if timeout is None else time.monotonic() + timeout
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        stdin = os.open(os.devnull, os.O_RDONLY)
        request = {"argv": command, "env": env, "cwd": os.getcwd()}
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as conn:
            try:
                conn.connect(self.path)
                socket.send_fds(conn, [json.dumps(request).encode()], [stdin, out_w, err_w])
            finally:
                for fd in (stdin, out_w, err_w):
                    os.close(fd)
            pid = int(_receive(conn, None, out_r, err_r)["pid"])  # sent as soon as the server has forked
            try:
                out, err = _communicate(out_r, err_r, deadline)
                status = _receive(conn, deadline)
            except subprocess.TimeoutExpired:
                _kill(pid)
                _receive(conn, None)
                raise subprocess.TimeoutExpired(command, timeout or 0) from None
        return subprocess.CompletedProcess(command, int(status["code"]), _text(out), _text(err))


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _receive(conn: socket.socket, deadline: float | None, *close_on_error: int) -> dict[str, Any]:
    try:
        conn.settimeout(None if deadline is None else max(0.001, deadline - time.monotonic()))
        data = conn.recv(65536)
        if not data:
            raise RuntimeError("the vm fork server closed the connection")
    except TimeoutError:
        raise subprocess.TimeoutExpired("vm", 0) from None
    except BaseException:
        for fd in close_on_error:
            os.close(fd)
        raise
    return dict(json.loads(data))


def _communicate(out_r: int, err_r: int, deadline: float | None) -> tuple[bytes, bytes]:
    """Read both pipes to EOF (closes them)."""
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    with selectors.DefaultSelector() as selector:
        for fd in chunks:
            selector.register(fd, selectors.EVENT_READ)
        try:
            while selector.get_map():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise subprocess.TimeoutExpired("vm", 0)
                for key, _ in selector.select(left):
                    data = os.read(key.fd, 65536)
                    if data:
                        chunks[key.fd].append(data)
                    else:
                        selector.unregister(key.fd)
        finally:
            os.close(out_r)
            os.close(err_r)
    return b"".join(chunks[out_r]), b"".join(chunks[err_r])


def _text(data: bytes) -> str:
    """As subprocess.run(text=True) decodes: the locale's encoding, universal newlines."""
    text = data.decode(locale.getpreferredencoding(False))
    return text.replace("\r\n", "\n").replace("\r", "\n")


# ---------------------------------------------------------------------------------------------- the server
PRELOAD = ("vm_core", "cloud_sdk_core", "crusoe_sdk", "lambda_sdk", "nebius_sdk")
PRELOAD_MODULES = ("requests", "netrc", "grpc", "grpc.experimental", "pydantic", "pydantic.dataclasses",
                   "mock_clouds.control", "mock_clouds.embedded", "mock_clouds.cli", "mock_clouds.runner",
                   "mock_clouds.crusoe.server", "mock_clouds.lambda_cloud.server", "mock_clouds.nebius.server",
                   "mock_clouds.admin", "mock_clouds.scenario")
PLUGIN_GROUPS = ("vm_core.providers", "vm_core.strategies", "vm_core.embedded")


def _preload() -> None:
    """Import the console script's module and every module of vm_core and the SDKs (what commands import
    lazily), and the libraries they import when they connect."""
    import importlib
    import pkgutil

    import vm_core.cli.entry  # noqa: F401

    for name in PRELOAD_MODULES:
        _try_import(importlib, name)
    for package in PRELOAD:
        module = _try_import(importlib, package)
        for info in pkgutil.walk_packages(getattr(module, "__path__", []), package + "."):
            _try_import(importlib, info.name)
    from importlib.metadata import entry_points

    for group in PLUGIN_GROUPS:  # the installed plugins' modules (vm loads them on first use)
        for point in entry_points(group=group):
            _try_import(importlib, point.module)


def _try_import(importlib: Any, name: str) -> Any:
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - an optional dependency missing: the child imports it (or fails) itself
        return None


def _serve(path: str) -> tuple[dict[str, Any], list[int]]:
    """The fork server's loop. Returns only in a forked child: its request and file descriptors."""
    _preload()
    import gc

    gc.collect()
    gc.freeze()  # the children's collections skip the preloaded objects (and do not copy their pages)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path + ".tmp")
    listener.listen(64)
    os.rename(path + ".tmp", path)  # the client waits for this name: the server is ready
    children: dict[int, socket.socket] = {}
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)
    selector.register(sys.stdin.fileno(), selectors.EVENT_READ)  # EOF: the test process is gone
    while True:
        for key, _ in selector.select():
            if key.fd == sys.stdin.fileno():
                if not os.read(key.fd, 1024):
                    for pid in children:
                        _kill(pid)
                    os._exit(0)
            elif key.fd == wake_r:
                while os.read(wake_r, 1024) == 1024:
                    pass
                _reap(children)
            else:
                conn, _ = listener.accept()
                data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
                pid = os.fork()
                if pid == 0:
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    return json.loads(data), fds
                for fd in fds:
                    os.close(fd)
                conn.send(json.dumps({"pid": pid}).encode())
                children[pid] = conn
        _reap(children)


def _reap(children: dict[int, socket.socket]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is not None:
            with contextlib.suppress(OSError):  # the client gave up (timeout) and went away
                conn.send(json.dumps({"code": os.waitstatus_to_exitcode(status)}).encode())
            conn.close()


def _become(request: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: take the request's stdio, environment, working directory and arguments."""
    sys.stdout.flush()
    sys.stderr.flush()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    os.closerange(3, os.sysconf("SC_OPEN_MAX") if os.sysconf("SC_OPEN_MAX") > 0 else 4096)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    sys.argv = list(request["argv"])
    if request.get("kind") == "mock":
        os.setsid()  # as the detached server: its own session, no terminal


def _main() -> None:
    request, fds = _serve(sys.argv[1])
    _become(request, fds)
    if request.get("kind") == "mock":
        from mock_clouds.cli import main as mock_main

        sys.argv = sys.argv[2:]  # after `python -m`: [mock_clouds, serve, ...] as click sees it
        sys.argv[0] = "mock-clouds"
        mock_main()
        sys.exit(0)
    from vm_core.cli.entry import main

    sys.exit(main())


if __name__ == "__main__":
    sys.path.pop(0)  # this file's directory: not on the path of a real `vm` process
    _main()
