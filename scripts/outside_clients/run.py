#!/usr/bin/env python3
"""Run seven outside clients against this repository's mock clouds and print what each call did.

    python scripts/outside_clients/run.py [--workdir DIR] [--only NAME ...] [--time-scale F] [--gopath DIR]
                                          [--tls] [--markdown] [--keep-mocks]

Steps (README.md beside this file says more): make one virtual environment per Python client under WORKDIR/venvs
(`uv` when it is on PATH, else `python -m venv` and pip) with the pinned versions below; start the mock clouds
(`python -m mock_clouds serve --detach`, with this interpreter when it can import `mock_clouds`, else from a
venv with `mock-clouds/` installed); write the clouds' own credential files under WORKDIR/home
(`mock-clouds credentials`); run each driver with HOME there; build and run the Go driver; print a table.

Exit status: 0 when no call failed, 1 when one did, 2 when the harness itself could not run (bad arguments, an
install that failed, mocks that did not start). A client that cannot be run at all (no Go toolchain, Go modules
unreachable) is reported BLOCKED with the reason and does not change the exit status.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
DRIVER_TIMEOUT = 1800  # seconds per driver; the slowest (SkyPilot, Nebius) takes about a minute here

# venv name -> pinned requirements
VENVS: dict[str, list[str]] = {
    "skypilot": ["skypilot[lambda,nebius]==0.14.1"],
    "dstack": ["dstack[lambda,nebius,crusoe]==0.22.5"],  # pins gpuhunt==0.1.34
    "lambda-cli": ["lambda-cloud-cli==0.1.36"],
}
VERSIONS = {"skypilot": ["skypilot", "nebius"], "dstack": ["dstack", "gpuhunt", "nebius"],
            "lambda-cli": ["lambda-cloud-cli"]}


@dataclass(frozen=True)
class Driver:
    name: str  # for --only
    client: str  # as the driver reports it
    venv: str  # "" for the Go driver
    script: str


DRIVERS = (
    Driver("skypilot-lambda", "SkyPilot, Lambda", "skypilot", "skypilot_lambda.py"),
    Driver("skypilot-nebius", "SkyPilot, Nebius", "skypilot", "skypilot_nebius.py"),
    Driver("dstack-lambda", "dstack, Lambda", "dstack", "dstack_lambda.py"),
    Driver("dstack-nebius", "dstack, Nebius", "dstack", "dstack_nebius.py"),
    Driver("dstack-crusoe", "dstack, Crusoe", "dstack", "dstack_crusoe.py"),
    Driver("client-go", "Crusoe client-go", "", "clientgo"),
    Driver("lambda-cli", "lambda-cloud-cli", "lambda-cli", "lambda_cli.py"),
)


class HarnessError(Exception):
    """The harness cannot go on (exit 2)."""


def log(message: str) -> None:
    print(f"run.py: {message}", file=sys.stderr, flush=True)


def sh(args: Sequence[str], *, env: dict[str, str] | None = None, cwd: Path | None = None,
       timeout: float = 1800, out: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Runs a command, its output into `out` (appended) when given; never raises for a non-zero exit."""
    done = subprocess.run(list(args), env=env, cwd=cwd, timeout=timeout, capture_output=True, text=True,
                          check=False)
    if out is not None:
        with out.open("a", encoding="utf-8") as f:
            f.write(f"$ {' '.join(args)}\n{done.stdout}{done.stderr}\n")
    return done


def venv_python(venvs: Path, name: str) -> Path:
    return venvs / name / "bin" / "python"


def make_venv(venvs: Path, name: str, requirements: list[str], logs: Path) -> Path:
    """Creates (or reuses) venvs/NAME with `requirements`; returns its python. Raises HarnessError on failure."""
    python = venv_python(venvs, name)
    marker = venvs / name / ".requirements"
    wanted = "\n".join(requirements)
    if python.exists() and marker.exists() and marker.read_text() == wanted:
        return python
    log(f"installing {', '.join(requirements)} into {venvs / name}")
    uv = shutil.which("uv")
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    if uv:
        steps = [[uv, "venv", "-q", "--allow-existing", "-p", sys.executable, str(venvs / name)],
                 [uv, "pip", "install", "-q", "--python", str(python), *requirements]]
    else:
        steps = [[sys.executable, "-m", "venv", str(venvs / name)],
                 [str(python), "-m", "pip", "install", "-q", *requirements]]
    for step in steps:
        done = sh(step, timeout=3600, out=logs / f"install-{name}.log")
        if done.returncode != 0:
            raise HarnessError(f"installing into {name} (Python {version}) failed; see {logs}/install-{name}.log")
    marker.write_text(wanted)
    return python


def installed_versions(python: Path, names: list[str]) -> str:
    code = ("import importlib.metadata as m, sys\n"
            "print(', '.join(f'{n} {m.version(n)}' for n in sys.argv[1:]))")
    return sh([str(python), "-c", code, *names]).stdout.strip()


