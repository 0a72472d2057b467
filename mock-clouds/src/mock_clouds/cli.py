"""`mock-clouds`: run the Crusoe, Lambda and Nebius mock clouds and inspect them.

Exit codes: 0 ok, 1 failure (could not start, server error), 2 usage error, 3 no server running.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import click

from . import control

EXIT_FAILURE = 1
EXIT_NOT_RUNNING = 3

state_dir_option = click.option(
    "--state-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="Where the world and endpoints.json live (default: where `vm` keeps them: $VM_HOME/mock-clouds,"
         " else $XDG_STATE_HOME/vm/mock-clouds).",
)


def _state_dir(value: Path | None) -> Path:
    return (value or control.default_state_dir()).resolve()


def _fail(message: str, code: int = EXIT_FAILURE) -> NoReturn:
    click.echo(f"mock-clouds: {message}", err=True)
    sys.exit(code)


@click.group()
@click.version_option(package_name="mock-clouds")
def main() -> None:
    """Local mock servers that behave like Crusoe Cloud, Lambda Cloud and Nebius AI Cloud."""


@main.command()
@state_dir_option
@click.option("--scenario", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Scenario TOML for a fresh state dir (default: the packaged realistic scenario).")
@click.option("--time-scale", type=click.FloatRange(min=0.0, min_open=True), default=None,
              help="Multiply every simulated duration and rate-limit interval (default: the scenario's).")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--crusoe-port", type=click.IntRange(0, 65535), default=0, help="0 = a free port.")
@click.option("--lambda-port", type=click.IntRange(0, 65535), default=0, help="0 = a free port.")
@click.option("--nebius-port", type=click.IntRange(0, 65535), default=0, help="0 = a free port.")
@click.option("--tls", is_flag=True,
              help="Serve TLS (HTTPS, gRPC over TLS) with a certificate signed by STATE_DIR/ca.pem, a CA made on"
                   " first start and reused; the admin API stays plaintext.")
@click.option("--detach", is_flag=True, help="Run in the background and return once it answers.")
def serve(state_dir: Path | None, scenario: Path | None, time_scale: float | None, host: str,
          crusoe_port: int, lambda_port: int, nebius_port: int, tls: bool, detach: bool) -> None:
    """Serve the three mock clouds until SIGTERM/SIGINT; writes STATE_DIR/endpoints.json (mode 0600)."""
    directory = _state_dir(state_dir)
    if detach:
        args = sys.argv[1:]
        _detach(directory, [a for a in args if a != "--detach"])
        return
    ports = {"crusoe": crusoe_port, "lambda": lambda_port, "nebius": nebius_port}
    _serve_foreground(directory, scenario, time_scale, host, ports, tls)


def _serve_foreground(directory: Path, scenario: Path | None, time_scale: float | None, host: str,
                      ports: dict[str, int], tls: bool) -> None:
    from .control import ENDPOINTS_FILE
    from .runner import MockClouds
    from .scenario import ScenarioError

    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    with _exclusive(directory):
        try:
            clouds = MockClouds(directory, scenario=scenario, time_scale=time_scale, host=host,
                                ports=ports, tls=tls).start()
        except (ScenarioError, ValueError, OSError) as exc:
            _fail(f"cannot start: {exc}")
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        _print_endpoints(clouds.endpoints)
        stop.wait()
        clouds.stop()
        (directory / ENDPOINTS_FILE).unlink(missing_ok=True)
        click.echo("mock-clouds: stopped, state saved", err=True)


@contextlib.contextmanager
def _exclusive(directory: Path) -> Iterator[None]:
    """Hold a lock on the state dir for the life of the server: two servers must not share a world."""
    fd = os.open(directory / "server.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        _fail(f"another mock-clouds server is running for {directory}")
    try:
        yield
    finally:
        os.close(fd)


def _detach(directory: Path, args: list[str]) -> None:
    with contextlib.suppress(control.NotRunning):
        endpoints = control.read_endpoints(directory)
        _fail(f"already running for {directory} (pid {endpoints['pid']})")
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    if "--state-dir" not in args:
        args = [*args, "--state-dir", str(directory)]
    # 0600 whatever the umask: the log is the server's own output, nobody else's business
    log = os.fdopen(os.open(directory / "server.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab")
    child = subprocess.Popen([sys.executable, "-m", "mock_clouds", *args], stdin=subprocess.DEVNULL,
                             stdout=log, stderr=log, start_new_session=True)
    try:
        endpoints = control.wait_until_ready(directory, child.pid, time.monotonic() + 30)
    except (control.NotRunning, TimeoutError) as exc:
        child.kill()
        _fail(str(exc))
    _print_endpoints(endpoints)


def _print_endpoints(endpoints: dict[str, Any]) -> None:
    click.echo(f"mock-clouds running (pid {endpoints['pid']})")
    click.echo(f"  crusoe  {endpoints['crusoe']['url']}  project {endpoints['crusoe']['project_id']}")
    click.echo(f"  lambda  {endpoints['lambda']['url']}")
    click.echo(f"  nebius  {endpoints['nebius']['target']}  project {endpoints['nebius']['project_id']}")
    if endpoints.get("tls"):
        click.echo(f"  TLS, CA certificate {endpoints['ca_file']}")


@main.command()
@state_dir_option
def stop(state_dir: Path | None) -> None:
    """Stop the server of STATE_DIR (SIGTERM; its state is saved). Succeeds if none is running."""
    pid = control.stop_server(_state_dir(state_dir))
    click.echo("mock-clouds: not running" if pid is None else f"mock-clouds: stopped pid {pid}")


@main.command()
@state_dir_option
def status(state_dir: Path | None) -> None:
    """Say whether a server runs for STATE_DIR (exit 3 if not) and where it listens."""
    try:
        endpoints = control.read_endpoints(_state_dir(state_dir))
        control.admin_call(endpoints, "GET", "/health")
    except control.NotRunning as exc:
        _fail(str(exc), EXIT_NOT_RUNNING)
    _print_endpoints(endpoints)


@main.command()
@state_dir_option
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
def inventory(state_dir: Path | None, output: str) -> None:
    """Every instance that exists in any of the three clouds: the ground truth for leak checks."""
    rows = _admin(state_dir, "GET", "/inventory")["instances"]
    if output == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    _table(rows, ("provider", "id", "name", "state", "scope", "region", "reservation_id"))


@main.command()
@state_dir_option
@click.option("--provider", type=click.Choice(["crusoe", "lambda", "nebius"]), help="One cloud only.")
@click.option("--since", type=click.FloatRange(min=0), help="From this world time (epoch seconds).")
@click.option("--until", type=click.FloatRange(min=0), help="Until this world time (epoch seconds; default now).")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
def billing(state_dir: Path | None, provider: str | None, since: float | None, until: float | None,
            output: str) -> None:
    """What each cloud would bill, by its own billing rule: every VM and every reservation (mock extension)."""
    import urllib.parse

    query = urllib.parse.urlencode({k: v for k, v in
                                    (("provider", provider), ("since", since), ("until", until)) if v is not None})
    body = _admin(state_dir, "GET", "/billing" + (f"?{query}" if query else ""))
    if output == "json":
        click.echo(json.dumps(body, indent=2))
        return
    vms = [{**v, "hours": f"{v['billed_seconds'] / 3600:.4f}", "cost": f"{v['cost_usd']:.4f}"} for v in body["vms"]]
    _table(vms, ("provider", "id", "name", "shape", "pricing", "hours", "cost"))
    reservations = [{**r, "cost": f"{r['cost_usd']:.4f}", "idle_cost": f"{r['idle_cost_usd']:.4f}"}
                    for r in body["reservations"]]
    if reservations:
        click.echo("")
        _table(reservations, ("provider", "id", "name", "quantity_gpus", "used_gpu_hours", "idle_gpu_hours",
                              "cost", "idle_cost"))
    totals = body["totals"]
    click.echo(f"\ntotal billed ${totals['billed_usd']:.4f}: on-demand ${totals['on_demand_usd']:.4f}, spot"
               f" ${totals['spot_usd']:.4f}, reservations ${totals['reservations_usd']:.4f}"
               f" (idle ${totals['reservations_idle_usd']:.4f})")


def _table(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> None:
    widths = {c: max([len(c)] + [len(str(r[c])) for r in rows]) for c in columns}
    click.echo("  ".join(c.upper().ljust(widths[c]) for c in columns).rstrip())
    for row in rows:
        click.echo("  ".join(str(row[c]).ljust(widths[c]) for c in columns).rstrip())


@main.command()
@state_dir_option
@click.option("--advance", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Move the world clock forward by this many seconds first (mock control).")
def clock(state_dir: Path | None, advance: float | None) -> None:
    """Print the world clock (epoch seconds) and its offset from the wall clock."""
    if advance is None:
        body = _admin(state_dir, "GET", "/clock")
    else:
        body = _admin(state_dir, "POST", "/clock", {"advance_seconds": advance})
    click.echo(f"now {body['now']:.3f}  offset {body['offset_seconds']:.3f} s")


@main.command()
@state_dir_option
@click.option("--provider", required=True, type=click.Choice(["crusoe", "lambda", "nebius"]))
@click.option("--error-rate", type=click.FloatRange(0, 1), help="Share of calls answered with 429/5xx.")
@click.option("--op-failure-rate", type=click.FloatRange(0, 1), help="Share of operations that fail.")
@click.option("--latency-ms", type=click.IntRange(min=0), help="Extra latency added to every call.")
@click.option("--drop-rate", type=click.FloatRange(0, 1), help="Share of calls done but left unanswered.")
@click.option("--seed", type=int, help="Seed of the fault sequence.")
def faults(state_dir: Path | None, provider: str, **settings: float | int | None) -> None:
    """Change fault injection of a running server (unset options keep their value)."""
    body = {k: v for k, v in settings.items() if v is not None}
    result = _admin(state_dir, "POST", f"/faults/{provider}", body)
    click.echo(f"{provider}: " + ", ".join(f"{k}={v}" for k, v in result.items()))


@main.command()
@state_dir_option
@click.option("--home", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="The home directory to write the files under (e.g. a scratch one, or ~).")
@click.option("--force", is_flag=True, help="Replace credential files that already exist.")
def credentials(state_dir: Path | None, home: Path, force: bool) -> None:
    """Write each cloud's own credential files under HOME, pointing at the running server's mock endpoints
    (~/.crusoe/config, ~/.nebius/config.yaml and credentials.json, ~/.lambda_cloud/lambda_keys; 0600), and
    print the `export` lines the files cannot hold (eval them). Exit 3 when no server runs."""
    from . import credentials as writer

    directory = _state_dir(state_dir)
    endpoints = _running(directory)
    account = endpoints.get("nebius", {}).get("service_account_id")
    nebius = _admin_call(endpoints, control.nebius_service_account_credentials, account) if account else None
    found = writer.files(endpoints, home.expanduser().resolve(), directory, nebius)
    try:
        writer.write(found, force=force)
    except (FileExistsError, OSError) as exc:
        _fail(str(exc))
    for line in writer.exports(endpoints):
        click.echo(line)
    click.echo(f"mock-clouds: wrote {', '.join(str(f.path) for f in found)}", err=True)


def _running(directory: Path) -> dict[str, Any]:
    """endpoints.json of the server of `directory`, once its admin API answers; exit 3 when none runs."""
    try:
        endpoints = control.read_endpoints(directory)
        control.admin_call(endpoints, "GET", "/health")
    except control.NotRunning as exc:
        _fail(str(exc), EXIT_NOT_RUNNING)
    return endpoints


def _admin_call(endpoints: dict[str, Any], helper: Callable[..., Any], *args: Any) -> Any:
    """`helper(endpoints, *args)` (a control function), with the CLI's exit codes for its failures."""
    try:
        return helper(endpoints, *args)
    except control.NotRunning as exc:
        _fail(str(exc), EXIT_NOT_RUNNING)
    except RuntimeError as exc:
        _fail(str(exc))


def _admin(state_dir: Path | None, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    try:
        return control.admin_call(control.read_endpoints(_state_dir(state_dir)), method, path, body)
    except control.NotRunning as exc:
        _fail(str(exc), EXIT_NOT_RUNNING)
    except RuntimeError as exc:
        _fail(str(exc))
