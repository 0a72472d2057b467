"""A profile resolved into connected providers, lazily: only the providers a command needs are loaded.

Settings of a provider, highest precedence first: its table in the profile ([profiles.NAME.PROVIDER]), the
embedded clouds (profiles with `embedded = true`: the `vm_core.embedded` entry point that serves the provider,
started on first use; see embedded.py), the cloud's own credentials (its plugin's `native_credentials`: its
variables and files, read as its own tools read them; a plugin without it: its settings' `env` variables), and
last, for a plugin with an `ssh_public_key` setting that nothing above sets (nor `ssh_key_name`), the user's own
key in ~/.ssh (sshkeys.default_key), in every profile.
Embedded profiles never read a cloud's own credentials for the providers their mock clouds serve: real and mock
clouds are not mixed in one profile unless its tables say so. A provider is configured in a profile when it has
a table there, when the profile is embedded and embedded clouds serve it, or when its own credentials are found.

The `auto` profile (config.py) becomes, here, the clouds whose own credentials are found, or `local` when none
are (`open_session`).

A session reads each plugin's facts from its record (plugins.LoadedPlugin, what `Session.plugin` returns) and is
the one reader of the environment for settings: its `environ` gives the settings' env variables and the clouds'
own credentials, and the settings of a plugin with a `settings_type` are parsed once, from the resolved values alone.
"""

from __future__ import annotations

import enum
import logging
import queue
import threading
import time
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .config import LOCAL_PROFILE, Config, Paths, Profile
from .errors import AuthError, ConfigError, Timeout, Transient, UsageError, VmError
from .hints import Command, Hint, Words
from .native import NONE, NativeCredentials, home_of
from .plugins import LoadedPlugin, ProviderSet
from .provider import (
    DescribesEndpoint,
    Provider,
    SupportsReboot,
    SupportsReservations,
    SupportsStopStart,
)

if typing.TYPE_CHECKING:
    from .embedded import EmbeddedClouds
    from .plugins import PluginSet

Notify = Callable[[str], None]
SEE_CONFIG = Hint.say("see {}", Command.of("config", "show"))
log = logging.getLogger(__name__)


class Resolved(typing.NamedTuple):
    """A setting's value and where it comes from: `source` is "profile", "embedded", "env", "file" or
    "default"; `origin` says where for a person ("env CRUSOE_SECRET_KEY", "~/.crusoe/config [default]",
    "config.toml [profiles.work.crusoe]")."""

    value: Any
    source: str
    origin: str


