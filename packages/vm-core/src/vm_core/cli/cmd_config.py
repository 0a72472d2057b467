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
    report = app.client().config()
    doc = report.document
    if app.output.json:
        app.output.data(report.to_json())
        return
    mocks = doc["mock_clouds"]
    app.output.pairs([
        ("config file", doc["config_file"] + ("" if doc["config_file_exists"] else " (absent)")),
        ("state dir", doc["state_dir"]),
        ("profile", f"{doc['profile']} ({doc['chosen_by']})"),
        ("profiles", ", ".join(doc["profiles"])),
        ("fleet store", doc["store"]),
        ("mock clouds", _mocks(mocks) if mocks else None),
    ])
    click.echo()
    rows = [(name, key, s["value"], s["from"] or "-") for name, p in doc["providers"].items()
            for key, s in p["settings"].items()]
    app.output.table(("PROVIDER", "SETTING", "VALUE", "FROM"), rows)
    for name, p in doc["providers"].items():
        if p.get("problem"):
            app.output.warn(f"provider {name}: {p['problem']}")
    for name, notes in [*((n, p["notes"]) for n, p in doc["providers"].items()), *doc["not_configured"].items()]:
        for note in notes:
            app.output.warn(f"provider {name}: {note}")
    if mocks and mocks["unused_credentials"]:
        app.output.warn(f"profile {doc['profile']} uses {mocks['title']}, not real clouds; credentials found but "
                        f"not used: {', '.join(mocks['unused_credentials'])}")


def _mocks(mocks: dict[str, object]) -> str:
    running = "running" if mocks["running"] else "not running"
    return f"{mocks['title']}, not real clouds: {mocks['state_dir']} ({running})"
