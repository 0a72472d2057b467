"""The client against the in-process Crusoe mock, over the wire: catalogue, lifecycle, paging,
reservations."""

from __future__ import annotations

from typing import Any

import pytest
from crusoe_sdk import (
    ById,
    CrusoeClient,
    Instance,
    InstanceState,
    NotFound,
    OnDemand,
    OperationState,
)
from crusoe_testkit import DEFAULT_PROJECT, create, crusoe_config

H100 = "h100-80gb-sxm-ib.8x"
CHEAPEST_H100_RESERVATION = "804bf3a2-5b7e-4c1d-9f0a-6e2d8c4b1a11"  # 2.65 $/GPU-h
OTHER_H100_RESERVATION = "e384a1de-3f2c-4b5a-8d9e-0c1b2a3f4e22"  # 2.90 $/GPU-h


# ---------------------------------------------------------------------------------------------- catalogue
def test_projects_and_organisation(client: CrusoeClient, clouds: Any) -> None:
    projects = client.list_projects().to_list()
    assert {p.name for p in projects} == {"default", "research"}  # only the key's organisation
    org = clouds.endpoints["crusoe"]["organization_id"]
    assert all(p.organization_id == org for p in projects)
    assert client.get_project().id == DEFAULT_PROJECT
    assert client.organization_id() == org
    assert [p.name for p in client.list_projects(name="research")] == ["research"]


def test_locations_types_capacities_quotas(client: CrusoeClient) -> None:
    assert "us-east1-a" in client.list_locations().to_list()
    types = {t.product_name: t for t in client.list_vm_types()}
    assert types[H100].num_gpu == 8 and types[H100].gpu_type == "H100-SXM-80GB"
    capacities = client.list_capacities(types=[H100], locations=["us-east1-a"]).to_list()
    assert [(c.type, c.location) for c in capacities] == [(H100, "us-east1-a")]
    assert capacities[0].quantity > 0
    quotas = {q.programmatic_name: q for q in client.list_quotas()}
    assert quotas["h100"].max == 256 and quotas["h100"].available == 256


def test_capacity_goes_down_when_an_on_demand_vm_runs(client: CrusoeClient) -> None:
    def free() -> int:
        rows = client.list_capacities(types=["l40s-48gb.1x"], locations=["eu-iceland1-a"]).to_list()
        return rows[0].quantity

    before = free()
    create(client, "cap-1", reservation_specification=OnDemand()).result()
    assert free() == before - 1


# ---------------------------------------------------------------------------------------------- lifecycle
def test_full_lifecycle(client: CrusoeClient) -> None:
    op = create(client, "life-1")
    assert op.id and op.resource_id and op.state is OperationState.IN_PROGRESS
    vm = op.result()
    assert isinstance(vm, Instance)
    assert (vm.id, vm.name, vm.state, vm.project_id) == (op.resource_id, "life-1", InstanceState.RUNNING,
                                                         DEFAULT_PROJECT)
    assert vm.public_ipv4 and vm.private_ipv4 and vm.disks[0].attachment_type == "os"
    assert vm.created_at is not None and vm.billing_type == "On-demand"
    assert client.get_instance(vm.id) == vm

    stopped = client.begin_stop_instance(vm.id).result()
    assert stopped.state is InstanceState.SHUTOFF and stopped.state.is_stopped
    started = client.begin_start_instance(vm.id).result()
    assert started.state is InstanceState.RUNNING
    assert client.begin_reset_instance(vm.id).result().state is InstanceState.RUNNING

    delete = client.begin_delete_instance(vm.id)
    assert delete.id and delete.result() is None
    with pytest.raises(NotFound):
        client.get_instance(vm.id)
    assert client.find_instance("life-1") is None


def test_operations_are_listed_and_readable(client: CrusoeClient) -> None:
    vm = create(client, "ops-1").result()
    client.begin_stop_instance(vm.id).result()
    ops = client.list_operations(resource_id=vm.id).to_list()
    assert len(ops) == 2 and all(o.resource_id == vm.id for o in ops)
    assert client.get_operation(ops[0].operation_id).state is OperationState.SUCCEEDED
    assert client.list_operations(resource_id=vm.id, states=[OperationState.IN_PROGRESS]).to_list() == []


def test_delete_of_a_missing_instance(client: CrusoeClient) -> None:
    missing = "00000000-0000-4000-8000-000000000000"
    op = client.begin_delete_instance(missing)
    assert (op.id, op.state, op.result()) == ("", OperationState.SUCCEEDED, None)
    client.delete_instance(missing)  # blocking form, also fine
    with pytest.raises(NotFound) as info:
        client.begin_delete_instance(missing, missing_ok=False)
    assert info.value.status == 404 and info.value.code == "not_found"


def test_delete_while_creating_returns_the_delete_and_twice_is_harmless(client: CrusoeClient) -> None:
    op = create(client, "half-1")
    first = client.begin_delete_instance(op.resource_id)
    second = client.begin_delete_instance(op.resource_id)
    assert second.id == first.id  # the delete in progress
    first.result()
    assert client.begin_delete_instance(op.resource_id).id == ""  # gone


