"""The spend ledger fed by the single-VM verbs through the real `vm`: a create is entered as soon as the cloud
accepts it, a stop and a start split its intervals, a destroy closes it, and a `vm list` closes a VM that went
away outside vm. A VM vm did not create is never entered."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vm_core.fleet.store import SqliteFleetStore

if TYPE_CHECKING:
    from conftest import VmHome


def _ledger(vm: VmHome) -> SqliteFleetStore:
    return SqliteFleetStore(vm.path / "vm.db")


def _states(store: SqliteFleetStore, instance_id: str) -> list[str]:
    return [i.state for i in store.ledger_intervals() if i.instance_id == instance_id]


def test_single_vm_verbs_enter_created_stopped_started_and_destroyed(fresh_home: VmHome) -> None:
    vm = fresh_home
    made = vm.ok("create", "-p", "crusoe", "--gpu", "H100:8", "--name", "spend-1", "-o", "json").json()
    store = _ledger(vm)
    [entry] = store.ledger_vms()
    assert (entry.provider, entry.instance_id, entry.name, entry.fleet, entry.gpu, entry.gpu_count) == (
        "crusoe", made["id"], "spend-1", "", "H100", 8)
    assert entry.shape and entry.region == made["region"] and entry.account.startswith("project ")
    assert entry.created_by and entry.profile == "local" and entry.closed_at is None
    assert _states(store, made["id"])[-1] == "running"
    running = store.ledger_intervals()[-1]
    assert running.price_per_hour == made["price_per_hour"] and running.ended_at is None
    vm.ok("stop", made["id"], "-p", "crusoe")
    vm.ok("start", made["id"], "-p", "crusoe")
    assert _states(store, made["id"])[-2:] == ["stopped", "running"]
    vm.ok("destroy", made["id"], "-p", "crusoe", "-y")
    closed = store.ledger_vms()[0]
    assert closed.closed_at is not None and all(i.ended_at is not None for i in store.ledger_intervals())
    spans = store.ledger_intervals()
    assert all(a.ended_at == b.started_at for a, b in zip(spans, spans[1:], strict=False))  # no gap, no overlap


def test_a_vm_gone_outside_vm_is_closed_by_the_next_listing(fresh_home: VmHome) -> None:
    from lambda_sdk import LambdaClient

    vm = fresh_home
    made = vm.ok("create", "-p", "lambda", "--gpu", "H100", "--name", "spend-2", "-o", "json").json()
    endpoint = vm.endpoints()["lambda"]
    client = LambdaClient(endpoint["api_key"], base_url=endpoint["url"])
    client.terminate_instance(made["id"])
    store = _ledger(vm)
    assert store.ledger_vms(open_only=True)  # vm has not looked yet
    for _ in range(100):  # Lambda shows it terminating for a while: an interval of its own, still open
        if made["id"] not in {i["id"] for i in vm.ok("list", "-p", "lambda", "-o", "json").json()}:
            break
    [entry] = store.ledger_vms()
    assert entry.closed_at is not None and store.ledger_intervals()[-1].ended_at == entry.closed_at


def test_a_vm_vm_did_not_create_is_never_entered(fresh_home: VmHome) -> None:
    from lambda_sdk import LambdaClient

    vm = fresh_home
    vm.ok("list")
    endpoint = vm.endpoints()["lambda"]
    client = LambdaClient(endpoint["api_key"], base_url=endpoint["url"])
    offer = vm.ok("offers", "--gpu", "H100", "-p", "lambda", "-o", "json").json()[0]
    key = client.add_ssh_key("colleague", vm.ssh_key)
    theirs = client.launch_instance(region_name=offer["region"], instance_type_name=offer["shape"],
                                    ssh_key_names=[key.name], name="colleague").instance_id
    made = vm.ok("create", "-p", "lambda", "--gpu", "H100", "--name", "mine", "-o", "json").json()
    listed = {i["id"] for i in vm.ok("list", "-o", "json").json()}
    assert theirs in listed and [v.instance_id for v in _ledger(vm).ledger_vms()] == [made["id"]]
