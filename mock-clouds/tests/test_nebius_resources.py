"""Nebius mock: the services outside clients call around their first create (real-clouds.md Part 2, D3 and D4):
IAM TenantService, compute DiskService and GpuClusterService, VPC SecurityGroupService and SecurityRuleService.
Real shapes: nebius/api `nebius/iam/v1/tenant_service.proto`, `nebius/compute/v1/{disk,gpu_cluster}*.proto`,
`nebius/vpc/v1/security_{group,rule}*.proto` (commit 5101002)."""

from __future__ import annotations

import grpc
from mock_clouds.nebius import testkit
from mock_clouds.nebius._pb.nebius.common import v1 as common
from mock_clouds.nebius._pb.nebius.compute import v1 as compute
from mock_clouds.nebius._pb.nebius.iam import v1 as iam
from mock_clouds.nebius._pb.nebius.vpc import v1 as vpc

TENANT = "tenant-e00a1b2c3d4e5f6g7h"
OTHER_TENANT = "tenant-e00zz9yy8xx7ww6vv5"
H100_8 = ("gpu-h100-sxm", "8gpu-128vcpu-1600gb")


def _disk_request(project: str, name: str, gib: int = 50) -> compute.CreateDiskRequest:
    return compute.CreateDiskRequest(
        metadata=common.ResourceMetadata(parent_id=project, name=name),
        spec=compute.DiskSpec(size_gibibytes=gib, type=compute.DiskSpecDiskType.NETWORK_SSD,
                              source_image_family=compute.SourceImageFamily(image_family="ubuntu22.04-cuda12")),
    )


def _boot_from(disk_id: str, platform: str = testkit.H100[0], preset: str = testkit.H100[1],
               **fields) -> compute.InstanceSpec:
    spec = testkit.instance_spec(platform, preset, **fields)
    assert spec.boot_disk is not None
    spec.boot_disk.existing_disk = compute.ExistingDisk(id=disk_id)
    return spec


# ------------------------------------------------------------------------------------------------ tenants
def test_tenant_list_answers_the_callers_one_tenant(nebius):
    """gpuhunt `get_sample_projects` (`gpuhunt/providers/nebius.py`) lists tenants, requires exactly one, and lists
    its projects with `ProjectService.List(parent_id=tenant)`; dstack `list_tenant_projects` does the same."""
    listed = nebius.client.tenants.list(iam.ListTenantsRequest())
    assert [t.metadata.id for t in listed.items] == [TENANT] and listed.next_page_token == ""
    assert listed.items[0].status.container_state == iam.State.ACTIVE
    projects = nebius.client.projects.list(iam.ListProjectsRequest(parent_id=listed.items[0].metadata.id))
    assert {p.status.region: p.metadata.id for p in projects.items} == nebius.projects
    assert nebius.client.tenants.get(iam.GetTenantRequest(id=TENANT)).metadata.id == TENANT


def test_another_tenant_is_permission_denied(nebius):
    """As for projects (tenant_service.proto; iam_projects): the API is no oracle for other tenants' ids."""
    failed = testkit.failure(nebius.client.tenants.get, iam.GetTenantRequest(id=OTHER_TENANT))
    assert failed.code == grpc.StatusCode.PERMISSION_DENIED