# ---------------------------------------------------------------------------------------------- listing
def test_paging_is_lazy_stable_and_complete(client: CrusoeClient) -> None:
    created = [create(client, f"page-{i}").resource_id for i in range(5)]
    pages = list(client.list_instances(page_size=2).by_page())
    assert [len(p) for p in pages] == [2, 2, 1]
    assert [vm.id for p in pages for vm in p] == created  # sort=created_at: creation order, no duplicates
    assert pages[-1].next_token == ""
    resumed = list(client.list_instances(page_size=2).by_page(continuation_token=pages[0].next_token))
    assert [vm.id for p in resumed for vm in p] == created[2:]
    assert [vm.id for vm in client.list_instances(page_size=2, sort="name")] == created


def test_filters(client: CrusoeClient) -> None:
    a = create(client, "filter-a").result()
    b = create(client, "filter b", type="l40s-48gb.8x").resource_id  # a space: escaped `+` in the query
    assert [vm.id for vm in client.list_instances(names=["filter b"])] == [b]
    assert [vm.id for vm in client.list_instances(ids=[a.id, b])] == [a.id, b]
    assert [vm.id for vm in client.list_instances(types=["l40s-48gb.1x"])] == [a.id]
    assert [vm.id for vm in client.list_instances(states=[InstanceState.RUNNING])] == [a.id]
    assert [vm.id for vm in client.list_instances(locations=["us-east1-a"])] == []
    with pytest.raises(ValueError):
        client.list_instances(names=["a,b"])


def test_find_instance(client: CrusoeClient) -> None:
    vm = create(client, "findme").result()
    create(client, "findme-not")
    found = client.find_instance("findme")
    assert found is not None and found.id == vm.id
    assert client.find_instance("nobody") is None


# ---------------------------------------------------------------------------------------------- reservations
def reserved_quantity(client: CrusoeClient, reservation_id: str) -> int:
    return client.get_reservation(reservation_id).used_quantity


def test_reservations_listed_and_read(client: CrusoeClient) -> None:
    reservations = {r.id: r for r in client.list_reservations()}
    assert set(reservations) == {CHEAPEST_H100_RESERVATION, OTHER_H100_RESERVATION}
    cheapest = client.get_reservation(CHEAPEST_H100_RESERVATION)
    assert (cheapest.product_line, cheapest.quantity, cheapest.price) == ("h100", 32, "2.65")
    assert client.list_reservations(status="effective").to_list()
    with pytest.raises(NotFound):
        client.get_reservation("00000000-0000-4000-8000-000000000000")


def test_create_takes_the_cheapest_reservation_stop_releases_start_reclaims(client: CrusoeClient) -> None:
    vm = create(client, "res-1", type=H100, location="us-east1-a").result()
    assert vm.reservation_id == CHEAPEST_H100_RESERVATION
    reservation = client.get_reservation(CHEAPEST_H100_RESERVATION)
    assert reservation.used_quantity == 8 and reservation.vm_ids == [vm.id]

    assert client.begin_stop_instance(vm.id).result().reservation_id == ""
    assert reserved_quantity(client, CHEAPEST_H100_RESERVATION) == 0
    assert client.begin_start_instance(vm.id).result().reservation_id == CHEAPEST_H100_RESERVATION
    assert reserved_quantity(client, CHEAPEST_H100_RESERVATION) == 8


def test_reservation_specification_on_demand_and_by_id(client: CrusoeClient) -> None:
    """`ById` is sent and ignored: the VM lands where lowest_cost puts it and `reservation_id` says where, as
    Terraform reads it (terraform-provider-crusoe internal/vm/vm_resource.go:468-476: "The requested
    reservation_id was ignored by the backend")."""
    on_demand = create(client, "od-1", type=H100, location="us-east1-a", reservation_specification=OnDemand())
    by_id = create(client, "id-1", type=H100, location="us-east1-a",
                   reservation_specification=ById(OTHER_H100_RESERVATION))
    assert on_demand.result().reservation_id == ""
    assert by_id.result().reservation_id == CHEAPEST_H100_RESERVATION
    assert client.get_reservation(OTHER_H100_RESERVATION).vm_ids == []


def test_reserve_is_ignored_and_unreserve_releases_both_synchronous(client: CrusoeClient) -> None:
    """RESERVE's id is ignored by the backend (terraform-provider-crusoe internal/vm/vm_by_template_resource.go:
    616-618); UNRESERVE moves a VM off its reservation. Both operations are done in the PATCH response."""
    vm = create(client, "rsv-1", type=H100, location="us-east1-a", reservation_specification=OnDemand())
    vm = vm.result()
    reserve = client.begin_reserve_instance(vm.id, OTHER_H100_RESERVATION)
    assert reserve.state is OperationState.SUCCEEDED  # already done in the PATCH response
    assert reserve.result().reservation_id == ""
    assert reserved_quantity(client, OTHER_H100_RESERVATION) == 0
    placed = create(client, "rsv-2", type=H100, location="us-east1-a").result()
    assert placed.reservation_id == CHEAPEST_H100_RESERVATION
    unreserve = client.begin_unreserve_instance(placed.id)
    assert unreserve.state is OperationState.SUCCEEDED
    assert unreserve.result().reservation_id == ""


def test_stop_then_start_reclaims_the_reservation(clouds: Any, client: CrusoeClient) -> None:
    vm = create(client, "rst-1", type=H100, location="us-east1-a").result()
    assert client.begin_stop_instance(vm.id).result().reservation_id == ""
    restarted = client.begin_start_instance(vm.id).result()
    assert restarted.reservation_id == vm.reservation_id == CHEAPEST_H100_RESERVATION
    assert crusoe_config(clouds.world.state).reservations  # the scenario really has reservations
