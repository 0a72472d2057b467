"""`vm ssh` and `vm fleet ssh`: the system's OpenSSH client, pointed at a VM's public IP and its image's user
(which VM, and the ssh processes: vm_core/ssh.py).

`vm ssh` runs exactly the command line `vm get` shows in its `ssh` field (Instance.ssh_argv), replacing the vm
process, so its exit status is ssh's (the remote command's; 255 when ssh itself fails). `vm fleet ssh` runs one
ssh per running member at once, non-interactively, each output line prefixed with the member's name.
"""

from __future__ import annotations

import functools
import os
import shlex
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from ..errors import PartialFailure, UsageError
from .app import App, completes, provider_option, with_app

if TYPE_CHECKING:
    from ..ssh import Ran, Sink

F = TypeVar("F", bound=Callable[..., Any])


def ssh_key_option(fn: F) -> F:
    """`--ssh-key PATH`: the public key for new VMs, read and checked while parsing (UsageError, exit 2), and
    `--no-ssh-key`: none on purpose (sshkeys.NO_KEY). The command gets one `ssh_public_key`: the key, NO_KEY, or
    None for the key rule (sshkeys.py)."""
    from ..sshkeys import NO_KEY

    def read(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        from ..sshkeys import read_public_key

        try:
            return None if value is None else read_public_key(value)
        except UsageError as exc:
            raise UsageError(f"--ssh-key {exc.message}", suggestion=exc.hint) from None

    @functools.wraps(fn)
    def command(*args: Any, no_ssh_key: bool, ssh_public_key: str | None, **kwargs: Any) -> Any:
        if no_ssh_key and ssh_public_key is not None:
            raise UsageError("--ssh-key and --no-ssh-key contradict each other: give one")
        return fn(*args, ssh_public_key=NO_KEY if no_ssh_key else ssh_public_key, **kwargs)

    command = click.option("--no-ssh-key", is_flag=True,
                           help="Create the VMs without any SSH key of yours: nobody can log in to them.")(command)
    return cast(F, click.option("--ssh-key", "ssh_public_key", metavar="PATH", callback=read,
                        help="Public key file (e.g. ~/.ssh/id_ed25519.pub) to log in to the new VMs with"
                             " (default: the provider's ssh_public_key setting, else ~/.ssh/id_ed25519.pub,"
                             " id_ecdsa.pub or id_rsa.pub). Never a private key.")(command))


@click.command("ssh")
@click.argument("target", metavar="NAME|ID", shell_complete=completes("vm_names"))
@click.argument("command", nargs=-1, metavar="[-- COMMAND...]")
@provider_option(required=False)
@with_app
def ssh(app: App, target: str, command: tuple[str, ...], provider: str | None) -> None:
    """Log in to a VM (or run COMMAND there) with the system's ssh, as its image's user at its public IP.

    NAME|ID is looked up in every configured provider (or in --provider's): a name several VMs have is refused
    (exit 2, listing them); none: exit 3. Exits with ssh's status (the remote command's; 255 if ssh failed).

    \b
    vm ssh train-1
    vm ssh 0920582c7ff041399e34823a0be62549 --provider lambda -- nvidia-smi -L
    """
    from ..ssh import find_instance, find_ssh, reachable

    program = find_ssh()
    instance = reachable(find_instance(app.session(), target, provider, app.output.warn))
    argv = instance.ssh_argv(command)
    app.output.progress(shlex.join(argv))
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(program, argv)


@click.command("ssh")
@click.argument("name", shell_complete=completes("fleets"))
@click.argument("command", nargs=-1, required=True, metavar="-- COMMAND...")
@with_app
def fleet_ssh(app: App, name: str, command: tuple[str, ...]) -> None:
    """Run COMMAND on every running member of fleet NAME at once, each output line prefixed with the member.

    ssh runs without a terminal (BatchMode: no prompts; a new VM's host key is accepted, a changed one refused;
    30 s to connect).
    Exit 0 when it succeeded everywhere; else 7, listing the members where it failed. With -o json: one object
    per member (member, provider, id, exit_code, stdout, stderr) once all are done.

    \b
    vm fleet ssh train -- nvidia-smi -L
    """
    from ..ssh import find_ssh, fleet_members, run_everywhere

    program = find_ssh()
    store, _, connected = app.client().recorded_fleet(name)
    members = fleet_members(store, connected, name)
    printer = _Collector() if app.output.json else _Prefixer()
    ran = run_everywhere(program, members.targets, command, printer.sink)
    if isinstance(printer, _Collector):  # --json
        app.output.data([printer.document(r) for r in ran if r.error is None])
    failures = members.failures + [(r.member, failure) for r in ran if (failure := r.failure) is not None]
    if failures:
        listing = ", ".join(m for m, _ in failures)
        app.fail(PartialFailure(f"{len(failures)} of {members.running} members failed: {listing}"), failures)


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


class _Collector:
    """Keeps every member's output for the JSON document."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lines: dict[str, dict[str, list[str]]] = {}

    def sink(self, member: str) -> Sink:
        with self._lock:
            lines = self._lines.setdefault(member, {"stdout": [], "stderr": []})

        def write(kind: str, line: str) -> None:
            lines[kind].append(line)

        return write

    def document(self, ran: Ran) -> dict[str, Any]:
        lines = self._lines.get(ran.member, {"stdout": [], "stderr": []})
        return {"member": ran.member, "provider": ran.instance.provider, "id": ran.instance.id,
                "exit_code": ran.code, "stdout": "".join(f"{line}\n" for line in lines["stdout"]),
                "stderr": "".join(f"{line}\n" for line in lines["stderr"])}
