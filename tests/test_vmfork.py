"""tests/vmfork.py: a `vm` forked from the fork server gives what executing the script gives.

The e2e and reliability suites run their `vm` commands through it; these tests hold it to subprocess.run's
result for the things those commands depend on: exit code, stdout, stderr, the run's own environment and working
directory, stdin at end of file, and falling back to executing the script when the interpreter's start-up
environment differs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import vmfork  # tests/ is on sys.path (root conftest)

VM = str(Path(sys.executable).parent / "vm")
BAD_CONFIG = '[profiles.p1]\nproviders = ["lambda"]\n'  # a config error that names the config file's path


def _exec(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([VM, *args], env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, check=False)


def _env(tmp_path: Path, home: str = "home") -> dict[str, str]:
    (tmp_path / home).mkdir(mode=0o700, exist_ok=True)
    config = tmp_path / home / "config.toml"
    config.write_text(BAD_CONFIG)
    config.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VM_", "CRUSOE_", "LAMBDA_", "NEBIUS_"))}
    return {**env, "VM_HOME": str(tmp_path / home), "HOME": str(tmp_path), "VM_PROFILE": "p1"}


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["no-such-command"], ["list", "-o", "yaml"],
                                  ["config", "show"], ["config", "show", "-o", "json"]])
def test_a_forked_vm_gives_the_executed_vms_code_and_output(tmp_path: Path, args: list[str]) -> None:
    env = _env(tmp_path)
    forked = vmfork.run([VM, *args], env, 120)
    executed = _exec(args, env)
    assert (forked.returncode, forked.stdout, forked.stderr) == (executed.returncode, executed.stdout,
                                                                 executed.stderr)
    assert forked.stdout or forked.stderr  # every one of these commands says something


def test_each_run_has_its_own_environment_and_working_directory(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = _env(tmp_path, "one"), _env(tmp_path, "two")
    assert str(tmp_path / "one") in vmfork.run([VM, "config", "show"], first, 120).stderr
    assert str(tmp_path / "two") in vmfork.run([VM, "config", "show"], second, 120).stderr
    monkeypatch.chdir(tmp_path)
    relative = vmfork.run([VM, "config", "show"], {**first, "VM_HOME": "two"}, 120)
    assert relative.returncode == 4 and "two/config.toml" in relative.stderr, relative.stderr


def test_a_run_whose_interpreter_environment_differs_executes_the_script(tmp_path: Path) -> None:
    env = _env(tmp_path)
    assert vmfork._forkable(env)
    assert not vmfork._forkable({**env, "PYTHONPATH": str(tmp_path)})
    assert not vmfork._forkable({**env, "LC_ALL": "C.UTF-8" if env.get("LC_ALL") != "C.UTF-8" else "C"})
    # the module on PYTHONPATH is only importable by a process that starts with it: the script is executed
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text("import sys; sys.stderr.write('fresh interpreter\\n')\n")
    done = vmfork.run([VM, "--version"], {**env, "PYTHONPATH": str(tmp_path / "site")}, 120)
    assert done.returncode == 0 and "fresh interpreter" in done.stderr, done.stderr


def test_a_run_past_its_timeout_is_killed_and_raises(tmp_path: Path) -> None:
    env = _env(tmp_path)
    with pytest.raises(subprocess.TimeoutExpired):
        vmfork.run([VM, "--version"], env, 0)
    assert vmfork.run([VM, "--version"], env, 120).returncode == 0  # the server still serves


def test_vm_tests_exec_makes_every_run_execute_the_script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = _env(tmp_path)
    monkeypatch.setenv("VM_TESTS_EXEC", "1")
    assert not vmfork._forkable(env)
    assert vmfork.start_mock(tmp_path / "mock-clouds", "0.002", env) is None  # vm's autostart starts them


def test_a_mock_started_by_fork_serves_and_stops_as_a_detached_one(tmp_path: Path) -> None:
    from mock_clouds import control

    env = _env(tmp_path)
    state = tmp_path / "home" / "mock-clouds"
    pid = vmfork.start_mock(state, "0.002", env)
    assert pid is not None and control.read_endpoints(state)["pid"] == pid
    assert os.getsid(pid) == pid  # its own session, as `serve --detach` gives it
    assert control.admin_call(control.read_endpoints(state), "GET", "/health")["ok"]
    assert control.stop_server(state) == pid
    assert "stopped, state saved" in (state / "server.log").read_text()
    assert (state / "state.json").exists()  # the world it saved on SIGTERM