class Session:
    def __init__(self, profile: Profile, paths: Paths, plugins: ProviderSet, environ: Mapping[str, str],
                 notify: Notify, embedded: PluginSet | None = None, *, chosen_by: str = "") -> None:
        self.profile = profile
        self.paths = paths
        self.plugins = plugins
        self._embedded_set = embedded  # the vm_core.embedded entry points (found on first use)
        self.environ = environ
        self.notify = notify
        self.chosen_by = chosen_by  # why this profile: "--profile", "default_profile", "auto: ..." (config show)
        self.secrets: set[str] = set()  # every secret setting value seen, for redacting logs
        # The time source of what vm records (the spend ledger, its fleet members' times); the Python API may
        # inject another (vm_core.api.connect's clock), e.g. to follow a simulated day.
        self.clock: Callable[[], float] = time.time
        self._providers: dict[str, Provider] = {}
        self._endpoints: dict[str, dict[str, Any]] = {}  # embedded clouds' name -> their endpoints
        self._native: dict[str, NativeCredentials] = {}  # provider -> its cloud's own credentials, read once
        self._connecting: dict[str, threading.Lock] = {}  # one per provider: connects of two never wait on each other
        self._default_key: tuple[tuple[str, str] | None] | None = None  # (~/.ssh key or None,), once looked for
        self._lock = threading.RLock()

    def plugin(self, name: str) -> LoadedPlugin:
        """The loaded plugin's record; UsageError (listing the loaded providers) for an unknown or broken one."""
        plugin = self.plugins.get(name)
        if plugin is not None:
            return plugin
        known = ", ".join(self.plugins.names()) or "none"
        broken = next((p.reason for p in self.plugins.problems if p.name == name), None)
        if broken:
            raise UsageError(f"provider {name!r} is installed but broken: {broken}; usable providers: {known}")
        raise UsageError(f"unknown provider {name!r}; available providers: {known}")

    def configured_names(self) -> list[str]:
        """Loadable providers configured in this profile (loads their plugins, not their SDKs)."""
        return [name for name in self.plugins.names() if self.is_configured(name)]

    def selected(self, provider: str | None) -> list[str]:
        """The providers a command acts on: `provider` (UsageError when no plugin has that name), else every
        configured one (ConfigError when there is none: a command must not answer from no cloud at all)."""
        if provider is None:
            if names := self.configured_names():
                return names
            raise self.nothing_configured()
        self.plugin(provider)
        return [provider]

    def nothing_configured(self) -> ConfigError:
        """The error of a profile in which no provider is configured: why, and how to configure one."""
        where = f"in {self.paths.config_file}" if self.paths.config_file.exists() else "(there is no config file)"
        return ConfigError(f"no provider is configured in profile {self.profile.name!r} {where}: add a [profiles."
                           f"{self.profile.name}.PROVIDER] table, or set up a cloud's own credentials",
                           suggestion=SEE_CONFIG)

    def connect_each(self, names: Iterable[str]) -> tuple[dict[str, Provider], list[tuple[str, VmError]]]:
        """The providers of `names` that connect, and (name, error) of each that does not."""
        found, failures = {}, []
        for name in names:
            try:
                found[name] = self.provider(name)
            except VmError as exc:
                failures.append((name, exc))
        return found, failures

    def is_configured(self, name: str) -> bool:
        """Whether provider `name` is configured in this profile (see the module's docstring). May read the
        cloud's own files (ConfigError for a malformed one); no network call."""
        if name in self.profile.providers or self.embedded_clouds(name) is not None:
            return True
        plugin = self.plugins.get(name)
        if plugin is None:
            return False
        if plugin.native_credentials is not None:
            return not self.profile.embedded and self.native(name).found
        required = [s for s in plugin.settings if s.required]
        return bool(required) and all(s.env and self.environ.get(s.env) for s in required)

    def native(self, name: str) -> NativeCredentials:
        """The cloud's own credentials of provider `name` (read once per session; NONE for a plugin that does
        not read them). Raises ConfigError for a malformed file of the cloud's."""
        plugin = self.plugins.get(name)
        read = plugin.native_credentials if plugin is not None else None
        if read is None:
            return NONE
        with self._lock:
            if name not in self._native:
                self._native[name] = read(self.environ, home_of(self.environ))
            return self._native[name]

    def provider(self, name: str) -> Provider:
        """The connected provider (cached; no network call except starting embedded mock clouds).
        Raises UsageError for an unknown provider, ConfigError when it is not configured or lacks a setting.

        Thread-safe, and connecting one provider (which imports its SDK) never waits for another's connect, so
        concurrent commands overlap one provider's imports with another's network calls."""
        with self._lock:
            connecting = self._connecting.setdefault(name, threading.Lock())
        with connecting:
            if name not in self._providers:
                plugin = self.plugin(name)
                if not self.is_configured(name):
                    raise ConfigError(self._not_configured(name, plugin), suggestion=SEE_CONFIG)
                settings = self.settings(name)
                log.debug("profile %s: connecting %s (%s)", self.profile.name, name, _shown(plugin, settings))
                self._providers[name] = plugin.connect(_typed(plugin, settings))
            return self._providers[name]

    def settings(self, name: str) -> dict[str, Any]:
        """The resolved settings of a provider (may start the embedded mock clouds); ConfigError names an
        unknown key or a missing required one."""
        declared = {s.key: s for s in self.plugin(name).settings}
        values = {key: found.value for key, found in self.sources(name).items()}
        if missing := [s for s in declared.values() if s.required and values.get(s.key) in (None, "")]:
            raise ConfigError(self._missing(name, missing))
        self.secrets.update([str(values[k]) for k, s in declared.items() if s.secret and values.get(k)])
        return values

    def sources(self, name: str, *, start: bool = True) -> dict[str, Resolved]:
        """Each setting's value and where it comes from (Resolved). With `start` False the embedded mock clouds
        are only read if running. Raises ConfigError for an unknown key or a malformed file of the cloud's."""
        declared = {s.key: s for s in self.plugin(name).settings}
        table = dict(self.profile.providers.get(name, {}))
        if unknown := sorted(set(table) - set(declared)):
            raise ConfigError(f"profile {self.profile.name!r}: [{name}] has unknown setting(s) {', '.join(unknown)};"
                              f" {name} settings: {', '.join(declared) or 'none'}")
        found = dict(self._own(name, declared))
        if clouds := self.embedded_clouds(name):
            found.update({key: Resolved(value, "embedded", clouds.title)
                          for key, value in self._embedded(name, start).items()})
        where = f"{self.paths.config_file.name} [profiles.{self.profile.name}.{name}]"
        found.update({key: Resolved(value, "profile", where) for key, value in table.items()})
        named = any(found[k].value for k in ("ssh_public_key", "ssh_key_name") if k in found)
        if "ssh_public_key" in declared and not named and (default := self.default_ssh_key()) is not None:
            found["ssh_public_key"] = Resolved(default[0], "file", default[1])  # the last of the key rule (sshkeys.py)
        return found

    def default_ssh_key(self) -> tuple[str, str] | None:
        """The user's own public key from ~/.ssh (sshkeys.default_key; read once per session, in any profile:
        it is not a cloud credential)."""
        with self._lock:
            if self._default_key is None:
                from .sshkeys import default_key

                self._default_key = (default_key(self.environ),)
            return self._default_key[0]

    def _own(self, name: str, declared: Mapping[str, Any]) -> list[tuple[str, Resolved]]:
        """The cloud's own credentials of `name` as settings (none in an embedded profile that serves it): its
        native reader's, else the settings' `env` variables."""
        plugin = self.plugins.get(name)
        if plugin is not None and plugin.native_credentials is not None:
            if self.profile.embedded:
                return []
            return [(key, Resolved(s.value, s.kind, s.origin)) for key, s in self.native(name).settings.items()
                    if key in declared]
        return [(s.key, Resolved(self.environ[s.env], "env", f"env {s.env}")) for s in declared.values()
                if s.env and self.environ.get(s.env)]

    def embedded_clouds(self, name: str) -> EmbeddedClouds | None:
        """The embedded clouds serving provider `name` in this profile (None: the profile is not embedded, or
        none serves it). Loads the provider's plugin and the `vm_core.embedded` entry points, starts nothing."""
        plugin = self.plugins.get(name) if self.profile.embedded else None
        if plugin is None:
            return None
        from .embedded import embedded_plugins, serving

        with self._lock:
            if self._embedded_set is None:
                self._embedded_set = embedded_plugins()
        return serving(self._embedded_set, plugin)

    def embedded_dir(self, clouds: EmbeddedClouds) -> Path:
        return self.paths.state_dir / clouds.name

    def endpoints(self, clouds: EmbeddedClouds) -> dict[str, Any]:
        """The embedded clouds' endpoints, starting them if needed (blocks for seconds then)."""
        from .autostart import mock_endpoints

        with self._lock:
            if clouds.name not in self._endpoints:
                self._endpoints[clouds.name] = mock_endpoints(clouds, self.embedded_dir(clouds), self.environ,
                                                              self.notify)
                if unused := unused_credentials(self, clouds):
                    self.notify(Words(f"vm: profile {self.profile.name} acts on {clouds.title}, not on real "
                                      f"clouds; not using the credentials in {', '.join(unused)} (",
                                      Command.of("--profile", "auto", "providers"), " checks those)"))
            return self._endpoints[clouds.name]

    def _embedded(self, name: str, start: bool = True) -> dict[str, Any]:
        clouds = self.embedded_clouds(name)
        if clouds is None:
            return {}
        from .embedded import plugin_settings

        endpoints = self.endpoints(clouds) if start else clouds.endpoints(self.embedded_dir(clouds))
        return plugin_settings(self.plugin(name), endpoints) if endpoints else {}

    def _not_configured(self, name: str, plugin: LoadedPlugin) -> str:
        table = f"add a [profiles.{self.profile.name}.{name}] table to {self.paths.config_file}"
        if self.profile.embedded:
            return (f"provider {name!r} is not served by the embedded mock clouds of profile "
                    f"{self.profile.name!r}: {table}")
        if plugin.native_credentials is not None:
            title, notes = plugin.title, "".join(f"; {note}" for note in self.native(name).notes)
            return (f"provider {name!r} is not configured in profile {self.profile.name!r}: no {title} "
                    f"credentials were found{notes}; set them up as {title}'s own tools do, or {table}")
        envs = [s.env for s in plugin.settings if s.required and s.env]
        hint = f" or export {', '.join(envs)}" if envs else ""
        return f"provider {name!r} is not configured in profile {self.profile.name!r}: {table}{hint}"

    def _missing(self, name: str, missing: list[Any]) -> str:
        parts = [f"{s.key}" + (f" (or env {s.env})" if s.env else "") for s in missing]
        return (f"profile {self.profile.name!r}: provider {name!r} needs {', '.join(parts)};"
                f" set it in [profiles.{self.profile.name}.{name}] of {self.paths.config_file}")


