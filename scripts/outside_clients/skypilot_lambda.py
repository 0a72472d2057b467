"""SkyPilot 0.14.1's Lambda Cloud code against the Lambda mock.

Calls, in a user's order: the catalog fetcher (`sky/catalog/data_fetchers/fetch_lambda_cloud.py`), the SSH key
registration `sky launch` does (`LambdaCloudClient.get_unique_ssh_key_name`, `register_ssh_key`), and the
provisioner (`sky/provision/lambda_cloud/instance.py`): run_instances for a 2-node cluster, wait_instances,
get_cluster_info, query_instances, open_ports, stop_instances (SkyPilot has none for Lambda), terminate_instances,
then query_instances until the cluster is gone.

Patched: the hard-coded hosts only (`lambda_utils.API_ENDPOINT`, `fetch_lambda_cloud.ENDPOINT`). The API key is
read by SkyPilot itself from `~/.lambda_cloud/lambda_keys`, which `mock-clouds credentials` wrote under HOME.
"""

from __future__ import annotations

import os
import tempfile

from _report import HttpLog, Report, endpoints, wait_until

REGION = "us-east-1"
INSTANCE_TYPE = "gpu_1x_a10"
CLUSTER = "oc-sky-lambda"
PUBLIC_KEY = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f skypilot@outside-clients"
)


def main() -> int:
    report = Report("SkyPilot, Lambda")
    http = HttpLog()
    url = endpoints()["lambda"]["url"]

    from sky.catalog.data_fetchers import fetch_lambda_cloud
    from sky.provision import common
    from sky.provision.lambda_cloud import instance, lambda_utils
    from sky.utils import status_lib

    lambda_utils.API_ENDPOINT = url
    fetch_lambda_cloud.ENDPOINT = f"{url}/instance-types"

    def catalog() -> str:
        out = os.path.join(tempfile.mkdtemp(), "vms.csv")
        fetch_lambda_cloud.create_catalog(lambda_utils.LambdaCloudClient().api_key, out)
        with open(out, encoding="utf-8") as f:
            rows = f.read().splitlines()[1:]
        if not any(r.startswith(f"{INSTANCE_TYPE},A10,1") and f",{REGION}," in r for r in rows):
            raise AssertionError(f"no {INSTANCE_TYPE} row in {REGION} among {len(rows)} rows")
        return f"{len(rows)} catalog rows"

    report.run("catalog fetcher GET /instance-types", catalog, str)

    client = lambda_utils.LambdaCloudClient()
    report.run("list_catalog (regions_with_capacity_available)",
               lambda: [r["name"] for r in client.list_catalog()[INSTANCE_TYPE]["regions_with_capacity_available"]],
               lambda regions: f"{INSTANCE_TYPE} available in {regions}")

    def key_name() -> str:
        name, exists = client.get_unique_ssh_key_name("sky-key", PUBLIC_KEY)
        if not exists:
            client.register_ssh_key(name, PUBLIC_KEY)
        again, exists = client.get_unique_ssh_key_name("sky-key", PUBLIC_KEY)
        if not exists or again != name:
            raise AssertionError(f"registered key {name!r} not found again ({again!r}, {exists})")
        return name

    remote_key = report.run("ssh keys: list, register sky-key, find it again", key_name, str) or "default"

    provider_config = {"region": REGION}
    config = common.ProvisionConfig(
        provider_config=provider_config,
        authentication_config={"remote_key_name": remote_key},
        docker_config={},
        node_config={"InstanceType": INSTANCE_TYPE},
        count=2,
        tags={},
        resume_stopped_nodes=False,
        ports_to_open_on_launch=None,
    )
    record = report.run("run_instances (2 nodes: launch head, launch worker, wait active)",
                        lambda: instance.run_instances(REGION, CLUSTER, CLUSTER, config),
                        lambda r: f"head {r.head_instance_id}, created {len(r.created_instance_ids)}")
    report.run("wait_instances", lambda: instance.wait_instances(REGION, CLUSTER, status_lib.ClusterStatus.UP),
               lambda _: "returned")

    def cluster_info() -> str:
        info = instance.get_cluster_info(REGION, CLUSTER, provider_config)
        if record and info.head_instance_id != record.head_instance_id:
            raise AssertionError(f"head {info.head_instance_id} != launched {record.head_instance_id}")
        nodes = [i for infos in info.instances.values() for i in infos]
        if len(nodes) != 2 or not all(n.external_ip and n.internal_ip for n in nodes):
            raise AssertionError(f"nodes without addresses: {nodes}")
        return f"{len(nodes)} nodes with public and private IPs"

    report.run("get_cluster_info (ip, private_ip)", cluster_info, str)

    def query_up() -> str:
        statuses = instance.query_instances(CLUSTER, CLUSTER, provider_config)
        if [s for s, _ in statuses.values()] != [status_lib.ClusterStatus.UP] * 2:
            raise AssertionError(f"statuses {statuses}")
        return "2 x UP"

    report.run("query_instances", query_up, str)

    def ports() -> str:
        instance.open_ports(CLUSTER, ["8888"], provider_config)
        rules = lambda_utils.LambdaCloudClient().list_firewall_rules()
        if not any(r.get("protocol") == "tcp" and r.get("port_range") == [8888, 8888] for r in rules):
            raise AssertionError(f"port 8888 not in the account's rules after open_ports: {rules}")
        return f"PUT /firewall-rules took effect ({len(rules)} rules)"

    report.run("open_ports (GET then PUT /firewall-rules)", ports, str)

    try:
        instance.stop_instances(CLUSTER, provider_config)
        report.check("stop_instances", False, "SkyPilot stopped a Lambda cluster; Lambda has no stop")
    except NotImplementedError as e:
        report.info("stop_instances", f"not supported by SkyPilot for Lambda (Lambda has no stop API): {e}")

    report.run("terminate_instances", lambda: instance.terminate_instances(CLUSTER, provider_config),
               lambda _: "terminate sent")
    report.run("wait until gone (query_instances empty)",
               lambda: wait_until(lambda: not instance.query_instances(CLUSTER, CLUSTER, provider_config), 120),
               lambda _: "no instance left")
    report.info("HTTP answers seen", http.summary() + "; SkyPilot waits out a 429 (10 s backoff, 6 attempts)")
    return 1 if report.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
