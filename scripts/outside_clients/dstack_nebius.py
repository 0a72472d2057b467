"""dstack 0.22.5's Nebius backend (`dstack/_internal/core/backends/nebius`) with gpuhunt 0.1.34, against the
Nebius mock.

Calls: gpuhunt's Nebius catalog (IAM tenants and projects, PlatformService.List, billing v1alpha1 Estimate on demand
and preemptible), `NebiusCompute.get_all_offers_with_availability` (IAM region -> project),
`create_instance` (DiskService.Create and its operation, VPC SubnetService.List, InstanceService.Create, Get until
STARTING), the server's `update_provisioning_data`, `terminate_instance` until the VM is gone and its boot disk
deleted; a spot VM (billing v1 PricingPolicyService.Create, `spot_pricing_policy`); a cluster placement group
(GpuClusterService.Create on one of the offer's fabrics), an 8-GPU VM in it, its deletion; and a create that fails
for capacity, which dstack must report as an error and clean up (instance, boot disk).

Credentials are dstack's own kind: a service account (id, public key id, private key), taken from the
`~/.nebius/credentials.json` that `mock-clouds credentials` wrote; the SDK exchanges its JWT at the mock's
TokenExchangeService. Patched: the SDK's address (`resources.SDK`, gpuhunt's `SDK`: `_nebius_mock.py`) and the
published catalog (`_dstack.offline_catalog`, collected here by gpuhunt with a static token).
"""

from __future__ import annotations

import json
import os

from _dstack import (
    instance_config,
    offline_catalog,
    pause,
    pick,
    placement_group,
    provisioned,
    terminate,
    validate_backend,
)
from _nebius_mock import sdk_class_for_mock
from _report import Report, endpoints

REGION = "eu-north1"
SOLD_OUT_REGION = "eu-west1"
TYPE = "gpu-l40s-a 1gpu-8vcpu-32gb"
SPOT_TYPE = "gpu-h100-sxm 1gpu-16vcpu-200gb"
CLUSTER_TYPE = "gpu-h100-sxm 8gpu-128vcpu-1600gb"


