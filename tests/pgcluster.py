"""A throwaway PostgreSQL cluster for tests and benchmarks: initdb + pg_ctl on a free loopback port in a temp dir.

The binaries come from VM_POSTGRES_BIN (default /usr/lib/postgresql/15/bin, where the Debian/Ubuntu packages put
them). PostgreSQL refuses to run as root, so as root the cluster runs as the unprivileged `postgres` user (its temp
dir is handed to that user). Durability is off (fsync=off): the data is thrown away at the end.

The pytest fixtures built on it (`postgres_cluster`, `postgres_url`) are in the repository's root conftest.py;
bench/teamstore.py uses it too.
"""

from __future__ import annotations

import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

BIN = Path(os.environ.get("VM_POSTGRES_BIN", "/usr/lib/postgresql/15/bin"))
SUPERUSER = "vm"
UNPRIVILEGED = "postgres"
START_TIMEOUT = 120  # seconds: the machine is shared and may be slow


class Unavailable(Exception):
    """PostgreSQL cannot be started here (no binaries, no unprivileged user, initdb or start failed)."""


class PgCluster:
    """A running cluster; `database()` makes a fresh, empty database and returns its URL."""

    def __init__(self, root: Path, port: int, run_as: list[str]) -> None:
        self.root, self.port, self._run_as = root, port, run_as
        self._names = itertools.count(1)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def database(self) -> str:
        import psycopg

        name = f"t{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        _run(self._run_as + [str(BIN / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate", "-w",
                             "stop"], check=False)
        shutil.rmtree(self.root, ignore_errors=True)


def start() -> PgCluster:
    """Start a cluster; Unavailable with the reason when it cannot."""
    if not (BIN / "initdb").exists():
        raise Unavailable(f"no PostgreSQL binaries in {BIN} (set VM_POSTGRES_BIN)")
    try:
        import psycopg  # noqa: F401
    except ImportError as exc:
        raise Unavailable(f"the psycopg driver is not installed: {exc}") from None
    root = Path(tempfile.mkdtemp(prefix="vm-pg-"))
    run_as = _unprivileged(root)
    port = _free_port()
    data, log = root / "data", root / "server.log"
    try:
        _run(run_as + [str(BIN / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust", "--no-sync",
                       "-E", "UTF8", "--locale=C"])
        options = (f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
                   "-c full_page_writes=off -c max_connections=300")
        _run(run_as + [str(BIN / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w",
                       "-t", str(START_TIMEOUT), "start"])
    except Unavailable as exc:
        detail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        raise Unavailable(f"{exc}\n{detail}".strip()) from None
    return PgCluster(root, port, run_as)


def _unprivileged(root: Path) -> list[str]:
    """The command prefix that runs the server's programs: none, or `runuser -u postgres --` as root."""
    if os.geteuid() != 0:
        return []
    try:
        user = pwd.getpwnam(UNPRIVILEGED)
    except KeyError:
        raise Unavailable(f"running as root and there is no {UNPRIVILEGED!r} user to run PostgreSQL as") from None
    os.chown(root, user.pw_uid, user.pw_gid)
    return ["runuser", "-u", UNPRIVILEGED, "--"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run(command: list[str], check: bool = True) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=START_TIMEOUT, check=False,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Unavailable(f"{' '.join(command)}: {exc}") from None
    if check and done.returncode != 0:
        raise Unavailable(f"{' '.join(command)} exited {done.returncode}: {(done.stderr or done.stdout).strip()}")
