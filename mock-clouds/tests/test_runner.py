"""MockClouds in-process: endpoints, persistence across restarts, and the admin API."""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

import requests
from mock_clouds.core.models import CreateFailure, OpKind, Provider, VMState
from mock_clouds.core.placement import ReservationChoice
from mock_clouds.runner import MockClouds

NEBIUS_PROJECT = "project-e00z6b02t8ddk96c49"


def create_nebius(clouds: MockClouds, name: str):
    with clouds.world.tx() as world:
        return world.create_vm(Provider.NEBIUS, scope=NEBIUS_PROJECT, region="eu-north1",
                               shape="gpu-h100-sxm/1gpu-16vcpu-200gb", name=name, choice=ReservationChoice(),
                               on_failure=CreateFailure.STOP)


def wait_for(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


def test_endpoints_file_matches_the_running_servers(mock_clouds: MockClouds) -> None:
    path = mock_clouds.state_dir / "endpoints.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == mock_clouds.endpoints
    assert mock_clouds.endpoints["lambda"]["url"] == f"http://127.0.0.1:{mock_clouds.port('lambda')}/api/v1"
    # a Nebius client is given the default project only and discovers the rest, as a real user's does
    assert mock_clouds.endpoints["nebius"]["project_id"].startswith("project-e00")
    assert not {"projects", "subnet_id"} & set(mock_clouds.endpoints["nebius"])


def test_world_and_credentials_survive_a_restart(mock_clouds_factory, tmp_path: Path) -> None:
    first = mock_clouds_factory(tmp_path)
    vm, op = create_nebius(first, "keep-me")
    secret = first.endpoints["crusoe"]["secret_key"]
    first.stop()
    second = mock_clouds_factory(tmp_path)
    assert second.endpoints["crusoe"]["secret_key"] == secret
    with second.world.tx() as world:
        restored = world.vm(Provider.NEBIUS, vm.id)
        assert restored is not None and restored.name == "keep-me"
        assert world.operation(Provider.NEBIUS, op.id) is not None


def test_operation_in_flight_during_a_restart_completes_afterwards(mock_clouds_factory, tmp_path: Path) -> None:
    first = mock_clouds_factory(tmp_path, time_scale=0.02)  # create takes 2.4 s
    vm, op = create_nebius(first, "in-flight")
    first.stop()
    second = mock_clouds_factory(tmp_path, time_scale=0.02)

    def running() -> bool:
        with second.world.tx() as world:
            return world.vm(Provider.NEBIUS, vm.id).state == VMState.RUNNING

    wait_for(running)
    with second.world.tx() as world:
        assert world.operation(Provider.NEBIUS, op.id).done


def test_admin_api_requires_its_token(mock_clouds: MockClouds) -> None:
    admin = mock_clouds.endpoints["admin"]
    assert requests.get(admin["url"] + "/inventory", timeout=5).status_code == 401
    wrong = requests.get(admin["url"] + "/inventory", headers={"Authorization": "Bearer nope"}, timeout=5)
    assert wrong.status_code == 401


def test_admin_inventory_and_faults(mock_clouds: MockClouds) -> None:
    vm, _ = create_nebius(mock_clouds, "listed")
    admin = mock_clouds.endpoints["admin"]
    headers = {"Authorization": f"Bearer {admin['token']}"}
    rows = requests.get(admin["url"] + "/inventory", headers=headers, timeout=5).json()["instances"]
    expected = {"provider": "nebius", "id": vm.id, "name": "listed", "state": "creating",
                "scope": NEBIUS_PROJECT, "region": "eu-north1", "shape": "gpu-h100-sxm/1gpu-16vcpu-200gb",
                "reservation_id": "capacityblockgroup-e00h100block000001",
                # made in the world directly: no create request said what it boots
                "image": "", "disk_gib": None, "startup_script_sha256": "", "startup_script_bytes": 0}
    assert len(rows) == 1 and {key: rows[0].get(key) for key in expected} == expected
    resp = requests.post(admin["url"] + "/faults/crusoe", json={"drop_rate": 0.5, "seed": 9}, headers=headers,
                         timeout=5)
    assert resp.status_code == 200 and resp.json()["drop_rate"] == 0.5
    assert mock_clouds.world.state.providers["crusoe"].faults.drop_rate == 0.5
    bad = requests.post(admin["url"] + "/faults/crusoe", json={"drop_rate": 2}, headers=headers, timeout=5)
    assert bad.status_code == 400 and "between 0 and 1" in bad.json()["error"]
    unknown = requests.post(admin["url"] + "/faults/crusoe", json={"nope": 1}, headers=headers, timeout=5)
    assert unknown.status_code == 400


def test_admin_preempt_refuses_unknown_providers_and_instances(mock_clouds: MockClouds) -> None:
    admin = mock_clouds.endpoints["admin"]
    headers = {"Authorization": f"Bearer {admin['token']}"}
    unknown_cloud = requests.post(admin["url"] + "/preempt/aws/i-1", headers=headers, timeout=5)
    assert unknown_cloud.status_code == 400
    missing = requests.post(admin["url"] + "/preempt/nebius/computeinstance-e00nope", headers=headers, timeout=5)
    assert missing.status_code == 404 and "not found" in missing.json()["error"]


def test_deleted_vms_leave_the_inventory(mock_clouds: MockClouds) -> None:
    vm, _ = create_nebius(mock_clouds, "short-lived")
    with mock_clouds.world.tx() as world:
        world.begin(Provider.NEBIUS, vm.id, OpKind.DELETE)

    def gone() -> bool:
        with mock_clouds.world.tx() as world:
            return world.vm(Provider.NEBIUS, vm.id) is None

    wait_for(gone)
