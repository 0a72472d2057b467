"""The services around a create, through the SDK against the Nebius mock over the wire: tenants, disks, GPU clusters,
security groups and rules, price estimates and pricing policies (real-clouds.md Part 2, D3, D4 and section 4)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from nebius_sdk import Conflict, InvalidArgument, NebiusClient, NotFound, specs
from nebius_sdk.models import Disk, GpuCluster, RuleAccessAction, RuleIngress, RuleProtocol, SecurityRuleSpec

TENANT = "tenant-e00a1b2c3d4e5f6g7h"
H100 = ("gpu-h100-sxm", "1gpu-16vcpu-200gb")
H100_8 = ("gpu-h100-sxm", "8gpu-128vcpu-1600gb")


def test_tenants_then_projects_as_gpuhunt_discovers_regions(client: NebiusClient) -> None:
    """gpuhunt `get_sample_projects` (`gpuhunt/providers/nebius.py`): TenantService.List must give one tenant, then
    ProjectService.List(parent_id=tenant) maps each `status.region` to a project."""
    tenants = client.list_tenants().to_list()
    assert [t.id for t in tenants] == [TENANT]
    regions = {p.region for p in client.list_projects(tenants[0].id)}
    assert regions == {"eu-north1", "eu-west1", "us-central1"}


def test_a_boot_disk_made_first_boots_an_instance_and_goes_after_it(client: NebiusClient) -> None:
    """dstack's Nebius create: DiskService.Create of the boot disk (`backends/nebius/resources.py:283`), an instance
    on it as an ExistingDisk, and after the terminate DiskService.Delete, which must then succeed; a second delete
    of the gone disk succeeds too (deletes succeed when already gone; dstack tolerates NOT_FOUND,
    `compute.py:334-336`)."""
    disk = client.begin_create_disk("sdk-boot", 40, image_family="ubuntu22.04-cuda12").result(timeout=10)
    assert isinstance(disk, Disk) and disk.status is not None and disk.status.size_bytes == 40 << 30
    assert [d.metadata.id for d in client.list_disks() if d.metadata] == [disk.metadata.id if disk.metadata else ""]
    disk_id = disk.metadata.id if disk.metadata else ""
    spec = specs.build_instance_spec(*H100, subnet_id=client.subnet_id, boot_disk=specs.existing_boot_disk(disk_id))
    instance = client.begin_create_instance_from_spec("sdk-on-disk", spec).result(timeout=20)
    used = client.get_disk(disk_id)
    assert used.status is not None and instance.metadata is not None
    assert used.status.read_write_attachment == instance.metadata.id
    with pytest.raises(Conflict):
        client.begin_delete_disk(disk_id)
    client.delete_instance(instance.metadata.id, wait_timeout=20)
    client.begin_delete_disk(disk_id).wait(10)
    with pytest.raises(NotFound):
        client.get_disk(disk_id)
    gone = client.begin_delete_disk(disk_id)
    assert gone.done() and gone.id == ""
    with pytest.raises(NotFound):
        client.begin_delete_disk(disk_id, missing_ok=False)


def test_a_gpu_cluster_on_its_platforms_fabric(client: NebiusClient) -> None:
    """SkyPilot's GpuCluster per cluster, on the fabric of its platform and region (its table, as gpuhunt's
    INFINIBAND_FABRICS from docs.nebius.com/compute/clusters/gpu): fabric-2 serves gpu-h100-sxm in eu-north1;
    a fabric of another region is refused."""
    cluster = client.begin_create_gpu_cluster("sdk-c1", "fabric-2", labels={"fleet": "f"}).result(timeout=10)
    assert isinstance(cluster, GpuCluster) and cluster.metadata is not None
    spec = specs.build_instance_spec(*H100_8, subnet_id=client.subnet_id, gpu_cluster_id=cluster.metadata.id,
                                     boot_disk=specs.managed_boot_disk(name="n0-boot"))
    node = client.begin_create_instance_from_spec("sdk-n0", spec).result(timeout=20)
    assert node.metadata is not None
    status = client.get_gpu_cluster(cluster.metadata.id).status
    assert status is not None and status.instances == [node.metadata.id]
    assert [c.metadata.id for c in client.list_gpu_clusters() if c.metadata] == [cluster.metadata.id]
    client.delete_instance(node.metadata.id, wait_timeout=20)
    client.begin_delete_gpu_cluster(cluster.metadata.id).wait(10)
    assert client.begin_delete_gpu_cluster(cluster.metadata.id).done()
    with pytest.raises(InvalidArgument):
        client.begin_create_gpu_cluster("sdk-c2", "fabric-5")  # eu-west1's


def test_a_security_group_opens_ports_with_rules(client: NebiusClient) -> None:
    """SkyPilot's per-cluster security group and its port rules (at most 8 ports per rule, security_rule.proto),
    deleted rule first; deleting them again succeeds."""
    network = client.list_subnets().to_list()[0].network_id
    group = client.begin_create_security_group("sdk-sg", network).result(timeout=10)
    assert group.metadata is not None
    rule_spec = SecurityRuleSpec(access=RuleAccessAction.ALLOW, protocol=RuleProtocol.TCP,
                                 ingress=RuleIngress(source_cidrs=["0.0.0.0/0"], destination_ports=[22, 443]))
    rule = client.begin_create_security_rule(group.metadata.id, "ports", rule_spec).result(timeout=10)
    assert rule.metadata is not None
    assert [r.metadata.id for r in client.list_security_rules(group.metadata.id) if r.metadata] == [rule.metadata.id]
    ids = {g.metadata.id for g in client.list_security_groups() if g.metadata}
    assert group.metadata.id in ids and len(ids) == 2  # with the network's default group
    too_many = SecurityRuleSpec(access=RuleAccessAction.ALLOW, protocol=RuleProtocol.TCP,
                                ingress=RuleIngress(destination_ports=list(range(1000, 1009))))
    with pytest.raises(InvalidArgument):
        client.begin_create_security_rule(group.metadata.id, "too-many", too_many)
    client.begin_delete_security_rule(rule.metadata.id).wait(10)
    client.begin_delete_security_group(group.metadata.id).wait(10)
    assert client.begin_delete_security_group(group.metadata.id).done()
    with pytest.raises(NotFound):
        client.get_security_group(group.metadata.id)


def test_price_estimates_one_and_in_batch(client: NebiusClient) -> None:
    """gpuhunt prices each preset with v1alpha1 Estimate, on-demand and `preemptible` (`get_price`); SkyPilot prices
    them in one v1 EstimateBatch (`fetch_nebius.py:281-283`). On the mock the list price is the catalog's and the
    spot price the published one (the default scenario's `spot_prices`)."""
    assert client.estimate_instance_price(*H100) == Decimal("2.95")
    assert client.estimate_instance_price(*H100, preemptible=True) == Decimal("1.25")
    assert client.estimate_instance_prices([(*H100, False), (*H100_8, False), (*H100_8, True)]) == [
        Decimal("2.95"), Decimal("23.6"), Decimal("10")]
    assert client.estimate_instance_prices([]) == []
    with pytest.raises(InvalidArgument):
        client.estimate_instance_price("gpu-h100-sxm", "3gpu")


def test_a_pricing_policy_caps_a_spot_instance(client: NebiusClient, nebius_endpoint: dict[str, Any]) -> None:
    """dstack's spot cap: PricingPolicyService.Create with a max price (`backends/nebius/resources.py:317`), the
    policy id in `spot_pricing_policy` (`resources.py:390-391`); a max above the allowed range is OUT_OF_RANGE
    (InvalidArgument here); deleting it twice succeeds."""
    policy = client.begin_create_pricing_policy("sdk-cap", "gpu-h100-sxm", Decimal("2.0")).result(timeout=10)
    assert policy.metadata is not None and policy.status is not None
    instance = client.begin_create_instance("sdk-spot", *H100, preemptible=True,
                                            spot_pricing_policy_id=policy.metadata.id).result(timeout=20)
    assert instance.spec is not None and instance.spec.spot_pricing_policy is not None
    assert instance.spec.spot_pricing_policy.id == policy.metadata.id
    assert [p.metadata.id for p in client.list_pricing_policies() if p.metadata] == [policy.metadata.id]
    with pytest.raises(InvalidArgument):
        client.begin_create_pricing_policy("sdk-too-high", "gpu-h100-sxm", Decimal("1000"))
    assert instance.metadata is not None
    client.delete_instance(instance.metadata.id, wait_timeout=20)
    client.begin_delete_pricing_policy(policy.metadata.id).wait(10)
    assert client.begin_delete_pricing_policy(policy.metadata.id).done()
