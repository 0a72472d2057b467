"""session.py: profiles resolved into providers; settings precedence; broken plugins; the embedded default."""

from __future__ import annotations

import importlib
import threading
from pathlib import Path

import pytest
from vm_core.config import Paths, Profile
from vm_core.errors import ConfigError, UsageError
from vm_core.plugins import ProviderSet, discover_providers, provider_plugins
from vm_core.session import Session, report_providers


def session(tmp_path: Path, profile: Profile, environ: dict[str, str] | None = None, *,
            fresh: bool = False) -> Session:
    """A session of `profile`; with `fresh`, on a new registry of plugins (one that sees a site added to sys.path
    after the process's registry was made)."""
    notes: list[str] = []
    plugins = ProviderSet(discover_providers()) if fresh else provider_plugins()
    s = Session(profile, Paths(tmp_path / "config.toml", tmp_path), plugins,
                {"VM_NO_AUTOSTART": "1", **(environ or {})}, notes.append)
    s.notes = notes  # type: ignore[attr-defined]
    return s


def plugin_dist(site: Path, module: str, source: str, entry_points: dict[str, str]) -> Path:
    """A tiny installed distribution of `module` (its `source`) whose `vm_core.providers` entry points are
    `entry_points` (name -> attribute of the module)."""
    info = site / f"{module}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[vm_core.providers]\n" + "".join(
        f"{name} = {module}:{attribute}\n" for name, attribute in entry_points.items()))
    (site / f"{module}.py").write_text(source)
    return site


def broken_plugin_dist(site: Path) -> Path:
    """A plugin whose `vm_core.providers` entry point raises on import."""
    return plugin_dist(site, "vm_broken_provider", 'raise RuntimeError("broken on purpose")\n', {"broken": "plugin"})


PAIRED_PLUGINS = '''
import threading

slow_connecting = threading.Event()
fast_connected = threading.Event()


class Slow:
    """Connects only once the other provider has connected (as if importing a large SDK meanwhile)."""

    name, title, settings = "slow", "Slow", ()

    def connect(self, settings):
        slow_connecting.set()
        return "slow provider" if fast_connected.wait(10) else "the other connect waited for this one"


class Fast:
    name, title, settings = "fast", "Fast", ()

    def connect(self, settings):
        fast_connected.set()
        return "fast provider"


slow, fast = Slow(), Fast()
'''


def paired_plugins_dist(site: Path) -> Path:
    """An installed distribution of two provider plugins, `slow` and `fast` (see PAIRED_PLUGINS)."""
    return plugin_dist(site, "vm_paired_providers", PAIRED_PLUGINS, {"slow": "slow", "fast": "fast"})


@pytest.fixture
def embedded(tmp_path: Path, mock_clouds_factory) -> object:
    """Mock clouds serving the state dir of an embedded profile (as if vm had started them)."""
    return mock_clouds_factory(state_dir=tmp_path / "mock-clouds")


def test_embedded_settings_come_from_the_running_mock_clouds(tmp_path: Path, embedded) -> None:
    s = session(tmp_path, Profile("local", embedded=True), {"LAMBDA_API_KEY": "from-env-not-used"})
    settings = s.settings("lambda")
    assert settings["api_key"] == embedded.endpoints["lambda"]["api_key"]
    assert settings["api_endpoint"] == embedded.endpoints["lambda"]["url"]
    assert s.sources("lambda")["api_key"][1] == "embedded"
    assert embedded.endpoints["lambda"]["api_key"] in s.secrets
    assert s.configured_names() == ["crusoe", "lambda", "nebius"]  # the example provider has no table here


def test_profile_table_overrides_the_embedded_settings(tmp_path: Path, embedded) -> None:
    s = session(tmp_path, Profile("bad", embedded=True, providers={"lambda": {"api_key": "wrong"}}))
    assert s.sources("lambda")["api_key"] == ("wrong", "profile", "config.toml [profiles.bad.lambda]")
    assert s.sources("lambda")["api_endpoint"][1] == "embedded"


def test_environment_fills_what_the_profile_leaves_out(tmp_path: Path) -> None:
    s = session(tmp_path, Profile("p", providers={"crusoe": {"project_id": "proj"}}),
                {"CRUSOE_ACCESS_KEY_ID": "AK", "CRUSOE_SECRET_KEY": "SK-secret"})
    settings = s.settings("crusoe")
    assert (settings["access_key_id"], settings["secret_key"], settings["project_id"]) == ("AK", "SK-secret", "proj")
    assert "SK-secret" in s.secrets


