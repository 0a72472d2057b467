"""The Python API of vm: every verb of the `vm` command as a method of `Client`, taking a typed request and
returning a typed report that says how it ended (`report.exit`, an ExitKind; `report.problem`, the error and
each target's failure) and serialises itself as `vm -o json` prints it (`report.to_json()`).

    from vm_core import api

    client = api.connect()                      # the profile `vm` would use (VM_HOME, VM_PROFILE, ...)
    plan = client.fleet_plan(api.FleetCreateRequest(gpu="H100:8", count=4))
    print(plan.exit, plan.to_json()["price_per_hour"])

The contract (what blocks, what raises, the report schemas): docs/python-api.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..errors import VmError
    from .client import Client, Progress, connect
    from .confirm import Confirm, Confirmation
    from .events import EventList, EventsRequest
    from .fleet_maintain import FleetMaintained, WaitAdvanced
    from .fleet_reports import (
        ClusterPlanReport,
        FleetCreated,
        FleetDestroyed,
        FleetForgotten,
        FleetList,
        FleetPlanReport,
        FleetPowerReport,
        FleetReaped,
        FleetScaled,
        FleetStatus,
    )
    from .outcome import ExitKind, Outcome, Problem
    from .reports import (
        ConfigReport,
        CostReport,
        DestroyedVms,
        Gone,
        ImageList,
        InstanceList,
        InstanceReport,
        OfferList,
        ProviderList,
        VmsActed,
        VmsCreated,
        WatchdogReport,
    )
    from .requests import (
        ActionRequest,
        AuditRequest,
        CostRequest,
        CreateRequest,
        FleetCreateRequest,
        FleetDestroyRequest,
        FleetListRequest,
        FleetMaintainRequest,
        FleetNameRequest,
        FleetPowerRequest,
        FleetReapRequest,
        FleetReconcileRequest,
        FleetRepairRequest,
        FleetScaleRequest,
        GetRequest,
        ImagesRequest,
        ListRequest,
        OffersRequest,
        ProvidersRequest,
        ReservationsRequest,
        WatchdogRequest,
    )
    from .usage_reports import AuditReport, ReservationList

# name -> the module that defines it: importing vm_core.api (or one of its modules, as the CLI does) loads
# nothing else until a name is used.
_WHERE = {
    "ActionRequest": ".requests",
    "Client": ".client",
    "ClusterPlanReport": ".fleet_reports",
    "ConfigReport": ".reports",
    "Confirm": ".confirm",
    "Confirmation": ".confirm",
    "CreateRequest": ".requests",
    "DestroyedVms": ".reports",
    "EventList": ".events",
    "EventsRequest": ".events",
    "ExitKind": ".outcome",
    "FleetCreateRequest": ".requests",
    "FleetCreated": ".fleet_reports",
    "FleetDestroyRequest": ".requests",
    "FleetDestroyed": ".fleet_reports",
    "FleetForgotten": ".fleet_reports",
    "FleetList": ".fleet_reports",
    "FleetListRequest": ".requests",
    "FleetMaintainRequest": ".requests",
    "FleetMaintained": ".fleet_maintain",
    "FleetNameRequest": ".requests",
    "FleetPlanReport": ".fleet_reports",
    "FleetPowerReport": ".fleet_reports",
    "FleetPowerRequest": ".requests",
    "FleetReapRequest": ".requests",
    "FleetReaped": ".fleet_reports",
    "FleetReconcileRequest": ".requests",
    "FleetRepairRequest": ".requests",
    "FleetScaleRequest": ".requests",
    "FleetScaled": ".fleet_reports",
    "FleetStatus": ".fleet_reports",
    "GetRequest": ".requests",
    "Gone": ".reports",
    "ImageList": ".reports",
    "ImagesRequest": ".requests",
    "InstanceList": ".reports",
    "InstanceReport": ".reports",
    "ListRequest": ".requests",
    "OfferList": ".reports",
    "OffersRequest": ".requests",
    "Outcome": ".outcome",
    "Problem": ".outcome",
    "Progress": ".client",
    "ProviderList": ".reports",
    "ProvidersRequest": ".requests",
    "VmError": "..errors",
    "VmsActed": ".reports",
    "VmsCreated": ".reports",
    "AuditReport": ".usage_reports",
    "AuditRequest": ".requests",
    "CostReport": ".reports",
    "CostRequest": ".requests",
    "ReservationList": ".usage_reports",
    "ReservationsRequest": ".requests",
    "WaitAdvanced": ".fleet_maintain",
    "WatchdogReport": ".reports",
    "WatchdogRequest": ".requests",
    "connect": ".client",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "ActionRequest", "Client", "ClusterPlanReport", "ConfigReport", "Confirm", "Confirmation", "CreateRequest",
    "DestroyedVms", "ExitKind", "FleetCreateRequest", "FleetCreated", "FleetDestroyRequest", "FleetDestroyed",
    "FleetForgotten", "FleetList", "FleetListRequest", "FleetNameRequest", "FleetPlanReport", "FleetReapRequest",
    "FleetPowerReport", "FleetPowerRequest",
    "FleetMaintainRequest", "FleetMaintained", "WaitAdvanced",
    "AuditReport", "AuditRequest", "ReservationList", "ReservationsRequest",
    "CostReport", "CostRequest",
    "FleetReaped", "FleetReconcileRequest", "FleetRepairRequest", "FleetScaleRequest", "FleetScaled",
    "FleetStatus", "GetRequest", "Gone", "ImageList", "ImagesRequest", "InstanceList", "InstanceReport",
    "ListRequest", "OfferList", "OffersRequest", "Outcome", "Problem", "Progress", "ProviderList",
    "ProvidersRequest", "VmError", "VmsActed", "VmsCreated", "connect",
    "EventList", "EventsRequest",
    "WatchdogReport", "WatchdogRequest",
]