# ------------------------------------------------------------------------------------------------ disks
def test_a_disk_created_separately_boots_an_instance_and_is_deleted_after_it(nebius):
    """dstack creates the boot disk with DiskService.Create (`backends/nebius/resources.py:283`), boots the VM from
    it as an ExistingDisk, and after the terminate deletes it (`compute.py:334-336`), tolerating only NOT_FOUND."""
    client = nebius.client
    op = client.wait(client.disks.create(_disk_request(nebius.project, "vm-1-boot")))
    assert op.status is not None and op.status.code == 0
    disk = client.disks.get(compute.GetDiskRequest(id=op.resource_id))
    assert disk.metadata.name == "vm-1-boot" and disk.status.state == compute.DiskStatusState.READY
    assert disk.status.size_bytes == 50 << 30 and disk.status.read_write_attachment == ""
    assert client.disks.get_by_name(common.GetByNameRequest(parent_id=nebius.project, name="vm-1-boot")) == disk

    created = client.wait(nebius.create("vm-1", _boot_from(disk.metadata.id)))
    assert created.status is not None and created.status.code == 0
    used = client.disks.get(compute.GetDiskRequest(id=disk.metadata.id))
    assert used.status.read_write_attachment == created.resource_id
    in_use = testkit.failure(client.disks.delete, compute.DeleteDiskRequest(id=disk.metadata.id))
    assert in_use.code == grpc.StatusCode.FAILED_PRECONDITION

    client.wait(client.instances.delete(compute.DeleteInstanceRequest(id=created.resource_id)))
    deleted = client.wait(client.disks.delete(compute.DeleteDiskRequest(id=disk.metadata.id)))
    assert deleted.status is not None and deleted.status.code == 0
    assert testkit.failure(client.disks.get, compute.GetDiskRequest(id=disk.metadata.id)).code == \
        grpc.StatusCode.NOT_FOUND
    again = testkit.failure(client.disks.delete, compute.DeleteDiskRequest(id=disk.metadata.id))
    assert again.code == grpc.StatusCode.NOT_FOUND


def test_a_disk_in_use_cannot_boot_a_second_instance(nebius):
    """A disk has one `read_write_attachment` (nebius/compute/v1/disk.proto DiskStatus)."""
    client = nebius.client
    disk_id = client.disks.create(_disk_request(nebius.project, "shared-boot")).resource_id
    client.wait(nebius.create("first", _boot_from(disk_id)))
    failed = testkit.failure(nebius.client.instances.create,
                             testkit.create_request(nebius.project, "second", _boot_from(disk_id)))
    assert failed.code == grpc.StatusCode.FAILED_PRECONDITION and disk_id in failed.message


def test_disk_create_checks_the_spec_and_the_name(nebius):
    """DiskSpec: one size and a type are required (disk.proto `(buf.validate.oneof).required`, `type` required);
    names are unique per project (ALREADY_EXISTS)."""
    bad = compute.CreateDiskRequest(metadata=common.ResourceMetadata(parent_id=nebius.project, name="d"),
                                    spec=compute.DiskSpec())
    failed = testkit.failure(nebius.client.disks.create, bad)
    assert failed.code == grpc.StatusCode.INVALID_ARGUMENT
    assert failed.error is not None and failed.error.bad_request is not None
    assert {v.field for v in failed.error.bad_request.violations} == {"spec.size", "spec.type"}
    nebius.client.disks.create(_disk_request(nebius.project, "taken"))
    taken = testkit.failure(nebius.client.disks.create, _disk_request(nebius.project, "taken"))
    assert taken.code == grpc.StatusCode.ALREADY_EXISTS


def test_disks_list_by_project_and_page(nebius):
    """ListDisksRequest pages with page_size/page_token as every Nebius List (disk_service.proto)."""
    made = {nebius.client.disks.create(_disk_request(nebius.project, f"d{i}")).resource_id for i in range(3)}
    first = nebius.client.disks.list(compute.ListDisksRequest(parent_id=nebius.project, page_size=2))
    rest = nebius.client.disks.list(compute.ListDisksRequest(parent_id=nebius.project, page_size=2,
                                                             page_token=first.next_page_token))
    assert len(first.items) == 2 and first.next_page_token and rest.next_page_token == ""
    assert {d.metadata.id for d in first.items + rest.items} == made


def test_another_tenants_disk_is_permission_denied(nebius):
    other = nebius.connect(nebius.token_of(OTHER_TENANT))
    disk_id = nebius.client.disks.create(_disk_request(nebius.project, "mine")).resource_id
    assert testkit.failure(other.disks.get, compute.GetDiskRequest(id=disk_id)).code == \
        grpc.StatusCode.PERMISSION_DENIED