def mock_python(venvs: Path, logs: Path) -> Path:
    """An interpreter that can import mock_clouds: this one, else a venv with `mock-clouds/` installed."""
    if sh([sys.executable, "-c", "import mock_clouds"]).returncode == 0:
        return Path(sys.executable)
    return make_venv(venvs, "mocks", [str(REPO / "mock-clouds")], logs)


class Mocks:
    """The mock clouds in the background (`serve --detach`), stopped by stop()."""

    def __init__(self, python: Path, state: Path, home: Path, time_scale: float, logs: Path, tls: bool) -> None:
        self.python, self.state, self.logs = python, state, logs
        serve = [str(python), "-m", "mock_clouds", "serve", "--detach", "--state-dir", str(state),
                 "--time-scale", str(time_scale), *(["--tls"] if tls else [])]
        if sh(serve, timeout=120, out=logs / "mocks.log").returncode != 0:
            raise HarnessError(f"the mock clouds did not start; see {logs}/mocks.log")
        credentials = [str(python), "-m", "mock_clouds", "credentials", "--state-dir", str(state), "--home",
                       str(home), "--force"]
        done = sh(credentials, out=logs / "mocks.log")
        if done.returncode != 0:
            self.stop()
            raise HarnessError(f"writing the credential files failed; see {logs}/mocks.log")
        self.endpoints = state / "endpoints.json"
        # the `export NAME=VALUE` lines the files cannot hold: with TLS, the CA for OpenSSL, requests and grpcio
        self.exports = dict(shlex.split(line)[1].split("=", 1) for line in done.stdout.splitlines()
                            if line.startswith("export "))

    def inventory(self) -> list[dict[str, object]]:
        done = sh([str(self.python), "-m", "mock_clouds", "inventory", "--state-dir", str(self.state), "-o", "json"])
        if done.returncode != 0:
            return []
        document = json.loads(done.stdout)
        rows = document.get("instances", document) if isinstance(document, dict) else document
        return [r for r in rows if isinstance(r, dict)]

    def stop(self) -> None:
        sh([str(self.python), "-m", "mock_clouds", "stop", "--state-dir", str(self.state)], out=self.logs / "mocks.log")


def record(results: Path, client: str, call: str, result: str, detail: str) -> None:
    with results.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"client": client, "call": call, "result": result, "detail": detail[:400]}) + "\n")


def run_python_driver(driver: Driver, python: Path, env: dict[str, str], results: Path, logs: Path) -> None:
    started = time.monotonic()
    try:
        done = sh([str(python), str(HERE / driver.script)], env=env, cwd=HERE, timeout=DRIVER_TIMEOUT,
                  out=logs / f"{driver.name}.log")
    except subprocess.TimeoutExpired:
        record(results, driver.client, "driver", "FAIL", f"did not finish within {DRIVER_TIMEOUT} s")
        return
    if "Traceback" in done.stderr and done.returncode not in (0, 1):
        record(results, driver.client, "driver", "FAIL", done.stderr.strip().splitlines()[-1])
    log(f"{driver.name}: exit {done.returncode} after {time.monotonic() - started:.0f} s")


def go_build(gopath: Path | None, logs: Path, bin_path: Path) -> str:
    """Builds the Go driver into bin_path; returns "" on success, else why it is blocked (the exact error)."""
    go = shutil.which("go")
    if go is None:
        return "no Go toolchain on PATH (Debian: apt-get install golang-go)"
    env = dict(os.environ)
    source = HERE / "clientgo"
    if gopath is not None:  # GOPATH mode: the dependencies' sources are already there
        env |= {"GO111MODULE": "off", "GOPATH": str(gopath) + os.pathsep + env.get("GOPATH", "/usr/share/gocode")}
        done = sh([go, "build", "-o", str(bin_path), "."], env=env, cwd=source, out=logs / "client-go-build.log")
    else:  # module mode: go.mod's requirements from the module proxy
        work = Path(tempfile.mkdtemp(prefix="clientgo-"))
        for name in ("main.go", "go.mod"):
            shutil.copy(source / name, work / name)
        done = sh([go, "mod", "tidy"], env=env, cwd=work, timeout=600, out=logs / "client-go-build.log")
        if done.returncode == 0:
            done = sh([go, "build", "-o", str(bin_path), "."], env=env, cwd=work, out=logs / "client-go-build.log")
    if done.returncode != 0:
        lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
        return f"Go build step failed: {lines[-1] if lines else 'no output'}"
    return ""


def run_go_driver(driver: Driver, gopath: Path | None, env: dict[str, str], results: Path, logs: Path) -> None:
    bin_path = logs.parent / "clientgo-bin"
    blocked = go_build(gopath, logs, bin_path)
    if blocked:
        record(results, driver.client, "build", "BLOCKED", blocked)
        log(f"{driver.name}: BLOCKED: {blocked}")
        return
    try:
        done = sh([str(bin_path)], env=env, timeout=DRIVER_TIMEOUT, out=logs / f"{driver.name}.log")
        log(f"{driver.name}: exit {done.returncode}")
    except subprocess.TimeoutExpired:
        record(results, driver.client, "driver", "FAIL", f"did not finish within {DRIVER_TIMEOUT} s")


