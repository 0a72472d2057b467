"""`vm config show`: where the configuration is and what each provider's settings resolve to.

A secret setting is shown only as "<set>" or "<not set>", never any part of its value; the fleet store's URL is
shown without its password. Showing the configuration
never starts the mock clouds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ..errors import ConfigError
from .app import App, common_options, with_app

if TYPE_CHECKING:
    from ..session import Session

SET, NOT_SET = "<set>", "<not set>"


@click.group()
@common_options
def config() -> None:
    """Configuration: profiles in config.toml, credentials, the embedded mock clouds."""


@config.command()
@with_app
def show(app: App) -> None:
    """Show the selected profile and each provider's settings, secrets redacted.

    \b
    vm config show
    vm config show --profile work -o json
    """
    session = app.session()
    doc = _document(app, session)
    if app.output.json:
        app.output.data(doc)
        return
    mocks = doc["mock_clouds"]
    app.output.pairs([
        ("config file", doc["config_file"] + ("" if doc["config_file_exists"] else " (absent: implicit profile)")),
        ("state dir", doc["state_dir"]),
        ("profile", doc["profile"]),
        ("profiles", ", ".join(doc["profiles"])),
        ("fleet store", doc["store"]),
        ("mock clouds", f"{mocks['state_dir']} ({'running' if mocks['running'] else 'not running'})"
         if mocks else None),
    ])
    click.echo()
    rows = [(name, key, s["value"], s["source"]) for name, p in doc["providers"].items()
            for key, s in p["settings"].items()]
    app.output.table(("PROVIDER", "SETTING", "VALUE", "SOURCE"), rows)
    for name, p in doc["providers"].items():
        if p.get("problem"):
            app.output.warn(f"provider {name}: {p['problem']}")


def _document(app: App, session: Session) -> dict[str, Any]:
    from ..fleet.location import describe

    paths = session.paths
    mocks = None
    if clouds := next(filter(None, map(session.embedded_clouds, session.plugins.names())), None):
        state_dir = session.embedded_dir(clouds)
        mocks = {"state_dir": str(state_dir), "running": clouds.endpoints(state_dir) is not None}
    return {
        "config_file": str(paths.config_file),
        "config_file_exists": paths.config_file.exists(),
        "state_dir": str(paths.state_dir),
        "profile": session.profile.name,
        "profiles": sorted(app.config.profiles) if app.config else [],
        "store": describe(session),
        "embedded": session.profile.embedded,
        "mock_clouds": mocks,
        "providers": {name: _provider(session, name, plugin)
                      for name, plugin in session.plugins.load_all().items() if session.is_configured(name)},
    }


def _provider(session: Session, name: str, plugin: Any) -> dict[str, Any]:
    declared = {s.key: s for s in plugin.settings}
    try:
        sources = session.sources(name, start=False)
    except ConfigError as exc:
        return {"settings": {}, "problem": exc.message}
    keys = list(declared) + [k for k in sources if k not in declared]
    settings = {}
    for key in keys:
        value, source = sources.get(key, (None, None))
        secret = key in declared and declared[key].secret
        shown = (SET if value not in (None, "") else NOT_SET) if secret else value
        settings[key] = {"value": NOT_SET if shown is None else shown, "source": source, "secret": secret}
    return {"settings": settings, "problem": None}

