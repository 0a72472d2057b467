"""The state of one `vm` invocation (output, options, the session) and the options shared by commands.

`-o`, `-q`, `--debug` and `--profile` are accepted before the command (`vm -o json list`) and after it
(`vm list -o json`); the latter wins.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, TypeVar

import click

from ..errors import Cancelled, VmError
from .output import FORMATS, TABLE, Output

if TYPE_CHECKING:
    from ..api.client import Client
    from ..api.confirm import Confirmation
    from ..api.outcome import Outcome
    from ..config import Config
    from ..hints import Hint
    from ..session import Session

F = TypeVar("F", bound=Callable[..., Any])
_debugged: list[str] = []  # the loggers _debug_logging set up (vm_core's and each plugin's `debug_loggers`)


class App:
    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self.environ = os.environ if environ is None else environ
        self.output = Output(TABLE)
        self.debug = False
        self.profile_name: str | None = self.environ.get("VM_PROFILE") or None
        self.profile_asked_by = "VM_PROFILE" if self.profile_name else ""  # or "--profile"
        self._session: Session | None = None
        self._client: Client | None = None
        self.config: Config | None = None  # the loaded config.toml, once session() ran
        self.argv: list[str] = []  # the command line after the program's name (a hint may repeat it)

    def session(self) -> Session:
        """The session of the selected profile (reads the config file; raises ConfigError)."""
        if self._session is None:
            from ..config import Paths, load_config
            from ..plugins import provider_plugins
            from ..session import open_session

            paths = Paths.from_env(self.environ)
            self.config = load_config(paths.config_file)
            self._session = open_session(self.config, self.profile_name, paths, provider_plugins(), self.environ,
                                         self.output.progress, asked_by=self.profile_asked_by)
            self.output.redact = self.redact
            if self.debug:
                _debug_logging(self.redact, _plugin_loggers(self._session))
        return self._session

    def use_profile(self, name: str | None) -> Session:
        """Switch to profile `name` (a fleet's own profile; None: the default one): a new session; raises
        ConfigError if unknown."""
        self.profile_name, self._session = name, None
        self.profile_asked_by = "the fleet's profile" if name else ""
        return self.session()

    def client(self) -> Client:
        """The Python API over this invocation's session (progress and warnings on stderr); acting on a recorded
        fleet switches to the fleet's own profile unless --profile or VM_PROFILE named one."""
        if self._client is None:
            from ..api.client import Client

            explicit = self.profile_name is not None
            self._client = Client(self.session(), progress=self.output.progress, warn=self.output.warn,
                                  open_profile=self.use_profile, profile_explicit=explicit)
        return self._client

    def conclude(self, report: Outcome, *, as_warnings: bool = False) -> None:
        """End the command as `report` ended: nothing when it has no problem; else its error (and each target's
        failure; as warnings if `as_warnings`, except in JSON) on stderr and the exit code of its kind."""
        problem = report.problem
        if problem is None:
            return
        failures = list(problem.failures)
        if failures and as_warnings and not self.output.json:
            for target, error in failures:
                self.output.warn(f"{target}: {error.message}")
            failures = []
        self.debug_causes([f for _, f in problem.failures if f is not problem.error])
        self.fail(problem.error, failures)

    def confirmer(self, *, yes: bool) -> Callable[[Confirmation], None] | None:
        """How a verb asks before it acts: on stderr, only when a person is there (see on_terminal) and not
        `yes`; None (no question) otherwise."""
        if yes or not on_terminal():
            return None

        def confirm(question: Confirmation) -> None:
            for line in question.lines:
                self.output.notice(line)
            ask(question.question, again=question.again, undone=question.undone)

        return confirm

    def redact(self, text: str) -> str:
        """`text` without any secret value the session has seen."""
        for secret in tuple(getattr(self._session, "secrets", ())):  # a copy: providers connect in other threads
            if len(secret) >= 4:
                text = text.replace(secret, "<redacted>")
        return text

    def fail(self, error: VmError, failures: list[tuple[str, VmError]] | None = None) -> NoReturn:
        """Report `error` (under --debug with the traceback of its cause) and end the command with its exit code."""
        from ..api.outcome import ExitKind
        from .exits import exit_for

        self.debug_causes([error])
        self.output.error(error, failures or [])
        raise click.exceptions.Exit(exit_for(ExitKind.of(error)))

    def debug_causes(self, errors: list[VmError]) -> None:
        """Under --debug, the tracebacks of what caused these errors (SDK errors, bugs in plugins)."""
        if self.debug:
            for cause in [e.__cause__ for e in errors if e.__cause__ is not None]:
                self.output.debug(self.redact("".join(traceback.format_exception(cause))).rstrip())


yes_option = click.option("-y", "--yes", is_flag=True,
                          help="Do not ask for confirmation (vm asks only when stdin and stderr are a terminal).")


def on_terminal() -> bool:
    """Whether a person is there to answer: stdin and stderr are both a terminal."""
    return sys.stdin.isatty() and sys.stderr.isatty()


def ask(question: str, *, again: Hint, undone: str = "destroyed") -> None:
    """Ask `question` (default no) on stderr. Raises Cancelled ("cancelled: nothing was UNDONE", exit 1; its
    hint: `again`) unless the answer is yes; EOF or Ctrl-C count as no."""
    try:
        agreed = click.confirm(question, default=False, err=True)
    except click.Abort:
        agreed = False
    if not agreed:
        raise Cancelled(f"cancelled: nothing was {undone}", suggestion=again)


class _Redacting(logging.Formatter):
    def __init__(self, redact: Callable[[str], str]) -> None:
        super().__init__("debug: %(name)s: %(message)s")
        self._redact = redact

    def format(self, record: logging.LogRecord) -> str:
        return self._redact(super().format(record))


class _DebugHandler(logging.StreamHandler[TextIO]):
    """Writes to the sys.stderr of the moment (so it follows redirection, as in tests)."""

    def __init__(self, redact: Callable[[str], str]) -> None:
        super().__init__()
        self.setFormatter(_Redacting(redact))

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


def _plugin_loggers(session: Session) -> list[str]:
    """The loggers of the provider plugins' SDKs: each plugin's optional `debug_loggers`."""
    return [name for plugin in session.plugins.load_all().values() for name in plugin.debug_loggers]


def _debug_logging(redact: Callable[[str], str], loggers: Sequence[str]) -> None:
    """Log the SDKs' HTTP/gRPC calls (and vm-core's decisions) on stderr, secrets redacted."""
    stop_debug_logging()
    handler = _DebugHandler(redact)
    for name in dict.fromkeys(("vm_core", *loggers)):
        logger = logging.getLogger(name)
        logger.setLevel(logging.DEBUG)
        logger.addHandler(handler)
        _debugged.append(name)


def stop_debug_logging() -> None:
    """Undo _debug_logging (for running vm several times in one process)."""
    for name in _debugged:
        logger = logging.getLogger(name)
        for old in [h for h in logger.handlers if isinstance(h, _DebugHandler)]:
            logger.removeHandler(old)
            logger.setLevel(logging.NOTSET)
    _debugged.clear()


def _set_format(ctx: click.Context, _: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.ensure_object(App).output.format = value


def _set_quiet(ctx: click.Context, _: click.Parameter, value: bool) -> None:
    if value:
        ctx.ensure_object(App).output.quiet = True


def _set_debug(ctx: click.Context, _: click.Parameter, value: bool) -> None:
    if value:
        ctx.ensure_object(App).debug = True


def _set_profile(ctx: click.Context, _: click.Parameter, value: str | None) -> None:
    if value is not None:
        from .complete import PROFILE_NAMED

        app = ctx.ensure_object(App)
        app.profile_name, app.profile_asked_by = value, "--profile"
        ctx.meta[PROFILE_NAMED] = value  # for the completers, which read the command line before any command runs


def completes(what: str) -> Callable[[click.Context, click.Parameter, str], list[str]]:
    """The `shell_complete` of a parameter: `complete_WHAT` of cli/complete.py (fleets, instance_ids,
    vm_names, gpus, gpu_types, profiles), imported on TAB only."""
    def complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
        from . import complete as completers

        found: list[str] = getattr(completers, f"complete_{what}")(ctx, param, incomplete)
        return found

    return complete


_complete_profiles = completes("profiles")


def common_options(fn: F) -> F:
    """-o/--output, -q/--quiet, --debug and --profile, stored on the App as they are parsed."""
    options = [
        click.option("-o", "--output", type=click.Choice(FORMATS), default=None, expose_value=False,
                     callback=_set_format, help="Output format (default: table)."),
        click.option("-q", "--quiet", is_flag=True, expose_value=False, callback=_set_quiet,
                     help="No progress messages."),
        click.option("--debug", is_flag=True, expose_value=False, callback=_set_debug,
                     help="Log API calls (secrets redacted); tracebacks on internal errors."),
        click.option("--profile", metavar="NAME", default=None, expose_value=False, callback=_set_profile,
                     shell_complete=_complete_profiles,
                     help="Configuration profile (default: $VM_PROFILE, else the config's default_profile, else auto:"
                          " the clouds whose own credentials are found, else local: the embedded mock clouds)."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


pass_app = click.make_pass_decorator(App, ensure=True)


def with_app(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The last decorators of every command: common_options, and the App passed as the first argument."""
    return common_options(pass_app(fn))


def _complete_providers(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    from ..plugins import provider_plugins

    return [n for n in provider_plugins().names() if n.startswith(incomplete)]


def provider_option(required: bool = True) -> Callable[[F], F]:
    return click.option("--provider", "-p", "provider", required=required, metavar="NAME",
                        shell_complete=_complete_providers,
                        help="Provider (see `vm providers`)." + ("" if required else " Default: every configured."))


class PositiveNumber(click.ParamType[float]):
    """A positive, finite number (click's FloatRange lets nan and inf through). Subclasses word the two
    refusals (`not_a_number`, `not_positive`: format strings of the value's repr)."""

    not_a_number = "{} is not a number"
    not_positive = "{} is not a positive, finite number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(self.not_a_number.format(repr(value)), param, ctx)
        if not math.isfinite(number) or number <= 0:
            self.fail(self.not_positive.format(repr(value)), param, ctx)
        return number


class Seconds(PositiveNumber):
    """A positive, finite number of seconds."""

    name = "seconds"
    not_a_number = "{} is not a number of seconds"
    not_positive = "{} is not a positive, finite number of seconds"


SECONDS = Seconds()


class Price(PositiveNumber):
    """A cap in USD per hour: a positive, finite number."""

    name = "usd_per_hour"
    not_a_number = "{} is not a price in USD per hour, e.g. 25 or 12.50"
    not_positive = "{} is not a positive price in USD per hour"


def timeout_option(help: str | None = None) -> Callable[[F], F]:
    """The --timeout option (seconds; default vm_core.calls.DEFAULT_TIMEOUT, the one default of every wait)."""
    from ..calls import DEFAULT_TIMEOUT

    return click.option("--timeout", type=SECONDS, default=DEFAULT_TIMEOUT, show_default=True, metavar="SECONDS",
                        help=help)


def wait_options(fn: F) -> F:
    fn = timeout_option("How long to wait before giving up (exit 9).")(fn)
    return click.option("--no-wait", "no_wait", is_flag=True,
                        help="Return once the cloud accepted the action, printing the operation id.")(fn)