def leftovers(mocks: Mocks, results: Path) -> None:
    """INFO: VMs still alive in the mock once every driver has cleaned up after itself."""
    alive = [r for r in mocks.inventory() if str(r.get("state", "")).lower() not in ("deleted", "terminated")]
    detail = ", ".join(f"{r.get('provider')} {r.get('name')} {r.get('state')}" for r in alive) or "none"
    record(results, "(mock clouds)", "VMs left after every driver", "INFO", detail)


def table(rows: list[dict[str, str]], markdown: bool) -> str:
    clients = list(dict.fromkeys(r["client"] for r in rows))
    kinds = ("PASS", "FAIL", "INFO", "BLOCKED")
    lines = []
    if markdown:
        lines += ["| client | PASS | FAIL | INFO | BLOCKED |", "|---|---|---|---|---|"]
    else:
        lines.append(f"{'client':22} " + " ".join(f"{k:>7}" for k in kinds))
    for client in clients:
        counts = [sum(1 for r in rows if r["client"] == client and r["result"] == k) for k in kinds]
        if markdown:
            lines.append(f"| {client} | " + " | ".join(str(c) for c in counts) + " |")
        else:
            lines.append(f"{client:22} " + " ".join(f"{c:>7}" for c in counts))
    lines.append("")
    for client in clients:
        lines.append(f"### {client}" if markdown else f"== {client}")
        if markdown:
            lines += ["", "| result | call | detail |", "|---|---|---|"]
        for r in (r for r in rows if r["client"] == client):
            detail = r["detail"].replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {r['result']} | {r['call']} | {detail[:200]} |" if markdown
                         else f"  {r['result']:7} {r['call']}: {detail[:160]}")
        lines.append("")
    return "\n".join(lines)


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, help="where venvs, the mocks' state, HOME and logs go "
                        "(default: a new temporary directory; reuse one to skip the installs)")
    parser.add_argument("--only", action="append", choices=[d.name for d in DRIVERS], help="run only these drivers")
    parser.add_argument("--time-scale", type=float, default=0.05,
                        help="the mocks' time scale (default 0.05: a 180 s Lambda boot takes 9 s)")
    parser.add_argument("--gopath", type=Path, help="build the Go driver in GOPATH mode from this GOPATH "
                        "(github.com/crusoecloud/client-go, github.com/antihax/optional, golang.org/x/oauth2 under "
                        "src/), for machines without the Go module proxy")
    parser.add_argument("--tls", action="store_true", help="serve the mocks over TLS (HTTPS, gRPC over TLS); the "
                        "clients trust the mock's CA through SSL_CERT_FILE, REQUESTS_CA_BUNDLE and, for pysdk, "
                        "channel credentials")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--keep-mocks", action="store_true", help="leave the mock clouds running afterwards")
    args = parser.parse_args(argv)
    if args.time_scale <= 0:
        parser.error("--time-scale must be positive")
    return args


def main(argv: Sequence[str]) -> int:
    args = parse(argv)
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="outside-clients-"))).resolve()
    venvs, logs, home, state = workdir / "venvs", workdir / "logs", workdir / "home", workdir / "state"
    for d in (venvs, logs, home):
        d.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(state, ignore_errors=True)  # a fresh world each run
    results = workdir / "results.jsonl"
    results.unlink(missing_ok=True)
    chosen = [d for d in DRIVERS if not args.only or d.name in args.only]
    log(f"workdir {workdir}")
    try:
        pythons = {}
        for name in dict.fromkeys(d.venv for d in chosen if d.venv):
            pythons[name] = make_venv(venvs, name, VENVS[name], logs)
            record(results, "(installed)", name, "INFO", installed_versions(pythons[name], VERSIONS[name]))
        mocks = Mocks(mock_python(venvs, logs), state, home, args.time_scale, logs, args.tls)
    except (HarnessError, subprocess.TimeoutExpired) as e:
        log(f"error: {e}")
        return 2
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEBIUS_", "CRUSOE_", "LAMBDA_"))}
    env |= mocks.exports
    env |= {"HOME": str(home), "OC_ENDPOINTS": str(mocks.endpoints), "OC_RESULTS": str(results),
            "PYTHONDONTWRITEBYTECODE": "1", "SKYPILOT_DISABLE_USAGE_COLLECTION": "1",
            "DSTACK_DISABLE_USAGE_COLLECTION": "1"}
    try:
        for driver in chosen:
            log(f"{driver.name}: running")
            if driver.venv:
                run_python_driver(driver, pythons[driver.venv], env, results, logs)
            else:
                run_go_driver(driver, args.gopath, env, results, logs)
        leftovers(mocks, results)
    finally:
        if not args.keep_mocks:
            mocks.stop()
    rows = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines() if line.strip()]
    print(table(rows, args.markdown))
    log(f"results {results}, logs {logs}")
    return 1 if any(r["result"] == "FAIL" for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
