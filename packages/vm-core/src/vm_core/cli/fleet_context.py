"""Acting on a recorded fleet only through the accounts it was created in (and `open_store`, the session's fleet
store, for the fleet commands)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..fleet.location import open_store as open_store  # the fleet commands import it from here
from .app import App

if TYPE_CHECKING:
    from ..fleet.store import FleetRecord, FleetStore
    from ..provider import Provider


def fleet_providers(app: App, name: str) -> tuple[FleetStore, FleetRecord, dict[str, Provider]]:
    """(store, record, connected providers) of a recorded fleet.

    Without an explicit --profile (or VM_PROFILE) the fleet's own profile is used. Each provider the fleet used
    must act in the account the fleet recorded: ConfigError (exit 4) otherwise, before any call that changes
    anything. A provider that cannot be connected is warned about and left out (its VMs are reported as not
    checked). Raises NotFound for an unknown fleet."""
    from ..fleet.destroy import recorded_fleet
    from ..fleet.service import check_accounts

    session = app.session()
    store = open_store(session)
    record = recorded_fleet(store, name)
    if app.profile_name is None and record.profile and record.profile != session.profile.name:
        session = app.use_profile(record.profile)
    used = sorted({m.provider for m in store.members(name)} | set(record.accounts))
    connected, failures = session.connect_each(used)
    for provider, error in failures:
        app.output.warn(f"{provider}: {error.message}")
    check_accounts(record, connected, session.profile.name)
    return store, record, connected
