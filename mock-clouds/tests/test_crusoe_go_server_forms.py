"""How the Crusoe mock writes what a Go server may write: quota counters as strings, nil slices as `null`."""

from __future__ import annotations

import pytest
from mock_clouds.core.models import WorldState
from mock_clouds.crusoe.testing import L40S, CrusoeEnv, create_vm, get_vm, start_env


@pytest.fixture
def crusoe(mock_clouds_factory) -> CrusoeEnv:
    return start_env(mock_clouds_factory)


def quotas(env: CrusoeEnv) -> dict[str, dict[str, object]]:
    listed = env.client.get(f"/projects/{env.project}/quotas").json()["quotas"]
    return {q["programmatic_name"]: q for q in listed}


def test_quota_counters_are_strings_by_default(crusoe: CrusoeEnv) -> None:
    """dstack backends/crusoe/compute.py:174-175: "The API documents counters as integers but returns them as
    strings" (research real-clouds.md Part 2 D9)."""
    l40s = quotas(crusoe)["l40s"]
    assert all(isinstance(l40s[k], str) and str(l40s[k]).isdigit() for k in ("max", "used", "available"))


def test_quota_counters_as_integers_when_the_scenario_says_so(mock_clouds_factory) -> None:
    """The swagger's `Quota` (client-go swagger/v1alpha5/swagger.json) declares integers: the scenario may ask
    for them."""

    def integers(state: WorldState) -> None:
        state.providers["crusoe"].extra["quota_counters"] = "integer"

    l40s = quotas(start_env(mock_clouds_factory, integers))["l40s"]
    assert all(isinstance(l40s[k], int) for k in ("max", "used", "available"))


def test_nil_slices_are_written_as_null_when_the_scenario_says_so(mock_clouds_factory) -> None:
    """A Go slice without `omitempty` left nil is `null` (client-go swagger/v1alpha5/model_instance_v1_alpha5.go
    @e23c062; research real-clouds.md Part 3 R1); by default an empty slice is `[]`."""

    def nil_slices(state: WorldState) -> None:
        state.providers["crusoe"].extra["nil_slices"] = True

    plain = start_env(mock_clouds_factory)
    assert create_vm(plain.client, plain.project, "built", type_=L40S, location="eu-iceland1-a")[
        "host_channel_adapters"] == []
    env = start_env(mock_clouds_factory, nil_slices)
    vm = create_vm(env.client, env.project, "nil", type_=L40S, location="eu-iceland1-a")
    assert get_vm(env.client, env.project, vm["id"])["host_channel_adapters"] is None