def open_session(config: Config, name: str | None, paths: Paths, plugins: ProviderSet, environ: Mapping[str, str],
                 notify: Notify, *, asked_by: str = "") -> Session:
    """The session of profile `name` (`asked_by` says who named it: "--profile", "VM_PROFILE"), else of the
    config's default_profile, else of `auto`: the clouds whose own credentials are found, or `local` (the embedded
    mock clouds) when none are. Raises ConfigError for an unknown profile, a provider table that names no
    provider, or a malformed file of a cloud's own."""
    profile = config.profile(name)
    chosen_by = asked_by if name else "default_profile" if config.default_profile else ""
    session = Session(profile, paths, plugins, environ, notify, chosen_by=chosen_by)
    if profile.automatic:
        if found := session.configured_names():
            session.chosen_by = f"auto: the credentials found for {', '.join(found)}"
        else:
            local = Session(config.profile(LOCAL_PROFILE), paths, plugins, environ, notify,
                            chosen_by="auto: no cloud's own credentials were found, so the embedded mock clouds")
            local._native = session._native  # what auto read of the clouds' files: not read again
            session = local
    _check_tables(session.profile, plugins, paths)
    return session


def _check_tables(profile: Profile, plugins: ProviderSet, paths: Paths) -> None:
    """ConfigError for a provider table of `profile` that names no provider (a typo such as `lamda`)."""
    known = {*plugins.names(), *plugins.disabled, *(p.name for p in plugins.problems)}
    if unknown := sorted(set(profile.providers) - known):
        tables = ", ".join(f"[profiles.{profile.name}.{name}]" for name in unknown)
        raise ConfigError(f"{paths.config_file}: {tables} names no provider; the providers are "
                          f"{', '.join(plugins.names()) or 'none'}")