# ------------------------------------------------------------------------------------------------ GPU clusters
def _cluster(nebius, name: str, fabric: str, project: str = "") -> common.Operation:
    return nebius.client.gpu_clusters.create(compute.CreateGpuClusterRequest(
        metadata=common.ResourceMetadata(parent_id=project or nebius.project, name=name, labels={"fleet": "f1"}),
        spec=compute.GpuClusterSpec(infiniband_fabric=fabric)))


def test_gpu_cluster_holds_the_8_gpu_instances_of_its_fabrics_platform(nebius):
    """SkyPilot creates a GpuCluster per cluster with the fabric of its platform and region (its table in
    `sky/provision/nebius/constants.py`, as gpuhunt's INFINIBAND_FABRICS from docs.nebius.com/compute/clusters/gpu):
    fabric-2 is an H100 fabric of eu-north1; instances join with `spec.gpu_cluster.id`."""
    client = nebius.client
    cluster_id = client.wait(_cluster(nebius, "c1", "fabric-2")).resource_id
    cluster = client.gpu_clusters.get(compute.GetGpuClusterRequest(id=cluster_id))
    assert cluster.spec.infiniband_fabric == "fabric-2" and cluster.metadata.labels == {"fleet": "f1"}
    vm = client.wait(nebius.create("node-0", testkit.instance_spec(
        *H100_8, gpu_cluster=compute.InstanceGpuClusterSpec(id=cluster_id)))).resource_id
    assert client.gpu_clusters.get(compute.GetGpuClusterRequest(id=cluster_id)).status.instances == [vm]
    busy = testkit.failure(client.gpu_clusters.delete, compute.DeleteGpuClusterRequest(id=cluster_id))
    assert busy.code == grpc.StatusCode.FAILED_PRECONDITION
    client.wait(client.instances.delete(compute.DeleteInstanceRequest(id=vm)))
    client.wait(client.gpu_clusters.delete(compute.DeleteGpuClusterRequest(id=cluster_id)))
    gone = testkit.failure(client.gpu_clusters.get, compute.GetGpuClusterRequest(id=cluster_id))
    assert gone.code == grpc.StatusCode.NOT_FOUND


def test_gpu_cluster_refuses_other_fabrics_platforms_and_presets(nebius):
    """Each fabric serves one platform in one region (docs.nebius.com/compute/clusters/gpu#fabrics); only presets
    with `allow_gpu_clustering` (the 8-GPU ones) join a cluster."""
    client = nebius.client
    unknown = testkit.failure(lambda r: _cluster(nebius, "x", "fabric-99"), None)
    assert unknown.code == grpc.StatusCode.INVALID_ARGUMENT
    elsewhere = testkit.failure(lambda r: _cluster(nebius, "y", "fabric-5"), None)  # an eu-west1 fabric
    assert elsewhere.code == grpc.StatusCode.INVALID_ARGUMENT and "eu-west1" in elsewhere.message
    h200_fabric = client.wait(_cluster(nebius, "h200", "fabric-7")).resource_id
    wrong_platform = testkit.failure(client.instances.create, testkit.create_request(nebius.project, "n1",
        testkit.instance_spec(*H100_8, gpu_cluster=compute.InstanceGpuClusterSpec(id=h200_fabric))))
    assert wrong_platform.code == grpc.StatusCode.INVALID_ARGUMENT and "fabric-7" in wrong_platform.message
    h100_fabric = client.wait(_cluster(nebius, "h100", "fabric-3")).resource_id
    one_gpu = testkit.failure(client.instances.create, testkit.create_request(nebius.project, "n2",
        testkit.instance_spec(gpu_cluster=compute.InstanceGpuClusterSpec(id=h100_fabric))))
    assert one_gpu.code == grpc.StatusCode.INVALID_ARGUMENT
    missing = testkit.failure(client.instances.create, testkit.create_request(nebius.project, "n3",
        testkit.instance_spec(*H100_8, gpu_cluster=compute.InstanceGpuClusterSpec(id="computegpucluster-e00none"))))
    assert missing.code == grpc.StatusCode.NOT_FOUND


