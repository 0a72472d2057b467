"""`Client.audit` (`vm audit`): every VM of the configured accounts, classified by whose it is. Read-only: one
listing per provider and reads of the store; nothing is written, nothing in a cloud is touched."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..calls import failure_error, fan_out
from .outcome import Problem
from .usage_reports import AuditReport

if TYPE_CHECKING:
    from ..session import Session
    from ..spend.audit import StoreFacts
    from .client import Client
    from .requests import AuditRequest


def audit_accounts(client: Client, request: AuditRequest) -> AuditReport:
    from ..spend.audit import audit, totals

    session = client.session
    names = session.selected(request.provider)
    facts = store_facts(session)
    outcomes = fan_out(lambda name: list(session.provider(name).list_instances()), names, prepare=session.provider)
    failures = [(o.key, o.error) for o in outcomes if o.error]
    problem = Problem.of(failure_error(failures, len(names), "providers"), failures if len(names) > 1 else []) \
        if failures else None
    if names and len(failures) == len(names):
        return AuditReport(answered=False, problem=problem)
    vms = audit([i for o in outcomes if o.value for i in o.value], facts)
    return AuditReport(vms=vms, totals=totals(vms), providers=[o.key for o in outcomes if o.value is not None],
                       problem=problem)


def store_facts(session: Session) -> StoreFacts:
    """What the store of `session` says (nothing when the local store was never created; it is not created).
    Raises the store's error (ConfigError, Transient): without it every VM would look not vm's."""
    from ..fleet.location import existing_store
    from ..fleet.naming import FleetIdentity
    from ..spend.audit import StoreFacts

    store = existing_store(session)
    if store is None:
        return StoreFacts({}, [], {})
    fleets = store.list_fleets()
    members = {(m.provider, m.instance_id): f.name for f in fleets for m in store.members(f.name) if m.instance_id}
    ledger = {(vm.provider, vm.instance_id): vm for vm in store.ledger_vms()}
    return StoreFacts(members, [FleetIdentity(f.name, f.fleet_id) for f in fleets], ledger)
