"""`vm list` and `vm get`."""

from __future__ import annotations

import click

from ..actions import fan_out
from ..model import InstanceState
from . import validate, views
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
    session = app.session()
    names = session.selected(provider)
    from ..fleet.owners import FleetNames

    fleets = FleetNames(session)  # read from the store while the providers answer
    outcomes = fan_out(lambda name: list(session.provider(name).list_instances()), names, prepare=session.provider)
    failures = [(o.key, o.error) for o in outcomes if o.error]
    from .complete import listed

    listed(session.paths.state_dir, session.profile.name, {o.key: o.value for o in outcomes if o.value is not None})
    if names and len(failures) == len(names):
        app.finish(failures, len(names), "providers", as_warnings=True)
    found = fleets.apply([i for o in outcomes if o.value for i in o.value], app.output.warn)
    wanted = [i for i in found if (fleet is None or i.fleet == fleet) and (state is None or i.state == state)
              and (region is None or i.region == region) and (name is None or i.name == name)]
    views.instances(app.output, sorted(wanted, key=lambda i: (i.provider, i.name, i.id)), raw=raw)
    app.finish(failures, len(names), "providers", as_warnings=True)


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
    from ..fleet.owners import FleetNames

    session = app.session()
    instance_id = validate.instance_id(session.plugin(provider), provider, instance_id)
    found = session.provider(provider).get_instance(instance_id)
    views.instance(app.output, FleetNames(session).apply([found], app.output.warn)[0], raw=raw)
