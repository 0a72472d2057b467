"""`vm list` and `vm get`."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

import click

from ..actions import fan_out
from ..model import Instance, InstanceState
from . import validate, views
from .app import App, provider_option, with_app

raw_option = click.option("--raw", is_flag=True, help="JSON with each cloud's native object under \"native\".")


STATES = [s.value for s in InstanceState]


@click.command("list")
@provider_option(required=False)
@click.option("--fleet", metavar="NAME", help="Only the VMs of this fleet.")
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
    fleets = _FleetNames(session)  # read from the store while the providers answer
    outcomes = fan_out(lambda name: list(session.provider(name).list_instances()), names)
    failures = [(o.key, o.error) for o in outcomes if o.error]
    if names and len(failures) == len(names):
        app.finish(failures, len(names), "providers", as_warnings=True)
    found = fleets.apply([i for o in outcomes if o.value for i in o.value], app.output.warn)
    wanted = [i for i in found if (fleet is None or i.fleet == fleet) and (state is None or i.state == state)
              and (region is None or i.region == region) and (name is None or i.name == name)]
    views.instances(app.output, sorted(wanted, key=lambda i: (i.provider, i.name, i.id)), raw=raw)
    app.finish(failures, len(names), "providers", as_warnings=True)


class _FleetNames:
    """The fleet of each instance that is a fleet member, read from the fleet store (when there is one) in a
    daemon thread started at construction, so the read overlaps the providers' network calls."""

    def __init__(self, session: Any) -> None:
        self._owner: dict[tuple[str, str], str] = {}
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._read, args=(session,), daemon=True, name="vm-fleet-names")
        self._thread.start()

    def apply(self, instances: list[Instance], warn: Any) -> list[Instance]:
        """`instances` with `fleet` set from the store. A store that cannot be read (a team database that is
        down) costs only the fleet names: `warn` says so. Any other failure of the read is raised here."""
        from ..errors import VmError

        self._thread.join()
        if isinstance(self._failure, VmError):
            warn(f"fleet names not shown: {self._failure.message}")
            return instances
        if self._failure is not None:
            raise self._failure
        return [replace(i, fleet=self._owner.get((i.provider, i.id), i.fleet)) for i in instances]

    def _read(self, session: Any) -> None:
        from ..fleet.location import existing_store
        from ..fleet.store import MAY_EXIST, MemberState

        try:
            store = existing_store(session)
            if store is not None:
                self._owner = {(m.provider, m.instance_id): f.name for f in store.list_fleets()
                               for m in store.members(f.name)
                               if m.instance_id and (m.state in MAY_EXIST or m.state is MemberState.RELEASED)}
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread by apply()
            self._failure = exc


@click.command()
@click.argument("instance_id", metavar="ID")
@provider_option()
@raw_option
@with_app
def get(app: App, instance_id: str, provider: str, raw: bool) -> None:
    """Show one VM, with its public IP and the ssh command line (exit 3 when it does not exist).

    \b
    vm get 3f0c6a1e-2b4d-4c8e-9a7f-1d2e3f4a5b6c --provider crusoe
    vm get 0920582c7ff041399e34823a0be62549 --provider lambda -o json --raw
    """
    session = app.session()
    instance_id = validate.instance_id(session.plugin(provider), provider, instance_id)
    found = session.provider(provider).get_instance(instance_id)
    views.instance(app.output, _FleetNames(session).apply([found], app.output.warn)[0], raw=raw)
