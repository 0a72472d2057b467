"""`vm ssh` and `vm fleet ssh`: the system's OpenSSH client, pointed at a VM's public IP and its image's user.

`vm ssh` runs exactly the command line `vm get` shows in its `ssh` field (Instance.ssh_argv), replacing the vm
process, so its exit status is ssh's (the remote command's; 255 when ssh itself fails). `vm fleet ssh` runs one
ssh per running member at once (at most FANOUT at a time), non-interactively, each output line prefixed with the
member's name.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from typing import IO, Any

import click

from ..actions import fan_out
from ..errors import ConfigError, NotFound, PartialFailure, UsageError, VmError
from ..hints import Hint
from ..model import Instance, InstanceState
from .app import App, common_options, pass_app, provider_option

FANOUT = 32  # ssh processes at once in `vm fleet ssh` (pdsh's default fanout)
# No terminal answers for `vm fleet ssh`: never prompt (a password or passphrase prompt of 32 processes at once),
# accept the host key of a VM never seen before (a changed key is still refused), and give up on a member that
# does not answer within 30 s rather than holding up the fleet for the system's TCP timeout.
BATCH_OPTIONS = ("-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new", "-o", "ConnectTimeout=30")
GONE = (InstanceState.TERMINATING, InstanceState.TERMINATED)
SSH_FAILED = 255  # ssh's own exit status when it could not connect or log in


def ssh_key_option(fn: Any) -> Any:
    """`--ssh-key PATH`: the public key for new VMs, read and checked while parsing (UsageError, exit 2)."""
    def read(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        from ..sshkeys import read_public_key

        try:
            return None if value is None else read_public_key(value)
        except UsageError as exc:
            raise UsageError(f"--ssh-key {exc.message}", suggestion=exc.hint) from None

    return click.option("--ssh-key", "ssh_public_key", metavar="PATH", callback=read,
                        help="Public key file (e.g. ~/.ssh/id_ed25519.pub) to log in to the new VMs with"
                             " (default: the provider's ssh_public_key setting). Never a private key.")(fn)


def find_ssh() -> str:
    """The path of `ssh` on PATH; ConfigError (exit 4) when there is none."""
    found = shutil.which("ssh")
    if found is None:
        raise ConfigError("no `ssh` on PATH: vm runs the system's OpenSSH client",
                          suggestion="sudo apt-get install openssh-client")
    return found


@click.command("ssh")
@click.argument("target", metavar="NAME|ID")
@click.argument("command", nargs=-1, metavar="[-- COMMAND...]")
@provider_option(required=False)
@common_options
@pass_app
def ssh(app: App, target: str, command: tuple[str, ...], provider: str | None) -> None:
    """Log in to a VM (or run COMMAND there) with the system's ssh, as its image's user at its public IP.

    NAME|ID is looked up in every configured provider (or in --provider's): a name several VMs have is refused
    (exit 2, listing them); none: exit 3. Exits with ssh's status (the remote command's; 255 if ssh failed).

    \b
    vm ssh train-1
    vm ssh 0920582c7ff041399e34823a0be62549 --provider lambda -- nvidia-smi -L
    """
    program = find_ssh()
    instance = reachable(resolve(app, target, provider))
    argv = instance.ssh_argv(command)
    app.output.progress(shlex.join(argv))
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(program, argv)


def resolve(app: App, target: str, provider: str | None) -> Instance:
    """The one live VM whose id or name is `target`, searched in every configured provider at once (or in
    `provider`). UsageError listing the matches when several; NotFound when none; when none was found but a
    provider could not be searched, that provider's error."""
    session = app.session()
    if provider is not None:
        session.plugin(provider)
    names = [provider] if provider else session.configured_names()

    def matches(name: str) -> list[Instance]:
        return [i for i in session.provider(name).list_instances()
                if target in (i.id, i.name) and i.state not in GONE]

    outcomes = fan_out(matches, names)
    found = [i for o in outcomes if o.value for i in o.value]
    failures = [(o.key, o.error) for o in outcomes if o.error]
    if len(found) > 1:
        listing = "; ".join(f"{i.provider} {i.id} ({i.state.value})" for i in found)
        raise UsageError(f"{len(found)} VMs are called {target}: {listing}; name one by its id",
                         suggestion=Hint.run("ssh", found[0].id, "--provider", found[0].provider))
    for name, error in failures:
        app.output.warn(f"{name} could not be searched: {error.message}")
    if found:
        return found[0]
    if failures:
        first = failures[0][1]
        first.message = f"no VM {target} where vm could look, and {failures[0][0]} could not be searched: " \
                        f"{first.message}"
        raise first
    raise NotFound(f"no VM has the name or id {target} in {', '.join(names) or 'any configured provider'}",
                   suggestion=Hint.run("list"))


