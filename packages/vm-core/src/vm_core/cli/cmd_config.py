"""`vm config show`: where the configuration is and what each provider's settings resolve to (the document:
session.configuration; secrets only as "<set>" or "<not set>")."""

from __future__ import annotations

import click

from .app import App, common_options, with_app


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
    from ..session import configuration

    session = app.session()
    doc = configuration(session, sorted(app.config.profiles) if app.config else [])
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
