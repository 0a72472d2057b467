"""The client's project chosen as Crusoe's CLI and Terraform provider choose it, against the mock: a UUID used as
is, a name looked up, none meaning the only project the key can see; resolved once, on first use."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest
from crusoe_sdk import ProjectUnavailable, ProjectUnresolved
from crusoe_testkit import DEFAULT_PROJECT, OTHER_ORG_PROJECT, client_for, crusoe_config
from mock_clouds.core.models import WorldState

RESEARCH = "a3c2b7d1-0e4f-4a6b-9c8d-7e6f5a4b3c02"  # the key's organisation's second project in the default world
ORGANIZATION = "2b1f6a4e-6f0e-4b8e-8d43-4b0f1c7e9a10"


def only_default(state: WorldState) -> None:
    config = crusoe_config(state)
    config.projects = [p for p in config.projects if p.name != "research"]


def project_reads(caplog: pytest.LogCaptureFixture) -> int:
    return sum("/organizations/projects" in r.getMessage() and "->" in r.getMessage() for r in caplog.records)


@pytest.fixture(autouse=True)
def debug_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="crusoe_sdk")


def test_a_uuid_is_used_as_is(clouds: Any, caplog: pytest.LogCaptureFixture) -> None:
    client = client_for(clouds, project_id=None, project=RESEARCH)
    assert client.project_id == RESEARCH and project_reads(caplog) == 0
    assert client.list_instances().to_list() == []


def test_a_name_is_looked_up_once(clouds: Any, caplog: pytest.LogCaptureFixture) -> None:
    client = client_for(clouds, project_id=None, project="research")
    assert project_reads(caplog) == 0  # nothing before it is needed
    assert client.list_instances().to_list() == []
    assert client.project_id == RESEARCH and client.project == "research"
    assert client.organization_id() == ORGANIZATION  # known from the lookup
    assert project_reads(caplog) == 1


def test_the_environment_names_the_project(clouds: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRUSOE_DEFAULT_PROJECT", "research")
    assert client_for(clouds, project_id=None).project_id == RESEARCH


def test_unset_means_the_only_project_there_is(mock_clouds_factory: Any) -> None:
    clouds = mock_clouds_factory(providers=("crusoe",), configure=only_default)
    assert client_for(clouds, project_id=None).project_id == DEFAULT_PROJECT


def test_unset_with_several_projects_lists_them(clouds: Any) -> None:
    client = client_for(clouds, project_id=None)
    with pytest.raises(ProjectUnresolved) as info:
        client.list_instances().to_list()
    error = info.value
    assert error.wanted == "" and {p.id for p in error.projects} == {DEFAULT_PROJECT, RESEARCH}
    assert error.listing() == f"default ({DEFAULT_PROJECT}), research ({RESEARCH})"
    assert str(error) == (
        f"no project chosen and this key can see 2 projects: default ({DEFAULT_PROJECT}), research ({RESEARCH}); "
        "pass project= (a name or UUID) or set CRUSOE_DEFAULT_PROJECT"
    )


def test_a_name_that_matches_nothing_lists_the_projects_there_are(clouds: Any) -> None:
    client = client_for(clouds, project_id=None, project="nope")
    with pytest.raises(ProjectUnresolved) as info:
        _ = client.project_id
    assert info.value.wanted == "nope" and len(info.value.projects) == 2
    assert str(info.value).startswith("no project named 'nope' among the projects this key can see: default (")


def test_another_organisations_project_is_named_not_blamed_on_the_credentials(clouds: Any) -> None:
    client = client_for(clouds, project_id=None, project=OTHER_ORG_PROJECT)
    with pytest.raises(ProjectUnavailable) as info:
        client.list_instances().to_list()
    assert info.value.project_id == OTHER_ORG_PROJECT and info.value.status == 403
    assert f"project {OTHER_ORG_PROJECT} is unknown or not readable with this key" in str(info.value)


def test_threads_resolve_the_project_once(clouds: Any, caplog: pytest.LogCaptureFixture) -> None:
    client = client_for(clouds, project_id=None, project="research")
    barrier = threading.Barrier(8)
    seen: list[str] = []

    def read() -> None:
        barrier.wait()
        seen.append(client.project_id)

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert seen == [RESEARCH] * 8 and project_reads(caplog) == 1


def test_a_failed_lookup_is_not_remembered(clouds: Any) -> None:
    client = client_for(clouds, project_id=None)
    with pytest.raises(ProjectUnresolved):
        _ = client.project_id
    with clouds.world.tx() as world:
        only_default(world.state)  # the organisation now has one project
    assert client.project_id == DEFAULT_PROJECT
