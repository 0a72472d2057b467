"""`vm`: one CLI for GPU VMs on Crusoe Cloud, Lambda Cloud and Nebius AI Cloud.

Start-up stays cheap: the command modules (and through them the SDKs, requests and grpc) are imported only when
their command runs; `vm --help` and `vm --version` import click and this module only.
"""

from __future__ import annotations

import gc
import importlib
import signal
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

import click

from .. import __version__
from ..errors import Interrupted, UsageError, VmError
from .app import App, common_options, stop_debug_logging
from .argv import wants_json

# name -> (module:attribute, one-line help). The help is written here so that `vm --help` imports nothing.
COMMANDS: dict[str, tuple[str, str]] = {
    "list": ("vm_core.cli.cmd_instances:list_command", "List the VMs of every configured provider."),
    "create": ("vm_core.cli.cmd_create:create", "Create one or several GPU VMs."),
    "get": ("vm_core.cli.cmd_instances:get", "Show one VM."),
    "stop": ("vm_core.cli.cmd_lifecycle:stop", "Stop VMs (where the provider can)."),
    "start": ("vm_core.cli.cmd_lifecycle:start", "Start stopped VMs."),
    "reboot": ("vm_core.cli.cmd_lifecycle:reboot", "Reboot VMs."),
    "destroy": ("vm_core.cli.cmd_lifecycle:destroy", "Destroy VMs (already gone counts as success)."),
    "ssh": ("vm_core.cli.cmd_ssh:ssh", "Log in to a VM (or run a command there) with the system's ssh."),
    "fleet": ("vm_core.cli.cmd_fleet:fleet", "Fleets: groups of VMs spread across providers."),
    "events": ("vm_core.cli.cmd_events:events", "What happened to the fleets: who did what, when."),
    "watchdog": ("vm_core.cli.cmd_watchdog:watchdog", "Look after the fleets over time: TTLs, maintained counts."),
    "offers": ("vm_core.cli.cmd_catalog:offers", "Where a GPU type can be had, cheapest first."),
    "images": ("vm_core.cli.cmd_images:images", "The images a cloud offers for a machine, the default marked."),
    "reservations": ("vm_core.cli.cmd_reservations:reservations",
                     "Reservations: their VMs, idle GPU-hours and when they end."),
    "audit": ("vm_core.cli.cmd_audit:audit", "Whose each VM of the accounts is, and its $/h (read-only)."),
    "providers": ("vm_core.cli.cmd_catalog:providers", "Provider plugins, endpoints and capabilities."),
    "cost": ("vm_core.cli.cmd_cost:cost", "What the VMs vm created have cost (no cloud is asked)."),
    "config": ("vm_core.cli.cmd_config:config", "Show the configuration (secrets redacted)."),
    "completion": ("vm_core.cli.cmd_completion:completion", "Print a shell completion script."),
}

EPILOG = ("Exit codes: 0 ok, 1 other error, 2 bad input, 3 not found, 4 auth/config, 5 unsupported by the provider,"
          " 6 capacity/quota/budget, 7 partial failure, 8 transient (retry), 9 timeout, 130 interrupted.")


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use, from COMMANDS."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, _, attribute = COMMANDS[cmd_name][0].partition(":")
        command: click.Command = getattr(importlib.import_module(module), attribute)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, text) for name, (_, text) in COMMANDS.items()])


@click.group(cls=LazyGroup, epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="vm", message="%(prog)s %(version)s")
@common_options
def cli() -> None:
    """One CLI for GPU VMs on Crusoe Cloud, Lambda Cloud and Nebius AI Cloud.

    Without a config file, vm uses the `local` profile: mock clouds it starts in the background.
    """


def run(argv: Sequence[str] | None = None) -> int:
    """Run `vm` with `argv` (default: sys.argv[1:]) and return its exit code. Never raises."""
    args = list(sys.argv[1:] if argv is None else argv)
    app = App()
    app.argv = args
    try:
        result = cli.main(args=args, prog_name="vm", standalone_mode=False, obj=app)
        return result if isinstance(result, int) else 0
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.format_message(), err=True)
        return UsageError.exit_code
    except click.UsageError as exc:
        command = exc.ctx.command_path if exc.ctx else "vm"
        from ..hints import Command, Hint

        program, *path = command.split()  # click's path starts with the program's name
        return _report(app, args, UsageError(exc.format_message(), suggestion=Hint.say("see {}",
                                                                                        Command.of(*path, "--help"))))
    except click.ClickException as exc:
        return _report(app, args, VmError(exc.format_message()))
    except (click.Abort, KeyboardInterrupt):
        return _report(app, args, Interrupted("interrupted"))
    except VmError as exc:
        return _report(app, args, exc)
    except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback unless --debug
        return _report(app, args, VmError(f"internal error: {type(exc).__name__}: {exc}"), exc)
    finally:
        stop_debug_logging()


def _report(app: App, args: Sequence[str], error: VmError, cause: BaseException | None = None) -> int:
    if wants_json(args):
        app.output.format = "json"
    cause = cause or error.__cause__
    if app.debug and cause is not None:
        app.output.debug(app.redact("".join(traceback.format_exception(cause))).rstrip())
    app.output.error(error)
    from ..api.outcome import ExitKind
    from .exits import exit_for

    return exit_for(ExitKind.of(error))




def main() -> NoReturn:
    """The `vm` console script; never returns (cli/exiting.py: the process ends without the interpreter's
    teardown when no other thread runs, and a reader that closed its pipe early changes no exit code). A Ctrl-C
    that comes after the command finished (while the process exits) changes nothing and is ignored; one that
    escapes `run` (during its last clean-up) is exit 130, never a traceback."""
    # One command is a short process that allocates mostly acyclic objects (modules, messages, records): collecting
    # the youngest generation every 700 allocations, Python's default, costs about 5 % of importing the SDKs and of
    # decoding large listings. A higher threshold still collects cycles.
    gc.set_threshold(20_000, 10, 10)
    from .exiting import exit_process, tolerate_closed_pipes

    tolerate_closed_pipes()
    try:
        code = run()
    except KeyboardInterrupt:
        code = Interrupted.exit_code
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_process(code)
