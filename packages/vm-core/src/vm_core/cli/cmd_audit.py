"""`vm audit` (vm_core.api: Client.audit)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from .app import App, provider_option, with_app

if TYPE_CHECKING:
    from ..api.usage_reports import AuditReport

AUDIT_COLUMNS = ("OWNER", "PROVIDER", "ID", "NAME", "STATE", "FLEET", "CREATED-BY", "$/H")
TOTAL_COLUMNS = ("OWNER", "VMS", "RUNNING", "$/H")
OWNERS = {"fleet": "fleet member vm recorded", "created": "created by vm (its spend ledger)",
          "adoptable": "carries a fleet's id, not recorded", "other": "not vm's"}


@click.command()
@provider_option(required=False)
@with_app
def audit(app: App, provider: str | None) -> None:
    """Every VM of the configured accounts, and whose it is: a fleet member vm recorded (fleet), a VM vm
    created, by whom (created), a VM carrying a recorded fleet's id that no member record has (adoptable with
    `vm fleet reconcile NAME`), or not vm's (other); each with its running rate, and totals per class.

    Read-only: nothing is written to the store and nothing in a cloud is changed.

    \b
    vm audit
    vm audit --provider lambda -o json
    """
    from ..api.requests import AuditRequest

    report = app.client().audit(AuditRequest(provider=provider))
    if report.answered:
        show(app, report)
    app.conclude(report, as_warnings=True)


def show(app: App, report: AuditReport) -> None:
    """The VMs, a blank line and the totals per class; the fleets to reconcile as progress on stderr."""
    from ..hints import Command, phrase

    out = app.output
    if out.json:
        out.data(report.to_json())
        return
    out.table(AUDIT_COLUMNS, [[v.owner.value, v.instance.provider, v.instance.id, v.instance.name,
                               v.instance.state.value, v.fleet, v.created_by, v.rate_per_hour] for v in report.vms])
    out.line("")
    out.table(TOTAL_COLUMNS, [[t.owner.value, t.vms, t.running, t.rate_per_hour] for t in report.totals])
    for fleet in dict.fromkeys(v.fleet for v in report.vms if v.owner.value == "adoptable"):
        out.progress(phrase(f"vm: fleet {fleet} has VMs it has no record of: adopt them with ",
                            Command.of("fleet", "reconcile", fleet)))
    unpriced = sum(t.unpriced for t in report.totals)
    if unpriced:
        out.progress(f"vm: {unpriced} running VM(s) have no known price: left out of $/H")
