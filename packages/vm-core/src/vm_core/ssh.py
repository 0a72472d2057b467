"""Reaching VMs with the system's OpenSSH client: which VM a name or id means, whether it can be reached, and
running one ssh per fleet member at once (at most FANOUT at a time), each line of its output handed to a sink.

The command lines are Instance.ssh_argv's (what `vm get` shows); nothing here prints.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

from .calls import fan_out
from .errors import ConfigError, NotFound, UsageError, VmError
from .hints import Hint
from .model import Instance, InstanceState
from .provider import Provider

if TYPE_CHECKING:
    from .fleet.store import FleetStore, MemberRecord
    from .session import Session

FANOUT = 32  # ssh processes at once for a fleet (pdsh's default fanout)
# No terminal answers for a fleet's ssh: never prompt (a password or passphrase prompt of 32 processes at once),
# accept the host key of a VM never seen before (a changed key is still refused), and give up on a member that
# does not answer within 30 s rather than holding up the fleet for the system's TCP timeout.
BATCH_OPTIONS = ("-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new", "-o", "ConnectTimeout=30")
SSH_FAILED = 255  # ssh's own exit status when it could not connect or log in

Sink = Callable[[str, str], None]  # (stream "stdout" | "stderr", one line without its newline)
Warn = Callable[[str], None]


def find_ssh() -> str:
    """The path of `ssh` on PATH; ConfigError (exit 4) when there is none."""
    found = shutil.which("ssh")
    if found is None:
        raise ConfigError("no `ssh` on PATH: vm runs the system's OpenSSH client",
                          suggestion="sudo apt-get install openssh-client")
    return found


def find_instance(session: Session, target: str, provider: str | None, warn: Warn) -> Instance:
    """The one live VM whose id or name is `target`, searched in every configured provider at once (or in
    `provider`). UsageError listing the matches when several; NotFound when none; when none was found but a
    provider could not be searched, that provider's error. `warn` is told of each provider not searched."""
    names = session.selected(provider)

    def matches(name: str) -> list[Instance]:
        return [i for i in session.provider(name).list_instances()
                if target in (i.id, i.name) and not i.state.gone]

    outcomes = fan_out(matches, names)
    found = [i for o in outcomes if o.value for i in o.value]
    failures = [(o.key, o.error) for o in outcomes if o.error]
    if len(found) > 1:
        listing = "; ".join(f"{i.provider} {i.id} ({i.state.value})" for i in found)
        raise UsageError(f"{len(found)} VMs are called {target}: {listing}; name one by its id",
                         suggestion=Hint.run("ssh", found[0].id, "--provider", found[0].provider))
    for name, error in failures:
        warn(f"{name} could not be searched: {error.message}")
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


@dataclass
class Members:
    """The running members of a fleet that ssh can reach (`targets`: member name and VM), and why each other
    running member cannot be reached (`failures`)."""

    running: int
    targets: list[tuple[str, Instance]]
    failures: list[tuple[str, VmError]]


def fleet_members(store: FleetStore, providers: Mapping[str, Provider], name: str) -> Members:
    """Each running member of fleet `name`, looked up at once in its provider; VmError when none runs."""
    from .fleet.store import MemberState

    members = [m for m in store.members(name) if m.state is MemberState.RUNNING and m.instance_id]
    if not members:
        raise VmError(f"fleet {name} has no running member", suggestion=Hint.run("fleet", "status", name))

    def look_up(member: MemberRecord) -> Instance:
        if member.provider not in providers:
            raise ConfigError(f"{member.provider} is not connected", provider=member.provider)
        return reachable(providers[member.provider].get_instance(member.instance_id))

    found = fan_out(look_up, members)
    return Members(len(members), [(o.key.name, o.value) for o in found if o.value is not None],
                   [(o.key.name, o.error) for o in found if o.error])


@dataclass
class Ran:
    """One member's ssh: its exit status, or the error that kept ssh from starting."""

    member: str
    instance: Instance
    code: int = 0
    error: VmError | None = None

    @property
    def failure(self) -> VmError | None:
        """Why it counts as failed (None: exit 0)."""
        if self.error is not None or not self.code:
            return self.error
        why = "ssh could not connect or log in" if self.code == SSH_FAILED else "the command failed"
        return VmError(f"exit {self.code} ({why})", provider=self.instance.provider)


def run_everywhere(program: str, targets: Sequence[tuple[str, Instance]], command: Sequence[str],
                   sink: Callable[[str], Sink]) -> list[Ran]:
    """Run `command` with ssh (BATCH_OPTIONS, no stdin) on every target at once, at most FANOUT at a time;
    each line of member M's output goes to sink(M). The results in the order of `targets`."""
    gate = threading.Semaphore(FANOUT)

    def run(pair: tuple[str, Instance]) -> int:
        with gate:
            return run_one(program, pair[1].ssh_argv(command, BATCH_OPTIONS), sink(pair[0]))

    return [Ran(o.key[0], o.key[1], o.value or 0, o.error) for o in fan_out(run, targets)]


def run_one(program: str, argv: Sequence[str], sink: Sink) -> int:
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