def main() -> int:
    report = Report("dstack, Nebius")
    neb = endpoints()["nebius"]
    mock_sdk = sdk_class_for_mock(neb["target"], endpoints().get("ca_file", ""))

    import gpuhunt.providers.nebius as gpuhunt_nebius
    from dstack._internal.core.backends.nebius import compute, resources
    from dstack._internal.core.backends.nebius.configurator import NebiusConfigurator
    from dstack._internal.core.backends.nebius.models import (
        NebiusBackendConfigWithCreds,
        NebiusConfig,
        NebiusServiceAccountCreds,
    )
    from dstack._internal.core.errors import BackendError, NoCapacityError, ProvisioningError
    from dstack._internal.core.models.backends.base import BackendType
    from nebius.aio.token.static import Bearer
    from nebius.aio.token.token import Token

    resources.SDK = mock_sdk
    gpuhunt_nebius.SDK = mock_sdk

    items = report.run("gpuhunt NebiusProvider.get (IAM, PlatformService.List, billing v1alpha1 Estimate)",
                       lambda: gpuhunt_nebius.NebiusProvider(Bearer(Token(neb["token"]))).get(),
                       lambda i: f"{len(i)} catalog items, {sum(1 for x in i if x.spot)} spot")
    offline_catalog("nebius", items or [])

    with open(os.path.expanduser("~/.nebius/credentials.json"), encoding="utf-8") as f:
        subject = json.load(f)["subject-credentials"]
    creds = NebiusServiceAccountCreds(service_account_id=subject["sub"], public_key_id=subject["kid"],
                                      private_key_content=subject["private-key"])
    wrong = creds.model_copy(update={"public_key_id": "publickey-e00unknownkey000001"})
    validate_backend(report, NebiusConfigurator(),
                     NebiusBackendConfigWithCreds(creds=creds, regions=[REGION, SOLD_OUT_REGION]),
                     NebiusBackendConfigWithCreds(creds=wrong))
    nebius = compute.NebiusCompute(NebiusConfig(creds=creds))
    pause()
    offers = report.run("get_all_offers_with_availability (token exchange, IAM ProjectService.List)",
                        lambda: nebius.get_all_offers_with_availability(False),
                        lambda o: f"{len(o)} offers in {sorted({x.region for x in o})}") or []

    def lifecycle(call: str, name: str, offer_name: str, region: str, spot: bool = False,
                  group: object = None) -> None:
        offer = report.run(f"{call}: offer {offer_name} in {region}{' (spot)' if spot else ''}",
                           lambda: pick(offers, offer_name, region, spot), lambda o: f"${o.price}/h")
        if offer is None:
            return
        pause()
        data = report.run(f"{call}: create_instance (DiskService.Create, SubnetService.List, Create, until STARTING)",
                          lambda: nebius.create_instance(offer, instance_config(name), group),
                          lambda d: f"{d.instance_id} {d.backend_data}")
        if data is None:
            return
        report.run(f"{call}: update_provisioning_data (public and private address)",
                   lambda: provisioned(nebius, data), str)
        pause()
        report.run(f"{call}: terminate_instance until gone (Delete, then DiskService.Delete"
                   f"{', PricingPolicyService.Delete' if spot else ''})", lambda: terminate(nebius, data), str)

    lifecycle("on-demand", "oc-dstack-neb", TYPE, REGION)
    lifecycle("spot", "oc-dstack-neb-spot", SPOT_TYPE, REGION, spot=True)

    cluster_offer = next((o for o in offers if o.instance.name == CLUSTER_TYPE and o.region == REGION
                          and not o.instance.resources.spot), None)
    group = placement_group("oc-dstack-neb-pg", BackendType.NEBIUS, REGION)
    if cluster_offer is not None:
        provisioning = report.run("create_placement_group (GpuClusterService.Create on an offer's fabric)",
                                  lambda: nebius.create_placement_group(group, cluster_offer),
                                  lambda p: p.backend_data)
        if provisioning is not None:
            group.provisioning_data = provisioning
            lifecycle("in placement group", "oc-dstack-neb-ib", CLUSTER_TYPE, REGION, group=group)
            report.run("delete_placement_group (GpuClusterService.Delete)",
                       lambda: nebius.delete_placement_group(group), lambda _: "deleted")
    else:
        report.check("create_placement_group", False, f"no {CLUSTER_TYPE} offer in {REGION}")

    def sold_out() -> str:
        offer = pick(offers, SPOT_TYPE, SOLD_OUT_REGION)
        try:
            data = nebius.create_instance(offer, instance_config("oc-dstack-neb-soldout"), None)
        except (ProvisioningError, NoCapacityError, BackendError) as e:
            return f"{type(e).__name__}: {e}"
        terminate(nebius, data)
        raise AssertionError(f"create_instance returned {data.instance_id} for a VM the cloud could not place")

    pause()
    report.run("create that fails for capacity (dstack must raise, not report a booted VM)", sold_out, str)

    def nothing_left() -> str:
        """Every disk, GPU cluster and pricing policy dstack made is gone (its cleanup, after each VM)."""
        from nebius.api.nebius.billing.v1 import ListPricingPoliciesRequest, PricingPolicyServiceClient
        from nebius.api.nebius.compute.v1 import (
            DiskServiceClient,
            GpuClusterServiceClient,
            ListDisksRequest,
            ListGpuClustersRequest,
        )

        sdk = nebius._sdk
        left = []
        for project in nebius._region_to_project_id.values():
            for client, request in ((DiskServiceClient, ListDisksRequest), (GpuClusterServiceClient,
                                    ListGpuClustersRequest), (PricingPolicyServiceClient, ListPricingPoliciesRequest)):
                items = resources.LOOP.await_(client(sdk).list(request(parent_id=project), timeout=10)).items
                left += [f"{client.__name__.removesuffix('ServiceClient')} {i.metadata.name}" for i in items]
        if left:
            raise AssertionError(f"left behind: {left}")
        return f"no disk, GPU cluster or pricing policy in {len(nebius._region_to_project_id)} projects"

    report.run("nothing left (DiskService, GpuClusterService, PricingPolicyService List per project)",
               nothing_left, str)
    return 1 if report.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
