"""Nebius mock: the billing calculators and pricing policies (real-clouds.md Part 2, D4 and section 4: "Nebius list
prices exist in the API"). Real shapes: nebius/api `nebius/billing/{v1,v1alpha1}/calculator*.proto` (commit
5101002) and `nebius/billing/v1/pricing_policy*.proto` of the `nebius` package 0.6.29."""

from __future__ import annotations

import grpc
from mock_clouds.nebius import testkit
from mock_clouds.nebius._pb.google.protobuf import Any as AnyMessage
from mock_clouds.nebius._pb.nebius.billing import v1, v1alpha1
from mock_clouds.nebius._pb.nebius.common import v1 as common
from mock_clouds.nebius._pb.nebius.compute import v1 as compute

H100_8 = ("gpu-h100-sxm", "8gpu-128vcpu-1600gb")


def _instance(project: str, platform: str, preset: str, spot: bool = False) -> compute.CreateInstanceRequest:
    return compute.CreateInstanceRequest(
        metadata=common.ResourceMetadata(parent_id=project),
        spec=compute.InstanceSpec(resources=compute.ResourcesSpec(platform=platform, preset=preset),
                                  preemptible=compute.PreemptibleSpec() if spot else None))


def _estimate(nebius, platform: str, preset: str, spot: bool = False) -> v1alpha1.EstimateResponse:
    spec = v1alpha1.ResourceSpec(compute_instance_spec=_instance(nebius.project, platform, preset, spot))
    return nebius.client.calculator_v1alpha1.estimate(v1alpha1.EstimateRequest(resource_spec=spec))


def _hourly(response: v1alpha1.EstimateResponse | v1alpha1.EstimateBatchResponse) -> str:
    assert response.hourly_cost is not None and response.hourly_cost.general is not None
    assert response.hourly_cost.general.total is not None
    return response.hourly_cost.general.total.cost


def test_v1alpha1_estimate_gives_list_and_spot_prices_as_gpuhunt_reads_them(nebius):
    """gpuhunt `get_price` (`gpuhunt/providers/nebius.py`) sends Estimate(CreateInstanceRequest(parent_id, platform,
    preset[, preemptible])) and reads `float(hourly_cost.general.total.cost)`. The list price is the catalog's
    ($2.95 for one H100), the spot price the scenario's published one ($1.25), else 55 % of the list price
    (inference from SkyPilot PR #9829: ~45 % below on-demand): one H200 has no published spot price."""
    on_demand = _estimate(nebius, *testkit.H100)
    assert float(_hourly(on_demand)) == 2.95
    assert on_demand.monthly_cost is not None and on_demand.monthly_cost.general is not None
    assert on_demand.monthly_cost.general.total is not None
    assert float(on_demand.monthly_cost.general.total.cost) == 2.95 * 730
    assert float(_hourly(_estimate(nebius, *testkit.H100, spot=True))) == 1.25
    assert float(_hourly(_estimate(nebius, "gpu-h200-sxm", "1gpu-16vcpu-200gb", spot=True))) == 1.925  # 55 % of $3.50


def test_the_admin_api_can_deny_prices(nebius):
    """Credentials without a billing role cannot price (mock control `POST /nebius/calculator`): PERMISSION_DENIED,
    which a client must survive by falling back to list prices."""
    from mock_clouds.nebius import billing

    with nebius.world.tx() as world:
        billing.permit(world, False)
    denied = testkit.failure(lambda r: _estimate(nebius, *testkit.H100), None)
    assert denied.code == grpc.StatusCode.PERMISSION_DENIED
    with nebius.world.tx() as world:
        billing.permit(world, True)
    assert float(_hourly(_estimate(nebius, *testkit.H100))) == 2.95


def test_v1alpha1_estimate_batch_sums_the_resources(nebius):
    """EstimateBatchResponse has one aggregated hourly and monthly cost (v1alpha1/calculator_service.proto)."""
    specs = [v1alpha1.ResourceSpec(compute_instance_spec=_instance(nebius.project, *shape))
             for shape in (testkit.H100, H100_8)]
    batch = nebius.client.calculator_v1alpha1.estimate_batch(v1alpha1.EstimateBatchRequest(resource_specs=specs))
    assert float(_hourly(batch)) == 2.95 + 23.60


def test_v1_estimate_batch_prices_each_packed_spec_and_the_total(nebius):
    """SkyPilot's catalog fetcher (`fetch_nebius.py:281-283`) sends `billing.v1` EstimateBatch with Any-packed
    CreateInstanceRequests; each gets a ResourceCost and the total a TotalCost per aggregation unit
    (v1/calculator.proto), in the currency of the response."""
    packed = [v1.ResourceSpec(spec=AnyMessage.pack(_instance(nebius.project, *testkit.H100, spot=spot)))
              for spot in (False, True)]
    response = nebius.client.calculator.estimate_batch(v1.EstimateBatchRequest(resource_specs=packed))
    assert response.currency == "USD"
    costs = []
    for cost in response.resource_costs:
        assert cost.aggregation_unit is not None and cost.aggregation_unit.unit == "hour"
        assert cost.general is not None and cost.general.total is not None
        costs.append(float(cost.general.total.cost))
    assert costs == [2.95, 1.25]
    total = response.total_costs[0]
    assert total.general is not None and total.general.total is not None
    assert float(total.general.total.cost) == 2.95 + 1.25


