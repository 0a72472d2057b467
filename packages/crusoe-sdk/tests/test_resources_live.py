"""Disks, IB networks and partitions, VPC subnets, SSH keys and organisation quotas through the wire against the
Crusoe mock (research real-clouds.md Part 2 D8 and section 4; paths and shapes of crusoecloud/client-go
swagger/v1alpha5 @e23c062: api_disks.go, api_disk_operations.go, api_ib_networks.go, api_ib_partitions.go,
api_vpc_subnets.go, api_ssh_keys.go, api_quotas.go)."""

from __future__ import annotations

import pytest
from crusoe_sdk import BadRequest, CrusoeClient, DiskAttachment, HostChannelAdapterRequest, NotFound
from crusoe_testkit import SSH_KEY, create

H100 = "h100-80gb-sxm-ib.8x"
EAST = "us-east1-a"


def test_data_disk_lifecycle_as_dstack_uses_it(client: CrusoeClient) -> None:
    """dstack: create the disk, wait on /storage/disks/operations/{id}, attach it at create with
    attachment_type data, delete it after the VM (backends/crusoe/compute.py create_instance, terminate_instance).
    Deleting it again succeeds (already gone)."""
    disk = client.begin_create_disk(name="data-1", size="100GiB", location="eu-iceland1-a").result(timeout=120)
    assert (disk.name, disk.size, disk.attached_to) == ("data-1", "100GiB", [])
    assert [d.id for d in client.list_disks(names=["data-1"])] == [disk.id]
    vm = create(client, "with-data", disks=[DiskAttachment(disk_id=disk.id)]).result(timeout=120)
    assert [d.id for d in vm.disks if d.attachment_type == "data"] == [disk.id]
    assert [a.vm_id for a in client.get_disk(disk.id).attached_to] == [vm.id]
    with pytest.raises(BadRequest):
        client.delete_disk(disk.id, timeout=120)  # attached
    client.delete_instance(vm.id, timeout=120)
    client.delete_disk(disk.id, timeout=120)
    with pytest.raises(NotFound):
        client.get_disk(disk.id)
    client.delete_disk(disk.id, timeout=120)
    assert client.begin_delete_disk(disk.id).done()


def test_ib_partition_puts_a_vm_on_a_fabric(client: CrusoeClient) -> None:
    """dstack's cluster placement: the IB network of the location whose capacities name the type, a partition
    on it, `host_channel_adapters: [{ib_partition_id}]` at create (compute.py create_placement_group,
    create_instance); deleting the partition twice succeeds."""
    network = next(n for n in client.list_ib_networks() if n.location == EAST and n.hosts(H100))
    partition = client.create_ib_partition(name="fleet-fabric", ib_network_id=network.id)
    assert client.get_ib_partition(partition.id) == partition
    assert [p.id for p in client.list_ib_partitions()] == [partition.id]
    vm = create(client, "ib-vm", type=H100, location=EAST,
                host_channel_adapters=[HostChannelAdapterRequest(partition.id)]).result(timeout=120)
    assert [h.ib_partition_id for h in vm.host_channel_adapters] == [partition.id]
    client.delete_instance(vm.id, timeout=120)
    client.delete_ib_partition(partition.id)
    client.delete_ib_partition(partition.id)
    with pytest.raises(NotFound):
        client.delete_ib_partition(partition.id, missing_ok=False)


def test_a_cluster_on_one_partition_is_one_fabric_and_the_partition_outlives_no_vm(client: CrusoeClient) -> None:
    """dstack's multi-node placement puts every VM of a cluster on one partition of the location's IB network
    (backends/crusoe/compute.py create_placement_group, create_instance; research real-clouds.md D8): each VM
    shows the network and the partition; the partition cannot be deleted while a VM uses it (BadRequest)."""
    network = next(n for n in client.list_ib_networks() if n.location == EAST and n.hosts(H100))
    partition = client.create_ib_partition(name="ring--abcdefgh-ib-us-east1-a", ib_network_id=network.id)
    pending = [create(client, f"ring-{n}", type=H100, location=EAST,
                      host_channel_adapters=[HostChannelAdapterRequest(partition.id)]) for n in range(2)]
    vms = [p.result(timeout=120) for p in pending]
    assert [[(h.ib_network_id, h.ib_partition_id) for h in vm.host_channel_adapters] for vm in vms] == \
        [[(network.id, partition.id)]] * 2
    with pytest.raises(BadRequest):
        client.delete_ib_partition(partition.id)
    for vm in vms:
        client.delete_instance(vm.id, timeout=120)
    client.delete_ib_partition(partition.id)
    assert list(client.list_ib_partitions()) == []


def test_vpc_subnets_ssh_keys_and_org_quotas(client: CrusoeClient) -> None:
    """Terraform picks a location's default subnet from /networking/vpc-subnets; client-go also lists
    /users/ssh-keys and /organizations/{o}/quotas."""
    subnets = {s.location: s for s in client.list_vpc_subnets()}
    assert "eu-iceland1-a" in subnets and subnets["eu-iceland1-a"].cidr.endswith("/20")
    key = client.create_ssh_key(name="laptop", public_key=SSH_KEY)
    assert key.fingerprints.sha256 and [k.id for k in client.list_ssh_keys()] == [key.id]
    client.delete_ssh_key(key.id)
    client.delete_ssh_key(key.id)
    assert client.list_ssh_keys().to_list() == []
    quotas = {q.programmatic_name: q for q in client.list_org_quotas()}
    assert quotas["projects"].max >= quotas["projects"].used >= 1