def unused_credentials(session: Session, clouds: EmbeddedClouds) -> list[str]:
    """Where real credentials were found for the providers that `clouds` serve in this embedded profile, which
    it does not use (each place once). A cloud file that cannot be read counts as none."""
    places: list[str] = []
    for name in clouds.providers:
        try:
            found = session.native(name)
        except ConfigError:
            continue
        places += [p for p in found.origins if p not in places] if found.found else []
    return places


def _shown(plugin: LoadedPlugin, settings: Mapping[str, Any]) -> str:
    """Settings for a log line: secrets only as <set>."""
    secret = plugin.secret_keys
    return ", ".join(f"{k}={'<set>' if k in secret else v}" for k, v in settings.items())


CHECK_TIMEOUT = 10.0  # seconds `vm providers` waits for the credential checks (all at once)


class Status(enum.StrEnum):
    """What `vm providers` found of a provider."""

    OK = "ok"  # an authenticated call succeeded
    AUTH_REFUSED = "auth refused"  # the cloud refused the credentials
    UNREACHABLE = "unreachable"  # no answer, or not one in time
    ERROR = "error"  # configured, but not usable (a missing setting) or the call failed otherwise
    NOT_CONFIGURED = "not configured"
    BROKEN = "broken"  # the plugin does not load


