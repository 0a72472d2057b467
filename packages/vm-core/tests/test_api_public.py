"""vm_core.api's public surface: the names it exports (a change to them is deliberate: edit EXPECTED), how a
report's problem becomes an exit kind and the CLI's exit code, and that `vm --help` does not load the API."""

from __future__ import annotations

import dataclasses
import inspect
import subprocess
import sys

import pytest
import vm_core.api as api
from vm_core import errors
from vm_core.api import requests
from vm_core.api.outcome import ExitKind, Outcome, Problem
from vm_core.cli.exits import EXIT_CODES, exit_for

EXPECTED = {
    "ActionRequest", "Client", "ClusterPlanReport", "ConfigReport", "Confirm", "Confirmation", "CreateRequest",
    "DestroyedVms", "ExitKind", "FleetCreateRequest", "FleetCreated", "FleetDestroyRequest", "FleetDestroyed",
    "FleetForgotten", "FleetList", "FleetListRequest", "FleetNameRequest", "FleetPlanReport", "FleetReapRequest",
    "FleetReaped", "FleetReconcileRequest", "FleetRepairRequest", "FleetScaleRequest", "FleetScaled",
    "FleetStatus", "GetRequest", "Gone", "ImageList", "ImagesRequest", "InstanceList", "InstanceReport",
    "ListRequest", "OfferList", "OffersRequest", "Outcome", "Problem", "Progress", "ProviderList",
    "ProvidersRequest", "VmError", "VmsActed", "VmsCreated", "connect",
    "FleetPowerReport", "FleetPowerRequest",
    "FleetMaintainRequest", "FleetMaintained", "WaitAdvanced",
    "EventList", "EventsRequest",
    "AuditReport", "AuditRequest", "ReservationList", "ReservationsRequest",
    "CostReport", "CostRequest",
    "WatchdogReport", "WatchdogRequest",
}


def test_the_public_names_are_exactly_the_expected_ones() -> None:
    assert set(api.__all__) == EXPECTED
    assert len(api.__all__) == len(EXPECTED)  # no name twice
    assert set(dir(api)) >= EXPECTED


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(api, name) is not None


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Clients'"):
        api.Clients  # noqa: B018


def test_every_request_is_a_frozen_dataclass() -> None:
    found = [c for _, c in inspect.getmembers(requests, inspect.isclass)
             if c.__module__ == requests.__name__ and c.__name__.endswith("Request")]
    assert len(found) == 21
    for cls in found:
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, cls  # type: ignore[attr-defined]


def test_every_report_is_an_outcome_with_a_serialisation() -> None:
    reports = [getattr(api, n) for n in EXPECTED if n.endswith(("Report", "List", "Created", "Destroyed", "Status",
                                                                  "Scaled", "Forgotten", "Reaped", "Acted", "Vms"))]
    assert len(reports) == 24
    for cls in reports:
        assert issubclass(cls, Outcome) and callable(cls.to_json), cls


def _error_classes() -> list[type[errors.VmError]]:
    return [c for _, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, errors.VmError)]


@pytest.mark.parametrize("cls", _error_classes(), ids=lambda c: c.__name__)
def test_each_error_class_exits_with_its_documented_code(cls: type[errors.VmError]) -> None:
    """The exit code of an error's kind is the one errors.py documents for its class."""
    error = cls.__new__(cls)
    assert exit_for(ExitKind.of(error)) == cls.exit_code


def test_every_kind_has_an_exit_code_and_no_problem_is_ok() -> None:
    assert set(EXIT_CODES) == set(ExitKind)
    assert ExitKind.of(None) is ExitKind.OK and exit_for(ExitKind.OK) == 0
    assert Outcome().exit is ExitKind.OK and Outcome().ok
    partial = Outcome(problem=Problem.of(errors.PartialFailure("2 of 3 VMs failed"), [("a", errors.NotFound("x"))]))
    assert partial.exit is ExitKind.PARTIAL and not partial.ok and exit_for(partial.exit) == 7
    assert partial.problem is not None and partial.problem.failures[0][0] == "a"


def test_the_cli_help_names_the_api_limit() -> None:
    from vm_core.api.fleets import MAX_FLEET
    from vm_core.cli.cmd_fleet_scale import MAX_FLEET as SHOWN

    assert SHOWN == MAX_FLEET


PROBE = """
import contextlib, io, sys
from vm_core.cli.main import run
with contextlib.redirect_stdout(io.StringIO()):
    code = run({args!r})
print(code, sorted(m for m in sys.modules if m == "vm_core.api" or m.startswith("vm_core.api.")))
"""


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["list", "--help"], ["fleet", "--help"],
                                  ["fleet", "create", "--help"]])
def test_help_does_not_import_the_api(args: list[str]) -> None:
    done = subprocess.run([sys.executable, "-c", PROBE.format(args=args)], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["0", "[]"], done.stderr
