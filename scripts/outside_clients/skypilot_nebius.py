"""SkyPilot 0.14.1's Nebius code against the Nebius mock.

Calls, in a user's order: IAM TenantService.List (the tenant id SkyPilot reads from
`~/.nebius/NEBIUS_TENANT_ID.txt`), the catalog fetcher (`fetch_nebius._get_all_platform_prices`: IAM, platforms,
billing v1 CalculatorService/EstimateBatch), then the provisioner (`sky/provision/nebius/{config,instance}.py`):
project and subnet discovery, bootstrap_instances (security group and its default rules), run_instances (2 nodes),
wait_instances, get_cluster_info, query_instances, open_ports, stop_instances, run_instances again (resume),
terminate_instances, the security group's cleanup; a spot node (`follows_spot_price`); an 8-GPU node with
`network_tier: best` (a GPU cluster on the platform's InfiniBand fabric); and a create that fails for capacity
(SkyPilot must raise with the operation's own message, not report a booted VM).

Patched: the SDK's address only (`nebius.sdk.SDK` with `resolver=Constant(target)`, plaintext; see
`_nebius_mock.py`). Credentials are SkyPilot's own: `~/.nebius/credentials.json` (a service account, exchanged
for a token at the mock's TokenExchangeService), written by `mock-clouds credentials`. `utils.POLL_INTERVAL` is
1 s instead of 5 s, because the mock runs time at the scenario's scale (0.05 by default).
"""

from __future__ import annotations

import os
import re

from _nebius_mock import patch_pysdk
from _report import Report, endpoints, wait_until

REGION = "eu-north1"
SOLD_OUT_REGION = "eu-west1"  # the scenario sells gpu-h100-sxm 1-GPU there with no capacity
CLUSTER = "oc-sky-neb"
DISK_TIER = "DiskTier.MEDIUM"  # str(sky.utils.resources_utils.DiskTier.MEDIUM): how utils.launch keys its tier table


def node_config(instance_type: str, *, spot: bool = False, network_tier: object = None) -> dict[str, object]:
    family = "ubuntu24.04-cuda12.8" if "b200" in instance_type else "ubuntu22.04-cuda12"
    return {"InstanceType": instance_type, "ImageId": family, "DiskSize": 100, "UserData": "",
            "use_spot": spot, "disk_tier": DISK_TIER, "network_tier": network_tier}