@dataclass(frozen=True, slots=True)
class ProviderReport:
    """What `vm providers` shows of one plugin. Capabilities are None when they cannot be known; `problem` says
    why the status is not ok."""

    name: str
    title: str
    configured: bool
    endpoint: str
    stop_start: bool | None
    reboot: bool | None
    lists_reservations: bool | None
    status: Status = Status.NOT_CONFIGURED
    problem: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "configured": self.configured, "endpoint": self.endpoint,
                "status": self.status.value,
                "capabilities": {"stop_start": self.stop_start, "reboot": self.reboot,
                                 "lists_reservations": self.lists_reservations},
                "problem": self.problem or None}


CAPABILITIES = (SupportsStopStart, SupportsReboot, SupportsReservations)


def report_providers(session: Session, *, check_timeout: float = CHECK_TIMEOUT) -> list[ProviderReport]:
    """Every provider plugin: loaded and configured ones with endpoint, capabilities and the result of an
    authenticated call (made for all of them at once; one that has not answered within `check_timeout` seconds
    is unreachable), broken ones with why. Capabilities come from isinstance on the connected provider; for a
    provider that is not configured, from issubclass on the class its plugin connects to (its provider_class)."""
    reports = [_report(session, name, plugin) for name, plugin in session.plugins.load_all().items()]
    reports = _checked(session, reports, check_timeout)
    reports += [ProviderReport(p.name, "", False, "", None, None, None, Status.BROKEN, problem=p.reason)
                for p in session.plugins.problems]
    return sorted(reports, key=lambda r: r.name)


def _report(session: Session, name: str, plugin: LoadedPlugin) -> ProviderReport:
    configured, problem = session.is_configured(name), ""
    caps: list[bool | None] = [None, None, None]  # in the order of CAPABILITIES
    endpoint = ""
    if configured:
        try:
            endpoint = _endpoint(plugin, session.settings(name))
            provider = session.provider(name)
            caps = [isinstance(provider, cap) for cap in CAPABILITIES]
            endpoint = provider.endpoint if isinstance(provider, DescribesEndpoint) else endpoint
        except ConfigError as exc:
            problem = exc.message
    else:
        problem = "; ".join(session.native(name).notes)
    if not configured and (cls := plugin.provider_class) is not None:
        caps = [issubclass(cls, cap) for cap in CAPABILITIES]
    status = Status.NOT_CONFIGURED if not configured else Status.ERROR if problem else Status.OK
    stop_start, reboot, lists_reservations = caps
    return ProviderReport(name, plugin.title, configured, endpoint, stop_start, reboot, lists_reservations,
                          status=status, problem=problem)


def _checked(session: Session, reports: list[ProviderReport], timeout: float) -> list[ProviderReport]:
    """The reports of connected providers with the outcome of an authenticated call each: listing the first
    instance (every cloud needs valid credentials for it). The calls run in daemon threads, all at once."""
    to_check = [r for r in reports if r.status is Status.OK]
    results: queue.Queue[tuple[str, Status, str]] = queue.Queue()
    for report in to_check:
        provider = session.provider(report.name)
        threading.Thread(target=_check, args=(report.name, provider, results), daemon=True,
                         name=f"check-{report.name}").start()
    found: dict[str, tuple[Status, str]] = {}
    deadline = time.monotonic() + timeout
    while len(found) < len(to_check) and (left := deadline - time.monotonic()) > 0:
        try:
            name, status, problem = results.get(timeout=left)
        except queue.Empty:
            break
        found[name] = (status, problem)
    late = (Status.UNREACHABLE, f"no answer within {timeout:g} s")
    return [replace(r, status=found.get(r.name, late)[0], problem=found.get(r.name, late)[1])
            if r.status is Status.OK else r for r in reports]


