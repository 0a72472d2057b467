"""`vm list` and `vm get`."""

from __future__ import annotations

import click

from ..model import InstanceState
from . import views
from .app import App, completes, provider_option, with_app

raw_option = click.option("--raw", is_flag=True, help="JSON with each cloud's native object under \"native\".")


STATES = [s.value for s in InstanceState]


@click.command("list")
@provider_option(required=False)
@click.option("--fleet", metavar="NAME", shell_complete=completes("fleets"), help="Only the VMs of this fleet.")
@click.option("--state", type=click.Choice(STATES), help="Only VMs in this state.")
@click.option("--region", metavar="REGION", help="Only VMs in this region.")
@click.option("--name", metavar="NAME", help="Only VMs with exactly this name.")
@raw_option
@with_app
def list_command(app: App, provider: str | None, fleet: str | None, state: str | None, region: str | None,
                 name: str | None, raw: bool) -> None:
    """List the VMs of every configured provider (queried concurrently), or of one; filters combine.

    A provider that fails gives a warning and the others' VMs are still listed (exit 7); when every provider
    fails nothing is listed (stdout stays empty).

    \b
    vm list
    vm list --provider crusoe -o json
    vm list --state running --region us-east1-a
    vm list --fleet train
    """
    from ..api.requests import ListRequest
    from .complete import listed

    report = app.client().list(ListRequest(provider=provider, fleet=fleet, state=state, region=region, name=name))
    session = app.session()
    listed(session.paths.state_dir, session.profile.name, report.listed)
    if report.answered:
        views.instances(app.output, report.instances, raw=raw)
    app.conclude(report, as_warnings=True)


@click.command()
@click.argument("instance_id", metavar="ID", shell_complete=completes("instance_ids"))
@provider_option()
@raw_option
@with_app
def get(app: App, instance_id: str, provider: str, raw: bool) -> None:
    """Show one VM, with its public IP and the ssh command line (exit 3 when it does not exist).

    \b
    vm get 3f0c6a1e-2b4d-4c8e-9a7f-1d2e3f4a5b6c --provider crusoe
    vm get 0920582c7ff041399e34823a0be62549 --provider lambda -o json --raw
    """
    from ..api.requests import GetRequest

    views.instance_report(app.output, app.client().get(GetRequest(instance_id, provider)), raw=raw)