# ------------------------------------------------------------------------------------------------ security groups
def _network(nebius) -> str:
    subnets = nebius.client.subnets.list(vpc.ListSubnetsRequest(parent_id=nebius.project)).items
    return subnets[0].spec.network_id


def test_security_group_with_rules_as_skypilot_opens_ports(nebius):
    """SkyPilot makes a security group per cluster in the project's network and opens ports with ingress rules
    of at most 8 ports each (security_rule.proto `max_items: 8`), then deletes rules and group."""
    client, network = nebius.client, _network(nebius)
    groups = client.security_groups.list(vpc.ListSecurityGroupsRequest(parent_id=nebius.project)).items
    assert [(g.status.default, g.spec.network_id) for g in groups] == [(True, network)]
    group_id = client.wait(client.security_groups.create(vpc.CreateSecurityGroupRequest(
        metadata=common.ResourceMetadata(parent_id=nebius.project, name="sky-sg-c1"),
        spec=vpc.SecurityGroupSpec(network_id=network)))).resource_id
    group = client.security_groups.get(vpc.GetSecurityGroupRequest(id=group_id))
    assert group.status.state == vpc.SecurityGroupStatusState.READY and not group.status.default
    rule = vpc.SecurityRuleSpec(access=vpc.RuleAccessAction.ALLOW, protocol=vpc.RuleProtocol.TCP,
                                ingress=vpc.RuleIngress(source_cidrs=["0.0.0.0/0"], destination_ports=[22, 8080]))
    rule_id = client.wait(client.security_rules.create(vpc.CreateSecurityRuleRequest(
        metadata=common.ResourceMetadata(parent_id=group_id, name="ports-0"), spec=rule))).resource_id
    listed = client.security_rules.list(vpc.ListSecurityRulesRequest(parent_id=group_id)).items
    assert [r.metadata.id for r in listed] == [rule_id]
    status = listed[0].status
    assert (status.direction, status.effective_priority, status.destination.ports) == (
        vpc.RuleDirection.INGRESS, 500, [22, 8080])
    client.wait(client.security_rules.delete(vpc.DeleteSecurityRuleRequest(id=rule_id)))
    client.wait(client.security_groups.delete(vpc.DeleteSecurityGroupRequest(id=group_id)))
    assert testkit.failure(client.security_groups.get, vpc.GetSecurityGroupRequest(id=group_id)).code == \
        grpc.StatusCode.NOT_FOUND


def test_security_rule_limits(nebius):
    """security_rule.proto: access, protocol and a match are required; at most 8 ports (1-65535) and 8 CIDRs."""
    client = nebius.client
    group_id = client.security_groups.create(vpc.CreateSecurityGroupRequest(
        metadata=common.ResourceMetadata(parent_id=nebius.project, name="sg-limits"),
        spec=vpc.SecurityGroupSpec(network_id=_network(nebius)))).resource_id
    too_many = vpc.SecurityRuleSpec(access=vpc.RuleAccessAction.ALLOW, protocol=vpc.RuleProtocol.TCP,
                                    ingress=vpc.RuleIngress(destination_ports=list(range(1, 10))))
    failed = testkit.failure(client.security_rules.create, vpc.CreateSecurityRuleRequest(
        metadata=common.ResourceMetadata(parent_id=group_id, name="r1"), spec=too_many))
    assert failed.code == grpc.StatusCode.INVALID_ARGUMENT and "spec.ingress.destination_ports" in failed.message
    empty = testkit.failure(client.security_rules.create, vpc.CreateSecurityRuleRequest(
        metadata=common.ResourceMetadata(parent_id=group_id, name="r2"), spec=vpc.SecurityRuleSpec()))
    assert empty.error is not None and empty.error.bad_request is not None
    assert {v.field for v in empty.error.bad_request.violations} == {"spec.access", "spec.protocol", "spec.match"}