def _check(name: str, provider: Any, results: queue.Queue[tuple[str, Status, str]]) -> None:
    try:
        next(iter(provider.list_instances()), None)
    except AuthError as exc:
        results.put((name, Status.AUTH_REFUSED, exc.message))
    except (Transient, Timeout) as exc:
        results.put((name, Status.UNREACHABLE, exc.message))
    except VmError as exc:
        results.put((name, Status.ERROR, exc.message))
    except Exception as exc:  # noqa: BLE001 - a bug in a plugin is that provider's problem, not vm's
        results.put((name, Status.ERROR, f"{type(exc).__name__}: {exc}"))
    else:
        results.put((name, Status.OK, ""))


def _endpoint(plugin: LoadedPlugin, settings: Mapping[str, Any]) -> str:
    """The first non-secret setting that says where the API is (a key ending in endpoint or url)."""
    secret = plugin.secret_keys
    return next((str(v) for k, v in settings.items()
                 if k not in secret and k.endswith(("endpoint", "url")) and v), "")


SET, NOT_SET = "<set>", "<not set>"  # how a secret setting is shown: never any part of its value


def configuration(session: Session, profiles: Sequence[str]) -> dict[str, Any]:
    """The document of `vm config show`: where the configuration is, the selected profile among `profiles` and
    why it was chosen, the fleet store (its URL without a password), the embedded mock clouds (and the real
    credentials an embedded profile does not use), each configured provider's settings with where each value
    comes from (`source` the kind, `from` the place; a secret only as SET or NOT_SET), and what was seen of the
    providers that are not configured. Never starts the mock clouds."""
    from .fleet.location import describe

    paths = session.paths
    mocks = None
    if clouds := next(filter(None, map(session.embedded_clouds, session.plugins.names())), None):
        state_dir = session.embedded_dir(clouds)
        mocks = {"title": clouds.title, "state_dir": str(state_dir),
                 "running": clouds.endpoints(state_dir) is not None,
                 "unused_credentials": unused_credentials(session, clouds)}
    plugins = session.plugins.load_all()
    configured = {name for name in plugins if session.is_configured(name)}
    return {
        "config_file": str(paths.config_file),
        "config_file_exists": paths.config_file.exists(),
        "state_dir": str(paths.state_dir),
        "profile": session.profile.name,
        "chosen_by": session.chosen_by or "default",
        "profiles": list(profiles),
        "store": describe(session),
        "embedded": session.profile.embedded,
        "mock_clouds": mocks,
        "providers": {name: _settings_of(session, name, plugin) for name, plugin in plugins.items()
                      if name in configured},
        "not_configured": {name: _notes(session, name) for name in plugins if name not in configured},
    }


def _settings_of(session: Session, name: str, plugin: LoadedPlugin) -> dict[str, Any]:
    declared = {s.key: s for s in plugin.settings}
    try:
        sources = session.sources(name, start=False)
    except ConfigError as exc:
        return {"settings": {}, "problem": exc.message, "notes": []}
    keys = list(declared) + [k for k in sources if k not in declared]
    settings = {}
    for key in keys:
        value, source, origin = sources.get(key, (None, None, None))
        secret = key in declared and declared[key].secret
        shown = (SET if value not in (None, "") else NOT_SET) if secret else value
        settings[key] = {"value": NOT_SET if shown is None else shown, "source": source, "from": origin,
                         "secret": secret}
    return {"settings": settings, "problem": None, "notes": _notes(session, name)}


def _notes(session: Session, name: str) -> list[str]:
    """What was seen of the cloud's own credentials but cannot be used (a malformed file: its error)."""
    try:
        return list(session.native(name).notes)
    except ConfigError as exc:
        return [exc.message]


def _typed(plugin: LoadedPlugin, settings: dict[str, Any]) -> Any:
    """The settings `connect` gets: an instance of the plugin's `settings_type` when it declares one (parsed here,
    once, from the resolved values alone: the session already read the environment; ConfigError for a malformed
    value), else the mapping itself."""
    if plugin.settings_type is None:
        return settings
    from .kit.settings import parse_settings

    return parse_settings(plugin.settings_type, settings, title=plugin.title, provider=plugin.name, environ={})