def reachable(instance: Instance) -> Instance:
    """`instance` when it runs and has a public IP; otherwise a VmError saying why it cannot be reached."""
    if instance.state is InstanceState.RUNNING and instance.public_ip:
        return instance
    where = f"{instance.provider} VM {instance.name or instance.id} ({instance.id})"
    if instance.state is InstanceState.STOPPED:
        raise VmError(f"{where} is stopped", provider=instance.provider,
                      suggestion=Hint.run("start", instance.id, "--provider", instance.provider))
    reason = f"is {instance.state.value}" if instance.state is not InstanceState.RUNNING else "has no public IP"
    raise VmError(f"{where} {reason}, so there is nothing to connect to yet", provider=instance.provider,
                  suggestion=Hint.run("get", instance.id, "--provider", instance.provider))


# ------------------------------------------------------------------------------------------ vm fleet ssh
@click.command("ssh")
@click.argument("name")
@click.argument("command", nargs=-1, required=True, metavar="-- COMMAND...")
@common_options
@pass_app
def fleet_ssh(app: App, name: str, command: tuple[str, ...]) -> None:
    """Run COMMAND on every running member of fleet NAME at once, each output line prefixed with the member.

    ssh runs without a terminal (BatchMode: no prompts; a new VM's host key is accepted, a changed one refused;
    30 s to connect).
    Exit 0 when it succeeded everywhere; else 7, listing the members where it failed. With -o json: one object
    per member (member, provider, id, exit_code, stdout, stderr) once all are done.

    \b
    vm fleet ssh train -- nvidia-smi -L
    """
    from ..fleet.store import MemberState
    from .fleet_context import fleet_providers

    program = find_ssh()
    store, _, connected = fleet_providers(app, name)
    members = [m for m in store.members(name) if m.state is MemberState.RUNNING and m.instance_id]
    if not members:
        raise VmError(f"fleet {name} has no running member", suggestion=Hint.run("fleet", "status", name))

    def look_up(member: Any) -> Instance:
        if member.provider not in connected:
            raise ConfigError(f"{member.provider} is not connected", provider=member.provider)
        return reachable(connected[member.provider].get_instance(member.instance_id))

    found = fan_out(look_up, members)
    failures: list[tuple[str, VmError]] = [(o.key.name, o.error) for o in found if o.error]
    targets = [(o.key.name, o.value) for o in found if o.value is not None]
    printer = _Collector() if app.output.json else _Prefixer()
    gate = threading.Semaphore(FANOUT)

    def run(pair: tuple[str, Instance]) -> int:
        with gate:
            return _run_one(program, pair[1].ssh_argv(command, BATCH_OPTIONS), printer.sink(pair[0]))

    for outcome in fan_out(run, targets):
        member, instance = outcome.key
        if outcome.error is not None:  # ssh could not even be started
            failures.append((member, outcome.error))
            continue
        code = outcome.value or 0
        printer.done(member, instance, code)
        if code:
            why = "ssh could not connect or log in" if code == SSH_FAILED else "the command failed"
            failures.append((member, VmError(f"exit {code} ({why})", provider=instance.provider)))
    if isinstance(printer, _Collector):  # --json
        app.output.data(printer.documents())
    if failures:
        listing = ", ".join(m for m, _ in failures)
        app.fail(PartialFailure(f"{len(failures)} of {len(members)} members failed: {listing}"), failures)


Sink = Callable[[str, str], None]  # (stream "stdout" | "stderr", one line without its newline)


def _run_one(program: str, argv: Sequence[str], sink: Sink) -> int:
    """Run ssh with no stdin, passing each line of its stdout and stderr to `sink`; its exit status."""
    process = subprocess.Popen([program, *argv[1:]], executable=program, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    errors = threading.Thread(target=_pump, args=(process.stderr, "stderr", sink), daemon=True)
    errors.start()
    _pump(process.stdout, "stdout", sink)
    errors.join()
    return process.wait()


def _pump(stream: IO[bytes], kind: str, sink: Sink) -> None:
    with stream:
        for raw in stream:
            sink(kind, raw.decode("utf-8", errors="replace").rstrip("\r\n"))


class _Prefixer:
    """Writes each line as it comes, `member: line`, to vm's stdout or stderr (whole lines, never interleaved)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def sink(self, member: str) -> Sink:
        def write(kind: str, line: str) -> None:
            stream = sys.stdout if kind == "stdout" else sys.stderr
            with self._lock:
                stream.write(f"{member}: {line}\n")
                stream.flush()

        return write

    def done(self, member: str, instance: Instance, code: int) -> None:
        return None


class _Collector:
    """Keeps every member's output for the JSON document."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lines: dict[str, dict[str, list[str]]] = {}
        self._docs: list[dict[str, Any]] = []

    def sink(self, member: str) -> Sink:
        with self._lock:
            lines = self._lines.setdefault(member, {"stdout": [], "stderr": []})

        def write(kind: str, line: str) -> None:
            lines[kind].append(line)

        return write

    def done(self, member: str, instance: Instance, code: int) -> None:
        lines = self._lines.get(member, {"stdout": [], "stderr": []})
        self._docs.append({"member": member, "provider": instance.provider, "id": instance.id, "exit_code": code,
                           "stdout": "".join(f"{line}\n" for line in lines["stdout"]),
                           "stderr": "".join(f"{line}\n" for line in lines["stderr"])})

    def documents(self) -> list[dict[str, Any]]:
        return self._docs
