"""What a key may not read, and failure codes the SDK does not know, through the wire against the Crusoe mock."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from crusoe_sdk import OperationFailed, PermissionDenied, ProjectUnavailable
from crusoe_testkit import client_for, create, crusoe_config
from mock_clouds.core.models import Faults, Provider


def test_reservations_unreadable_is_permission_denied_not_a_project_error(mock_clouds_factory: Any) -> None:
    """A key that may use the project but not read the organisation's reservations gets 403 there (research
    real-clouds.md 3.2 "Organisation reservations read"): PermissionDenied, not ProjectUnavailable, so callers
    can go on without reservations; the project stays readable."""

    def unreadable(state: Any) -> None:
        crusoe_config(state).extra["reservations_readable"] = False

    client = client_for(mock_clouds_factory(providers=("crusoe",), configure=unreadable))
    with pytest.raises(PermissionDenied) as info:
        client.list_reservations(status="effective").to_list()
    assert not isinstance(info.value, ProjectUnavailable) and info.value.status == 403
    assert client.get_project().id == client.project_id


def test_an_unknown_operation_failure_code_is_logged_with_the_operation(mock_clouds_factory: Any,
                                                                        caplog: Any) -> None:
    """Quota failure codes are undocumented (research real-clouds.md 3.3 "Errors": "Log unmapped
    operation-failure codes under --debug so they can be learned"): the body is logged at debug level."""
    clouds = mock_clouds_factory(providers=("crusoe",))
    clouds.world.configure_faults(Provider.CRUSOE, Faults(seed=3, op_failure_rate=1.0))
    caplog.set_level(logging.DEBUG, logger="crusoe_sdk")
    op = create(client_for(clouds), "doomed")
    with pytest.raises(OperationFailed) as info:
        op.result(timeout=120)
    assert info.value.code and f"operation {op.id} failed with a code this SDK does not know" in caplog.text
    assert f'"operation_id":"{op.id}"' in caplog.text
