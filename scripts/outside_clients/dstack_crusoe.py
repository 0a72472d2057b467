"""dstack 0.22.5's Crusoe backend (`dstack/_internal/core/backends/crusoe`) with gpuhunt 0.1.34, against the
Crusoe mock.

Calls (dstack's own HMAC signer): gpuhunt's Crusoe catalog (`/compute/vms/types`, `/capacities`),
`get_all_offers_with_availability` (`/quotas`, whose counters dstack reads with `int()`), `create_instance` for a
type without ephemeral NVMe (a data disk first: POST `/storage/disks`, its operation, then the VM with the disk and
dstack's image, its operation), the server's `update_provisioning_data`, `terminate_instance` until the VM is gone
and the data disk deleted; then a cluster placement group for an InfiniBand type (GET `/networking/ib-networks`,
POST `/networking/ib-partitions`), a VM on it (`host_channel_adapters`), its termination, `delete_placement_group`;
last, capacity running out: l40s-48gb.8x VMs are created until one fails, which dstack must report as
`NoCapacityError` (the operation's `out_of_stock`) after deleting the data disk it made for it.

Patched: the host (`resources.API_URL`, gpuhunt's `API_URL`; the `/v1alpha5` prefix and both signers are
untouched). Crusoe is an "online" gpuhunt provider: dstack queries it live, no published catalog is involved.
"""

from __future__ import annotations

from _dstack import instance_config, pause, pick, placement_group, provisioned, terminate, validate_backend
from _report import Report, endpoints, wait_until

TYPE = "l40s-48gb.1x"
REGION = "eu-iceland1-a"
FULL_TYPE = "l40s-48gb.8x"  # the scenario has a few of these in Iceland
IB_TYPE = "h100-80gb-sxm-ib.8x"
IB_REGION = "us-east1-a"


def main() -> int:
    report = Report("dstack, Crusoe")
    cru = endpoints()["crusoe"]

    import gpuhunt.providers.crusoe as gpuhunt_crusoe
    from dstack._internal.core.backends.crusoe import compute, resources
    from dstack._internal.core.backends.crusoe.configurator import CrusoeConfigurator
    from dstack._internal.core.backends.crusoe.models import (
        CrusoeAccessKeyCreds,
        CrusoeBackendConfigWithCreds,
        CrusoeConfig,
    )
    from dstack._internal.core.errors import NoCapacityError
    from dstack._internal.core.models.backends.base import BackendType

    host = cru["url"].removesuffix("/v1alpha5")  # http:// or, with --tls, https:// (the CA in REQUESTS_CA_BUNDLE)
    resources.API_URL = host
    gpuhunt_crusoe.API_URL = host

    creds = CrusoeAccessKeyCreds(access_key=cru["access_key_id"], secret_key=cru["secret_key"])
    wrong = CrusoeAccessKeyCreds(access_key=cru["access_key_id"], secret_key=cru["secret_key"][::-1])
    validate_backend(report, CrusoeConfigurator(),
                     CrusoeBackendConfigWithCreds(project_id=cru["project_id"], regions=[REGION], creds=creds),
                     CrusoeBackendConfigWithCreds(project_id=cru["project_id"], creds=wrong))
    crusoe = compute.CrusoeCompute(CrusoeConfig(
        project_id=cru["project_id"],
        creds=CrusoeAccessKeyCreds(access_key=cru["access_key_id"], secret_key=cru["secret_key"])))
    report.run("list_quotas (GET /projects/{p}/quotas, counters read with int())",
               lambda: crusoe._get_quota_map() or (_ for _ in ()).throw(AssertionError("no instance quota read")),
               lambda q: f"{len(q)} instance quotas")
    offers = report.run("get_all_offers_with_availability (gpuhunt /compute/vms/types, /capacities; /quotas)",
                        lambda: crusoe.get_all_offers_with_availability(False),
                        lambda o: f"{len(o)} offers, availability {sorted({x.availability.value for x in o})}") or []

    def lifecycle(call: str, name: str, type_name: str, region: str, group: object = None) -> None:
        offer = report.run(f"{call}: offer {type_name} in {region}", lambda: pick(offers, type_name, region),
                           lambda o: f"{o.availability.value}, disk {o.instance.resources.disk.size_mib} MiB")
        if offer is None:
            return
        pause()
        data = report.run(f"{call}: create_instance",
                          lambda: crusoe.create_instance(offer, instance_config(name), group),
                          lambda d: f"{d.instance_id} {d.backend_data}")
        if data is None:
            return
        report.run(f"{call}: update_provisioning_data", lambda: provisioned(crusoe, data), str)
        pause()
        report.run(f"{call}: terminate_instance until gone (DELETE VM, then the data disk)",
                   lambda: terminate(crusoe, data), str)

    lifecycle("data disk", "oc-dstack-cru", TYPE, REGION)

    ib_offer = next((o for o in offers if o.instance.name == IB_TYPE and o.region == IB_REGION), None)
    group = placement_group("oc-dstack-cru-pg", BackendType.CRUSOE, IB_REGION)
    if ib_offer is None:
        report.check("create_placement_group", False, f"no {IB_TYPE} offer in {IB_REGION}")
        return 1
    pause()
    provisioning = report.run("create_placement_group (GET /networking/ib-networks, POST ib-partitions)",
                              lambda: crusoe.create_placement_group(group, ib_offer), lambda p: p.backend_data)
    if provisioning is not None:
        group.provisioning_data = provisioning
        lifecycle("in placement group", "oc-dstack-cru-ib", IB_TYPE, IB_REGION, group=group)
        report.run("delete_placement_group (DELETE ib-partitions/{id})",
                   lambda: crusoe.delete_placement_group(group), lambda _: "deleted")

    def until_out_of_stock() -> str:
        offer = pick(offers, FULL_TYPE, REGION)
        made = []
        try:
            for n in range(8):
                made.append(crusoe.create_instance(offer, instance_config(f"oc-dstack-cru-full-{n}"), None))
            raise AssertionError(f"{len(made)} {FULL_TYPE} VMs created, none refused")
        except NoCapacityError as e:
            refused = f"create #{len(made) + 1} raised NoCapacityError: {e}"
        finally:
            for data in made:
                terminate(crusoe, data)
        def no_disks() -> bool:  # a disk's DELETE is an operation: it goes when that completes
            path = crusoe._client._project_path("/storage/disks")
            return not crusoe._client._request("GET", path).json()["items"]

        try:
            wait_until(no_disks, 60, 1)
        except TimeoutError as e:
            raise AssertionError(f"{refused}; data disks left") from e
        return refused + "; no data disk left"

    pause()
    report.run(f"create {FULL_TYPE} until capacity runs out (out_of_stock -> NoCapacityError, disk cleaned up)",
               until_out_of_stock, str)
    return 1 if report.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