def test_calculator_refuses_what_it_cannot_price(nebius):
    """A preset the project's region does not offer, or a missing spec, is INVALID_ARGUMENT (inference); another
    tenant's project PERMISSION_DENIED, as every call under a parent (auth)."""
    unknown = testkit.failure(lambda r: _estimate(nebius, "gpu-h100-sxm", "3gpu"), None)
    assert unknown.code == grpc.StatusCode.INVALID_ARGUMENT
    empty = testkit.failure(nebius.client.calculator_v1alpha1.estimate, v1alpha1.EstimateRequest())
    assert empty.code == grpc.StatusCode.INVALID_ARGUMENT
    foreign = v1alpha1.ResourceSpec(compute_instance_spec=_instance("project-e00othertenant0001", *testkit.H100))
    denied = testkit.failure(nebius.client.calculator_v1alpha1.estimate, v1alpha1.EstimateRequest(
        resource_spec=foreign))
    assert denied.code == grpc.StatusCode.PERMISSION_DENIED


def _policy(nebius, max_price: str, name: str = "cap") -> v1.CreatePricingPolicyRequest:
    return v1.CreatePricingPolicyRequest(
        metadata=common.ResourceMetadata(parent_id=nebius.project, name=name),
        spec=v1.PricingPolicySpec(
            compute_instance_spec=v1.ComputeInstanceSpec(v1=v1.ComputeInstanceSpecV1(platform="gpu-h100-sxm")),
            pricing=v1.PricingMethod(max_price_v1=v1.MaxPriceV1(max_price=max_price))))


def test_pricing_policy_backs_a_spot_instance(nebius):
    """dstack caps spot prices with PricingPolicyService.Create (`backends/nebius/resources.py:317`) and puts the
    policy's id in `spot_pricing_policy` (`resources.py:390-391`). A cap below the spot price is accepted and
    SCHEDULING_STATE_BLOCKED (the service's comment in the 0.6.29 descriptors)."""
    client = nebius.client
    policy_id = client.wait(client.pricing_policies.create(_policy(nebius, "2.00"))).resource_id
    policy = client.pricing_policies.get(v1.GetPricingPolicyRequest(id=policy_id))
    assert policy.status is not None and policy.status.state == v1.PricingPolicyStatusState.ACTIVE
    assert policy.status.scheduling_state == v1.PricingPolicyStatusSchedulingState.ALLOWED
    stop = compute.PreemptibleSpecPreemptionPolicy.STOP
    spec = testkit.instance_spec(preemptible=compute.PreemptibleSpec(priority=1, on_preemption=stop),
                                 spot_pricing_policy=compute.SpotPricingPolicySpec(id=policy_id))
    vm = client.wait(nebius.create("spot-1", spec)).resource_id
    listed = client.pricing_policies.list(v1.ListPricingPoliciesRequest(parent_id=nebius.project)).items
    assert [(p.metadata.id, p.status.running_vm_count if p.status else -1) for p in listed] == [(policy_id, 1)]
    in_use = testkit.failure(client.pricing_policies.delete, v1.DeletePricingPolicyRequest(id=policy_id))
    assert in_use.code == grpc.StatusCode.FAILED_PRECONDITION
    client.wait(client.instances.delete(compute.DeleteInstanceRequest(id=vm)))
    client.wait(client.pricing_policies.delete(v1.DeletePricingPolicyRequest(id=policy_id)))
    gone = testkit.failure(client.pricing_policies.get, v1.GetPricingPolicyRequest(id=policy_id))
    assert gone.code == grpc.StatusCode.NOT_FOUND

    low = client.pricing_policies.create(_policy(nebius, "0.10", name="low")).resource_id
    blocked = client.pricing_policies.get(v1.GetPricingPolicyRequest(id=low))
    assert blocked.status is not None
    assert blocked.status.scheduling_state == v1.PricingPolicyStatusSchedulingState.BLOCKED


def test_pricing_policy_max_price_out_of_range(nebius):
    """"A max_price outside the allowed price range fails with OUT_OF_RANGE" (PricingPolicyService.Create's comment,
    nebius 0.6.29); the mock's range is (0, the on-demand price per GPU] (inference)."""
    failed = testkit.failure(nebius.client.pricing_policies.create, _policy(nebius, "100"))
    assert failed.code == grpc.StatusCode.OUT_OF_RANGE
    assert failed.error is not None and failed.error.out_of_range is not None
    assert failed.error.out_of_range.limit == "2.95"
    not_a_number = testkit.failure(nebius.client.pricing_policies.create, _policy(nebius, "cheap"))
    assert not_a_number.code == grpc.StatusCode.INVALID_ARGUMENT
