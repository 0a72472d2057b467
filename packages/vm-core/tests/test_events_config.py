"""`[[profiles.NAME.notify]]` in config.toml: parsed into the profile's webhooks (not a provider table), each named
by a hash of its URL, and neither the URL nor the secret is in a webhook's repr."""

from __future__ import annotations

from pathlib import Path

import pytest
from vm_core.config import load_config
from vm_core.errors import ConfigError
from vm_core.events.kinds import EventKind

CONFIG = """
[profiles.team]
embedded = true
[[profiles.team.notify]]
url = "https://hooks.slack.com/services/T0/B0/very-secret-path"
secret = "first-secret"
[[profiles.team.notify]]
url = "http://127.0.0.1:9/ops"
secret = "second-secret"
events = ["degraded", "destroy_refused"]
[profiles.quiet]
embedded = true
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    path.chmod(0o600)
    return path


def test_a_profiles_webhooks_are_parsed_with_their_kinds(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, CONFIG))
    team = config.profile("team")
    first, second = team.notify
    assert "notify" not in team.providers and config.profile("quiet").notify == ()
    assert first.kinds is None and first.wants(EventKind.CREATED)
    assert second.kinds == {EventKind.DEGRADED, EventKind.DESTROY_REFUSED} and not second.wants(EventKind.CREATED)
    assert first.target != second.target and first.target == load_config(write(tmp_path, CONFIG)).profile(
        "team").notify[0].target
    for hook in team.notify:
        assert hook.url not in repr(hook) and hook.secret not in repr(hook) and hook.url not in hook.target
    assert "first-secret" not in repr(team) and "very-secret-path" not in repr(team)


def test_an_events_list_that_is_empty_is_refused(tmp_path: Path) -> None:
    text = '[[profiles.t.notify]]\nurl = "https://h.example/x"\nsecret = "k"\nevents = []\n'
    with pytest.raises(ConfigError, match="events must be a non-empty list of event kinds"):
        load_config(write(tmp_path, text))
