"""Nebius mock: a region's public-images parent (`project-{routing code}public-images`) as SkyPilot's catalog
fetcher uses it.

SkyPilot 0.14.1 `sky/catalog/data_fetchers/fetch_nebius.py` builds its catalog from the live API with ordinary
user credentials (SkyPilot PR #9829: "verified against the live Nebius billing API with real credentials"): for
each region code of the tenant's projects it lists `PlatformService.List(parent_id=PARENT_ID_TEMPLATE.format(code))`
with `PARENT_ID_TEMPLATE = 'project-{}public-images'`, then prices every preset with billing v1 `EstimateBatch`
whose packed `CreateInstanceRequest.metadata.parent_id` is that same parent. Both must answer for any caller, with
the region's platforms and prices; an unknown parent stays PERMISSION_DENIED (auth).
"""

from __future__ import annotations

import grpc
from mock_clouds.nebius import testkit
from mock_clouds.nebius._pb.google.protobuf import Any as AnyMessage
from mock_clouds.nebius._pb.nebius.billing import v1
from mock_clouds.nebius._pb.nebius.common import v1 as common
from mock_clouds.nebius._pb.nebius.compute import v1 as compute

EU_NORTH1_PUBLIC = "project-e00public-images"  # eu-north1's projects are project-e00...
US_CENTRAL1_PUBLIC = "project-u00public-images"


def _names(nebius, parent: str) -> list[str]:
    response = nebius.client.platforms.list(compute.ListPlatformsRequest(parent_id=parent, page_size=999))
    return [p.metadata.name for p in response.items]


def test_platforms_of_a_public_parent_are_its_regions(nebius):
    """The public parent of a region lists exactly what a project of that region lists, each platform under the
    parent asked for; GetByName answers there too."""
    for region, public in (("eu-north1", EU_NORTH1_PUBLIC), ("us-central1", US_CENTRAL1_PUBLIC)):
        assert _names(nebius, public) == _names(nebius, nebius.projects[region])
    items = nebius.client.platforms.list(compute.ListPlatformsRequest(parent_id=EU_NORTH1_PUBLIC)).items
    assert {p.metadata.parent_id for p in items} == {EU_NORTH1_PUBLIC}
    h100 = nebius.client.platforms.get_by_name(common.GetByNameRequest(parent_id=EU_NORTH1_PUBLIC,
                                                                        name="gpu-h100-sxm"))
    assert h100.spec.gpu_memory_gigabytes == 80 and len(h100.spec.presets) == 2


def test_estimate_batch_prices_presets_under_a_public_parent(nebius):
    """Priced as under a project of the region: the scenario's list price on demand, the spot price preemptible."""
    def price(parent: str, spot: bool) -> float:
        request = compute.CreateInstanceRequest(
            metadata=common.ResourceMetadata(parent_id=parent),
            spec=compute.InstanceSpec(resources=compute.ResourcesSpec(platform=testkit.H100[0],
                                                                      preset=testkit.H100[1]),
                                      preemptible=compute.PreemptibleSpec() if spot else None))
        response = nebius.client.calculator.estimate_batch(
            v1.EstimateBatchRequest(resource_specs=[v1.ResourceSpec(spec=AnyMessage.pack(request))]))
        total = response.total_costs[0].general
        assert total is not None and total.total is not None
        return float(total.total.cost)

    for spot in (False, True):
        assert price(EU_NORTH1_PUBLIC, spot) == price(nebius.projects["eu-north1"], spot)
    assert price(EU_NORTH1_PUBLIC, False) == 2.95


def test_unknown_and_foreign_parents_stay_denied(nebius):
    for parent in ("project-zzzpublic-images", "project-e00othertenant0001"):
        failed = testkit.failure(nebius.client.platforms.list, compute.ListPlatformsRequest(parent_id=parent))
        assert failed.code == grpc.StatusCode.PERMISSION_DENIED, parent