def test_a_provider_is_configured_by_its_environment_variables(tmp_path: Path) -> None:
    s = session(tmp_path, Profile("p"), {"LAMBDA_API_KEY": "k"})
    assert s.configured_names() == ["lambda"]


def test_missing_setting_says_where_to_put_it(tmp_path: Path) -> None:
    s = session(tmp_path, Profile("p", providers={"crusoe": {"project_id": "x"}}))
    with pytest.raises(ConfigError, match=r"needs access_key_id \(or env CRUSOE_ACCESS_KEY_ID\), secret_key"):
        s.provider("crusoe")


def test_unknown_setting_is_a_config_error(tmp_path: Path) -> None:
    s = session(tmp_path, Profile("p", providers={"lambda": {"api_kee": "k"}}))
    with pytest.raises(ConfigError, match=r"unknown setting\(s\) api_kee; lambda settings: api_key"):
        s.settings("lambda")


def test_unconfigured_provider(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"not configured in profile 'p': no Lambda Cloud credentials were found"):
        session(tmp_path, Profile("p")).provider("lambda")


def test_unknown_provider_lists_the_loaded_ones(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"unknown provider 'aws'; available providers: crusoe, .*lambda, nebius"):
        session(tmp_path, Profile("p")).plugin("aws")


def test_without_autostart_the_error_says_how_to_start_them(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        session(tmp_path, Profile("local", embedded=True)).provider("nebius")
    assert "VM_NO_AUTOSTART" in err.value.message
    assert "-m mock_clouds serve --detach --state-dir" in err.value.suggestion


def test_broken_plugin_is_reported_and_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(broken_plugin_dist(tmp_path / "site")))
    s = session(tmp_path, Profile("p", providers={"broken": {}}), fresh=True)
    reports = {r.name: r for r in report_providers(s)}
    assert "RuntimeError: broken on purpose" in reports["broken"].problem
    assert reports["crusoe"].problem == "" and reports["crusoe"].stop_start is True
    with pytest.raises(UsageError, match="provider 'broken' is installed but broken"):
        s.plugin("broken")