def main() -> int:
    report = Report("SkyPilot, Nebius")
    patch_pysdk(endpoints()["nebius"]["target"], endpoints().get("ca_file", ""))

    from sky.adaptors import nebius
    from sky.catalog.data_fetchers import fetch_nebius
    from sky.provision import common
    from sky.provision.nebius import config as nebius_config
    from sky.provision.nebius import instance, utils
    from sky.utils import resources_utils, status_lib

    utils.POLL_INTERVAL = 1

    def tenant() -> str:
        tenants = nebius.sync_call(nebius.iam().TenantServiceClient(nebius.sdk()).list(
            nebius.iam().ListTenantsRequest(), timeout=30)).items
        if len(tenants) != 1:
            raise AssertionError(f"{len(tenants)} tenants")
        path = os.path.expanduser(nebius.tenant_id_path())
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(tenants[0].metadata.id)
        return tenants[0].metadata.id

    report.run("IAM TenantService.List (service-account token exchange first)", tenant, str)

    def catalog() -> str:
        presets = fetch_nebius._get_all_platform_prices()
        gpu = [p for p in presets if p.gpu]
        if not gpu or not all(p.price_hourly > 0 for p in presets):
            raise AssertionError(f"{len(presets)} presets, {len(gpu)} with GPUs")
        memory = {p.platform_name: p.gpu_memory_gigabytes for p in gpu}
        if not all(memory.values()):
            raise AssertionError(f"GPU platforms without gpu_memory_gigabytes: {memory}")
        spot = [p for p in gpu if p.spot_price]
        regions = sorted({p.region for p in presets})
        return f"{len(presets)} presets in {regions} priced, {len(spot)} with spot prices; GPU memory {memory}"

    report.run("catalog fetcher (IAM, PlatformService.List, billing EstimateBatch)", catalog, str)

    project = report.run("get_project_by_region (IAM ProjectService.List, status.region)",
                         lambda: utils.get_project_by_region(REGION), str)
    report.run("get_subnet_id (VPC SubnetService.List)", lambda: utils.get_subnet_id(REGION, project), str)

    provider_config: dict[str, object] = {"region": REGION, "use_internal_ips": False}

    def provision_config(count: int, node: dict[str, object], resume: bool = False) -> common.ProvisionConfig:
        return common.ProvisionConfig(provider_config=provider_config, authentication_config={}, docker_config={},
                                      node_config=node, count=count, tags={}, resume_stopped_nodes=resume,
                                      ports_to_open_on_launch=None)

    config = provision_config(2, node_config("gpu-l40s-a_1gpu-8vcpu-32gb"))
    booted = report.run("bootstrap_instances (SecurityGroupService, SecurityRuleService)",
                        lambda: nebius_config.bootstrap_instances(REGION, CLUSTER, config),
                        lambda c: f"security groups {c.node_config.get('SecurityGroupIds')}")
    config = booted or config
    record = report.run("run_instances (2 nodes: CreateInstance, GetByName until STARTING)",
                        lambda: instance.run_instances(REGION, CLUSTER, CLUSTER, config),
                        lambda r: f"head {r.head_instance_id}, created {len(r.created_instance_ids)}")
    report.run("wait_instances (UP)", lambda: instance.wait_instances(REGION, CLUSTER, status_lib.ClusterStatus.UP),
               lambda _: "no pending, none stopped")

    def cluster_info() -> str:
        info = instance.get_cluster_info(REGION, CLUSTER, provider_config)
        nodes = [i for infos in info.instances.values() for i in infos]
        if len(nodes) != 2 or not all(n.external_ip and n.internal_ip for n in nodes):
            raise AssertionError(f"nodes {nodes}")
        if record and info.head_instance_id != record.head_instance_id:
            raise AssertionError(f"head {info.head_instance_id} != {record.head_instance_id}")
        return f"{len(nodes)} RUNNING nodes with public and private IPs"

    report.run("get_cluster_info", cluster_info, str)

    def query(expected: object, count: int = 2) -> str:
        statuses = instance.query_instances(CLUSTER, CLUSTER, provider_config)
        got = [s for s, _ in statuses.values()]
        if got != [expected] * count:
            raise AssertionError(f"statuses {got}")
        return f"{count} x {expected}"

    report.run("query_instances (UP)", lambda: query(status_lib.ClusterStatus.UP), str)

    def ports() -> str:
        instance.open_ports(CLUSTER, ["8888", "9000-9001"], provider_config)
        sg = utils.get_security_group_by_name(project, utils.SECURITY_GROUP_TEMPLATE.format(CLUSTER))
        rules = utils.list_security_rules(sg)
        if not any(8888 in list(r.spec.ingress.destination_ports or []) for r in rules if r.spec.ingress):
            raise AssertionError(f"no ingress rule for 8888 among {len(rules)} rules")
        return f"{len(rules)} rules on the cluster's security group"

    report.run("open_ports (SecurityRuleService.Create)", ports, str)
    report.run("stop_instances (Stop, wait STOPPED)", lambda: instance.stop_instances(CLUSTER, provider_config),
               lambda _: "stopped")
    report.run("query_instances (STOPPED)", lambda: query(status_lib.ClusterStatus.STOPPED), str)
    resumed = report.run("run_instances again (resume: Start each, wait until RUNNING)",
                         lambda: instance.run_instances(REGION, CLUSTER, CLUSTER,
                                                        provision_config(2, config.node_config, resume=True)),
                         lambda r: f"resumed {len(r.resumed_instance_ids)}, created {len(r.created_instance_ids)}")
    if resumed is not None:
        report.check("resume started the stopped nodes, created none",
                     len(resumed.resumed_instance_ids) == 2 and not resumed.created_instance_ids,
                     f"resumed {resumed.resumed_instance_ids}, created {resumed.created_instance_ids}")
        report.run("wait_instances after resume (UP)",
                   lambda: instance.wait_instances(REGION, CLUSTER, status_lib.ClusterStatus.UP), lambda _: "UP")
    report.run("terminate_instances (Delete, wait gone, delete the security group)",
               lambda: instance.terminate_instances(CLUSTER, provider_config), lambda _: "returned")

    def gone() -> str:
        wait_until(lambda: not instance.query_instances(CLUSTER, CLUSTER, provider_config), 120)
        sg = utils.get_security_group_by_name(project, utils.SECURITY_GROUP_TEMPLATE.format(CLUSTER))
        if sg is not None:
            raise AssertionError(f"security group {sg} left behind")
        return "no instance, no security group"

    report.run("wait until gone", gone, str)

    def launch(instance_type: str, region: str, **kw: object) -> str:
        platform, preset = instance_type.split("_")
        return utils.launch(cluster_name_on_cloud=f"{CLUSTER}-x", node_type="head", platform=platform,
                            preset=preset, region=region, image_id_or_family=str(node_config(instance_type)["ImageId"]),
                            disk_size=100, user_data="", associate_public_ip_address=True, filesystems=[],
                            disk_tier=DISK_TIER, **kw)

    def spot() -> str:
        instance_id = launch("gpu-h100-sxm_1gpu-16vcpu-200gb", REGION, use_spot=True)
        got = nebius.sync_call(nebius.compute().InstanceServiceClient(nebius.sdk()).get(
            nebius.compute().GetInstanceRequest(id=instance_id)))
        if got.spec.preemptible is None or got.spec.follows_spot_price is None:
            raise AssertionError(f"spec without preemptible/follows_spot_price: {got.spec}")
        utils.remove(instance_id)
        return f"{instance_id} preemptible, follows_spot_price; deleted"

    report.run("launch a spot node (preemptible + follows_spot_price), remove", spot, str)

    def infiniband() -> str:
        instance_id = launch("gpu-h100-sxm_8gpu-128vcpu-1600gb", REGION, network_tier=resources_utils.NetworkTier.BEST)
        got = nebius.sync_call(nebius.compute().InstanceServiceClient(nebius.sdk()).get(
            nebius.compute().GetInstanceRequest(id=instance_id)))
        cluster = got.spec.gpu_cluster.id if got.spec.gpu_cluster else ""
        if not cluster:
            raise AssertionError("the 8-GPU node joined no GPU cluster")
        utils.remove(instance_id)
        wait_until(lambda: not [i for i in utils.list_instances(project).values()
                                if i["name"].startswith(f"{CLUSTER}-x")], 120)
        utils.delete_cluster(f"{CLUSTER}-x", REGION, project_id=project)
        return f"{instance_id} in GPU cluster {cluster}; node and cluster deleted"

    report.run("launch 8-GPU node with network_tier=best (GpuClusterService), remove, delete_cluster", infiniband, str)

    def sold_out() -> str:
        try:
            instance_id = launch("gpu-h100-sxm_1gpu-16vcpu-200gb", SOLD_OUT_REGION)
        except RuntimeError as e:
            if not re.search(r"resource|capacity|not enough", str(e), re.I):
                raise AssertionError(f"failed, but with another reason: {e}") from e
            return f"raised: {e}"
        raise AssertionError(f"launch returned {instance_id}: a VM reported booted that the cloud could not place")

    report.run("launch that fails for capacity (STOPPED, not reconciling; reason from ListOperationsByParent)",
               sold_out, str)

    def leftovers() -> str:
        for region in (REGION, SOLD_OUT_REGION):
            for inst_id, inst in utils.list_instances(utils.get_project_by_region(region)).items():
                if inst["name"].startswith(CLUSTER):
                    utils.remove(inst_id)
        return "cleaned"

    report.run("cleanup (remove what a failed create left)", leftovers, str)

    def nothing_left() -> str:
        """No VM, managed boot disk, GPU cluster or SkyPilot security group of these clusters is left."""
        compute, vpc = nebius.compute(), nebius.vpc()
        left = []
        for region in (REGION, SOLD_OUT_REGION):
            parent = utils.get_project_by_region(region)
            wait_until(lambda: not [i for i in utils.list_instances(parent).values()  # noqa: B023
                                    if i["name"].startswith(CLUSTER)], 120)
            for service, request in ((compute.DiskServiceClient, compute.ListDisksRequest),
                                     (compute.GpuClusterServiceClient, compute.ListGpuClustersRequest),
                                     (vpc.SecurityGroupServiceClient, vpc.ListSecurityGroupsRequest)):
                items = nebius.sync_call(service(nebius.sdk()).list(request(parent_id=parent), timeout=10)).items
                left += [i.metadata.name for i in items if CLUSTER in i.metadata.name]
        if left:
            raise AssertionError(f"left behind: {left}")
        return "no VM, disk, GPU cluster or security group of these clusters"

    report.run("nothing left (InstanceService, DiskService, GpuClusterService, SecurityGroupService List)",
               nothing_left, str)
    return 1 if report.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