def test_connecting_one_provider_does_not_wait_for_another(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each provider connects under its own lock, so a slow connect (an SDK being imported) never holds up
    another provider's, and concurrent listings overlap one provider's imports with another's network calls."""
    monkeypatch.syspath_prepend(str(paired_plugins_dist(tmp_path / "site")))
    s = session(tmp_path, Profile("p", providers={"slow": {}, "fast": {}}), fresh=True)
    plugins = importlib.import_module("vm_paired_providers")
    connected: dict[str, object] = {}
    thread = threading.Thread(target=lambda: connected.update(slow=s.provider("slow")), daemon=True)
    thread.start()
    assert plugins.slow_connecting.wait(10)
    assert s.provider("fast") == "fast provider"
    thread.join(15)
    assert connected == {"slow": "slow provider"}
    assert s.provider("slow") == "slow provider"  # cached: connected once


def test_selected_providers_are_the_one_named_or_every_configured_one(tmp_path: Path) -> None:
    s = session(tmp_path, Profile("p", providers={"crusoe": {"project_id": "x"}}), {"LAMBDA_API_KEY": "k"})
    assert s.selected(None) == ["crusoe", "lambda"] and s.selected("nebius") == ["nebius"]
    with pytest.raises(UsageError, match="unknown provider 'aws'"):
        s.selected("aws")


def test_connect_each_keeps_what_connects_and_says_why_the_rest_does_not(tmp_path: Path) -> None:
    s = session(tmp_path, Profile("p", providers={"crusoe": {"project_id": "x"}, "lambda": {"api_key": "k"}}))
    connected, failures = s.connect_each(["crusoe", "lambda", "nebius"])
    assert list(connected) == ["lambda"] and connected["lambda"] is s.provider("lambda")
    assert [name for name, _ in failures] == ["crusoe", "nebius"]
    assert all(isinstance(e, ConfigError) for _, e in failures)


def test_the_configuration_document_shows_secrets_only_as_set_or_not(tmp_path: Path) -> None:
    from vm_core.session import NOT_SET, SET, configuration

    s = session(tmp_path, Profile("p", providers={"lambda": {"api_key": "secret-value-1"}}))
    doc = configuration(s, ["p", "q"])
    assert (doc["profile"], doc["profiles"], doc["config_file_exists"], doc["mock_clouds"]) == ("p", ["p", "q"],
                                                                                                False, None)
    lam = doc["providers"]["lambda"]
    assert lam["problem"] is None and lam["settings"]["api_key"] == {
        "value": SET, "source": "profile", "from": "config.toml [profiles.p.lambda]", "secret": True}
    assert "secret-value-1" not in repr(doc) and NOT_SET != SET


TYPED_PLUGIN = '''
from dataclasses import dataclass

from vm_core.kit import optional_text, positive_number, setting
from vm_core.plugins import LoadedPlugin


@dataclass(frozen=True, kw_only=True)
class TypedSettings:
    token: str = setting(env="VM_TYPED_TOKEN", secret=True, help="credential")
    scale: float = setting(default=1.0, parse=positive_number, help="a positive number")
    region: str | None = setting(env="VM_TYPED_REGION", default=None, parse=optional_text, help="optional")


class Typed:
    name, title = "typed", "Typed Cloud"
    settings_type = TypedSettings  # its settings, declared once

    def connect(self, settings):
        return settings  # what the session handed over


typed = Typed()
record = LoadedPlugin(name="record", title="Record Cloud", settings_type=TypedSettings,
                      connect=lambda settings: ("record", settings))
'''


def typed_plugin_dist(site: Path) -> Path:
    """Installed provider plugins that declare their settings once, as a dataclass: `typed` (a class with
    `settings_type`) and `record` (a LoadedPlugin registered as it is)."""
    return plugin_dist(site, "vm_typed_provider", TYPED_PLUGIN, {"typed": "typed", "record": "record"})


def test_the_session_parses_a_declared_settings_type_before_connect(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(typed_plugin_dist(tmp_path / "site")))
    s = session(tmp_path, Profile("p", providers={"typed": {"scale": "2.5"}}), {"VM_TYPED_TOKEN": "s3cret"},
                fresh=True)
    given = s.provider("typed")
    assert type(given).__name__ == "TypedSettings" and (given.token, given.scale) == ("s3cret", 2.5)
    assert [(x.key, x.env, x.secret, x.required) for x in s.plugin("typed").settings] == [
        ("token", "VM_TYPED_TOKEN", True, True), ("scale", "", False, False),
        ("region", "VM_TYPED_REGION", False, False)]  # derived from settings_type


def test_typed_settings_come_from_the_sessions_environment_alone(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The process's own environment is not read behind the session's back: only the session's `environ` is."""
    monkeypatch.syspath_prepend(str(typed_plugin_dist(tmp_path / "site")))
    monkeypatch.setenv("VM_TYPED_TOKEN", "from-the-process")
    monkeypatch.setenv("VM_TYPED_REGION", "from-the-process")
    s = session(tmp_path, Profile("p", providers={"typed": {}}), fresh=True)
    with pytest.raises(ConfigError, match=r"provider 'typed' needs token \(or env VM_TYPED_TOKEN\)"):
        s.provider("typed")
    alone = session(tmp_path, Profile("p", providers={"typed": {}}), {"VM_TYPED_TOKEN": "given"}, fresh=True)
    assert (alone.provider("typed").token, alone.provider("typed").region) == ("given", None)
    both = session(tmp_path, Profile("p", providers={"typed": {}}),
                   {"VM_TYPED_TOKEN": "given", "VM_TYPED_REGION": "r1"}, fresh=True)
    assert both.provider("typed").region == "r1"


def test_a_plugin_may_register_its_record_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(typed_plugin_dist(tmp_path / "site")))
    s = session(tmp_path, Profile("p"), {"VM_TYPED_TOKEN": "s3cret"}, fresh=True)
    assert "record" in s.configured_names()  # its one required setting's env var is set
    kind, given = s.provider("record")
    assert (kind, type(given).__name__, given.token, given.scale) == ("record", "TypedSettings", "s3cret", 1.0)


def test_a_malformed_typed_setting_is_refused_by_the_session_without_its_secret(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(typed_plugin_dist(tmp_path / "site")))
    s = session(tmp_path, Profile("p", providers={"typed": {"scale": "-1", "token": "s3cret"}}), fresh=True)
    with pytest.raises(ConfigError, match=r"Typed Cloud setting 'scale' must be a positive number, not '-1'") as got:
        s.provider("typed")
    assert "s3cret" not in str(got.value)


def test_built_in_plugins_get_their_settings_parsed_by_the_session(tmp_path: Path) -> None:
    s = session(tmp_path, Profile("p", providers={"lambda": {"api_key": "k", "time_scale": "fast"}}))
    assert s.plugin("lambda").settings_type.__name__ == "LambdaSettings"
    with pytest.raises(ConfigError, match=r"'time_scale' must be a positive number, not 'fast'"):
        s.provider("lambda")
