"""Nebius billing: the price calculators and the spot pricing policies.

* `nebius.billing.v1alpha1.CalculatorService` {Estimate, EstimateBatch}: the hourly and monthly cost of
  `CreateInstanceRequest`s, read by gpuhunt as `hourly_cost.general.total.cost` (`gpuhunt/providers/nebius.py`
  `get_price`), once per preset and once more with `preemptible` set for the spot price.
* `nebius.billing.v1.CalculatorService` {EstimateBatch}: `Any`-packed specs, each priced in `resource_costs` and
  summed in `total_costs` per aggregation unit (SkyPilot's catalog fetcher, `fetch_nebius.py:281-283`).
* `nebius.billing.v1.PricingPolicyService` {Create, Get, List, Delete}: a spot `max_price` per GPU-hour for one
  platform, referenced by `InstanceSpec.spot_pricing_policy` (dstack `backends/nebius/resources.py:317`).

Prices. The on-demand price of a preset is the scenario shape's `price_cents_per_hour`: the public list prices of
Nebius's price page. The spot price is `[nebius.extra] spot_prices` ({shape key: USD per hour}) where the scenario
gives one, else 55 % of the list price: an inference from SkyPilot PR #9829, which quotes live spot prices about
45 % below on-demand; the real spot price moves with the market. Only instances are priced (the specs vm, gpuhunt
and SkyPilot send): a disk or filesystem spec answers UNIMPLEMENTED (mock limitation). A preset must be offered in
the project's region and, for spot, its platform must allow preemptibles (INVALID_ARGUMENT otherwise, inference).
The monthly cost is 730 hours (inference). Currency: USD only. The admin API can take the caller's right to price
away (`POST /nebius/calculator {"permitted": false}`, a mock control): the calculators then answer PERMISSION_DENIED,
as for credentials without a billing role.

A pricing policy's `max_price` must be a positive decimal no higher than the platform's on-demand price per GPU
(OUT_OF_RANGE otherwise: "A max_price outside the allowed price range fails with OUT_OF_RANGE", the service's
comment; the bounds are an inference); below the current spot price it is accepted and SCHEDULING_STATE_BLOCKED.
Deleting a policy that running VMs use is FAILED_PRECONDITION (inference).
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

import grpc

from ..core import billing as core_billing
from ..core.models import Project, Provider, Shape
from ..core.world import World
from . import auth, catalog, errors, images, references, stored, validate
from ._pb.nebius.billing import v1, v1alpha1
from ._pb.nebius.common import v1 as common
from ._pb.nebius.compute import v1 as compute
from .call import Call

NEBIUS = Provider.NEBIUS
SERVICE = "billing"  # ServiceError.service of these errors (inference: no real one was seen)
SPOT_SHARE = core_billing.SPOT_SHARE
HOURS_PER_MONTH = 730
CURRENCY = "USD"
POLICIES = "pricing_policy"
_INSTANCE_URL = "type.googleapis.com/nebius.compute.v1.CreateInstanceRequest"
Unit = v1.FilterAggregationUnitFilterAggregationUnitValue


_FORBIDDEN = "nebius_calculator_forbidden"  # extra_state key: True while the calculators refuse (admin API)


# ------------------------------------------------------------------------------------------------ prices
def permitted(world: World) -> bool:
    """Whether the calculators price (the admin API's switch)."""
    return not world.state.extra_state.get(_FORBIDDEN, False)


def permit(world: World, allowed: bool) -> None:
    world.state.extra_state[_FORBIDDEN] = not allowed


def _check_permitted(world: World, owner: str) -> None:
    if not permitted(world):
        raise errors.permission_denied(owner)


def hourly_price(world: World, owner: str, request: compute.CreateInstanceRequest) -> Decimal:
    """The hourly price of the instance `request` would create (on-demand, or spot when preemptible)."""
    metadata = request.metadata or common.ResourceMetadata()
    region = images.scope_region(world, owner, metadata.parent_id, "metadata.parent_id")
    spec = request.spec or compute.InstanceSpec()
    resources = spec.resources or compute.ResourcesSpec()
    shape = _offered(world, region, resources.platform, resources.preset or "")
    if spec.preemptible is None:
        return list_price(shape)
    if shape.gpus == 0:
        raise _bad([("spec.preemptible", f"platform {resources.platform} does not allow preemptible instances")])
    return spot_price(world, shape)


def list_price(shape: Shape) -> Decimal:
    return core_billing.list_price(shape)


def spot_price(world: World, shape: Shape) -> Decimal:
    """The spot price the calculator answers, the one the mock bills preemptible VMs at (core/billing.py)."""
    return core_billing.spot_price(world, NEBIUS, shape)


def _offered(world: World, region: str, platform: str, preset: str) -> Shape:
    if not platform:
        raise _bad([("spec.resources.platform", "value is required")])
    shapes = catalog.platforms(world, region).get(platform, [])
    shape = next((s for s in shapes if catalog.split_key(s.key)[1] == preset), None)
    if shape is None:
        raise _bad([("spec.resources.preset", f"preset {preset!r} of platform {platform} is not offered in "
                                              f"{region}")])
    return shape


def _text(value: Decimal) -> str:
    """A decimal as the API writes costs: plain digits, no exponent, no trailing zeros."""
    return format(value.normalize(), "f")


def _breakdown_v1alpha1(hourly: Decimal, hours: int) -> v1alpha1.ResourceGroupCost:
    cost = hourly * hours
    return v1alpha1.ResourceGroupCost(general=v1alpha1.GeneralTotalCost(
        total=v1alpha1.CostBreakdown(cost=_text(cost), cost_rounded=_text(cost.quantize(Decimal("0.01"))))))


def _instance_of(spec: v1alpha1.ResourceSpec | None, path: str) -> compute.CreateInstanceRequest:
    if spec is None or spec.compute_instance_spec is None:
        if spec is not None and any(x is not None for x in (spec.compute_disk_spec, spec.compute_filesystem_spec,
                                                            spec.compute_instance_update_spec,
                                                            spec.compute_disk_update_spec,
                                                            spec.compute_filesystem_update_spec)):
            raise errors.ApiError(grpc.StatusCode.UNIMPLEMENTED, "the mock prices compute instances only")
        raise _bad([(path, "value is required")])
    return spec.compute_instance_spec


def estimate(call: Call, request: v1alpha1.EstimateRequest) -> v1alpha1.EstimateResponse:
    with call.world.read() as world:
        _check_permitted(world, call.owner)
        hourly = hourly_price(world, call.owner, _instance_of(request.resource_spec, "resource_spec"))
        return v1alpha1.EstimateResponse(hourly_cost=_breakdown_v1alpha1(hourly, 1),
                                         monthly_cost=_breakdown_v1alpha1(hourly, HOURS_PER_MONTH))


def estimate_batch_v1alpha1(call: Call, request: v1alpha1.EstimateBatchRequest) -> v1alpha1.EstimateBatchResponse:
    if not request.resource_specs:
        raise _bad([("resource_specs", "value is required")])
    with call.world.read() as world:
        _check_permitted(world, call.owner)
        hourly = sum((hourly_price(world, call.owner, _instance_of(s, f"resource_specs[{i}]"))
                      for i, s in enumerate(request.resource_specs)), Decimal(0))
        return v1alpha1.EstimateBatchResponse(hourly_cost=_breakdown_v1alpha1(hourly, 1),
                                              monthly_cost=_breakdown_v1alpha1(hourly, HOURS_PER_MONTH))


def estimate_batch(call: Call, request: v1.EstimateBatchRequest) -> v1.EstimateBatchResponse:
    if not request.resource_specs:
        raise _bad([("resource_specs", "value is required")])
    if request.currency not in ("", CURRENCY):
        raise _bad([("currency", f"unsupported currency {request.currency}")])
    units = _units(request.filter_aggregation_unit)
    with call.world.read() as world:
        _check_permitted(world, call.owner)
        instances = [_unpack(s, i) for i, s in enumerate(request.resource_specs)]
        prices = [hourly_price(world, call.owner, r) for r in instances]
        costs = [_resource_cost(r, price, unit, hours) for r, price in zip(instances, prices, strict=True)
                 for unit, hours in units.items()]
        totals = [v1.TotalCost(aggregation_unit=_unit(unit), general=v1.GeneralResourceCost(
            total=_breakdown_v1(sum(prices, Decimal(0)) * hours, ""))) for unit, hours in units.items()]
        return v1.EstimateBatchResponse(resource_costs=costs, total_costs=totals, currency=CURRENCY)


def _units(filter_units: v1.FilterAggregationUnit | None) -> dict[str, int]:
    """Aggregation unit -> hours: the hour unless the request filters for others (minute, day... are hours too)."""
    hours = {Unit.FILTER_AGGREGATION_UNIT_HOUR: ("hour", 1), Unit.FILTER_AGGREGATION_UNIT_DAY: ("day", 24),
             Unit.FILTER_AGGREGATION_UNIT_WEEK: ("week", 168),
             Unit.FILTER_AGGREGATION_UNIT_MONTH: ("month", HOURS_PER_MONTH)}
    wanted = [u for u in (filter_units.filter_aggregation_unit_values if filter_units else []) if u in hours]
    return dict(hours[u] for u in wanted) or {"hour": 1}


def _unit(name: str) -> v1.AggregationUnit:
    return v1.AggregationUnit(unit=name, unit_type=v1.AggregationUnitUnitType.TIME_BASED)


def _unpack(spec: v1.ResourceSpec, index: int) -> compute.CreateInstanceRequest:
    packed = spec.spec
    if packed is None or not packed.type_url:
        raise _bad([(f"resource_specs[{index}].spec", "value is required")])
    if packed.type_url != _INSTANCE_URL:
        raise errors.ApiError(grpc.StatusCode.UNIMPLEMENTED, f"the mock prices compute instances only, not "
                                                             f"{packed.type_url.rpartition('/')[2]}")
    return compute.CreateInstanceRequest.FromString(packed.value)


def _resource_cost(request: compute.CreateInstanceRequest, hourly: Decimal, name: str, hours: int
                   ) -> v1.ResourceCost:
    spec = request.spec or compute.InstanceSpec()
    resources = spec.resources or compute.ResourcesSpec()
    sku = f"{resources.platform}/{resources.preset}/{'preemptible' if spec.preemptible else 'on-demand'}"
    return v1.ResourceCost(metadata=request.metadata, aggregation_unit=_unit(name),
                           general=v1.GeneralResourceCost(total=_breakdown_v1(hourly * hours, sku)))


def _breakdown_v1(cost: Decimal, sku: str) -> v1.CostBreakdown:
    rounded = _text(cost.quantize(Decimal("0.01")))
    skus = [v1.SkuCost(sku_id=sku, quantity="1", quantity_rounded="1", cost=_text(cost), cost_rounded=rounded)]
    return v1.CostBreakdown(sku_costs=skus if sku else [], cost=_text(cost), cost_rounded=rounded)


# ------------------------------------------------------------------------------------------------ pricing policies
def create_policy(call: Call, request: v1.CreatePricingPolicyRequest) -> common.Operation:
    with call.world.tx() as world:
        metadata = request.metadata
        project = None
        if metadata is not None and metadata.parent_id:
            project = auth.project(world, call.owner, metadata.parent_id, "metadata.parent_id")
        violations = validate.create_metadata(metadata)
        platform, max_price = _policy_terms(request.spec)
        if not platform:
            violations.append(("spec.compute_instance_spec.v1.platform", "value is required"))
        if max_price is None:
            violations.append(("spec.pricing.max_price_v1.max_price", "must be a decimal number"))
        if violations:
            raise _bad(violations)
        assert project is not None and metadata is not None and request.spec is not None and max_price is not None
        ceiling = _per_gpu(world, project, platform, spot=False)
        if max_price <= 0 or max_price > ceiling:
            raise _out_of_range(max_price, ceiling)
        made = stored.add(world, POLICIES, "pricingpolicy", metadata, request.spec)
        return stored.operation(world, owner=call.owner, scope=project.id, resource_id=made.id,
                                description="Create pricing policy", request=request)


def get_policy(call: Call, request: v1.GetPricingPolicyRequest) -> v1.PricingPolicy:
    with call.world.read() as world:
        return _policy(world, _own_policy(world, call.owner, request.id))


def list_policies(call: Call, request: v1.ListPricingPoliciesRequest) -> v1.ListPricingPoliciesResponse:
    with call.world.read() as world:
        project = auth.project(world, call.owner, request.parent_id, "parent_id")
        chosen, token = stored.page(world, POLICIES, project.id, request.page_size, request.page_token)
        return v1.ListPricingPoliciesResponse(items=[_policy(world, p) for p in chosen], next_page_token=token)


def delete_policy(call: Call, request: v1.DeletePricingPolicyRequest) -> common.Operation:
    with call.world.tx() as world:
        found = _own_policy(world, call.owner, request.id)
        users = references.policy_users(world, found.id)
        if users:
            raise errors.bad_resource_state(found.id, f"pricing policy {found.id} backs instances: {', '.join(users)}")
        stored.remove(world, POLICIES, found.id)
        return stored.operation(world, owner=call.owner, scope=found.parent_id, resource_id=found.id,
                                description="Delete pricing policy", request=request)


def _policy_terms(spec: v1.PricingPolicySpec | None) -> tuple[str, Decimal | None]:
    instance = spec.compute_instance_spec if spec is not None else None
    method = spec.pricing if spec is not None else None
    platform = instance.v1.platform if instance is not None and instance.v1 is not None else ""
    raw = method.max_price_v1.max_price if method is not None and method.max_price_v1 is not None else ""
    try:
        price = Decimal(raw)
    except InvalidOperation:
        return platform, None
    return platform, price if price.is_finite() else None


def _per_gpu(world: World, project: Project, platform: str, *, spot: bool) -> Decimal:
    """The lowest on-demand (or spot) price per GPU-hour among the platform's presets in the project's region."""
    shapes = [s for s in catalog.platforms(world, project.region).get(platform, []) if s.gpus > 0]
    if not shapes:
        raise _bad([("spec.compute_instance_spec.v1.platform",
                     f"platform {platform} has no preemptible GPU presets in {project.region}")])
    return min((spot_price(world, s) if spot else list_price(s)) / s.gpus for s in shapes)


def _own_policy(world: World, owner: str, policy_id: str) -> stored.Stored:
    if not policy_id:
        raise _bad([("id", "value is required")])
    found = stored.find(world, POLICIES, policy_id)
    if found is None:
        raise errors.not_found(policy_id, "pricing policy")
    if not auth.owns_scope(world, owner, found.parent_id):
        raise errors.permission_denied(policy_id)
    return found


def _policy(world: World, record: stored.Stored) -> v1.PricingPolicy:
    spec = v1.PricingPolicySpec.from_dict(record.spec)
    platform, max_price = _policy_terms(spec)
    project = world.project(NEBIUS, record.parent_id)
    assert project is not None and max_price is not None  # checked on Create
    blocked = max_price < _per_gpu(world, project, platform, spot=True)
    scheduling = v1.PricingPolicyStatusSchedulingState
    return v1.PricingPolicy(metadata=record.metadata(), spec=spec, status=v1.PricingPolicyStatus(
        state=v1.PricingPolicyStatusState.ACTIVE, sku_id=f"{platform}/preemptible", currency=CURRENCY,
        scheduling_state=scheduling.BLOCKED if blocked else scheduling.ALLOWED,
        running_vm_count=len(references.policy_users(world, record.id))))


def _out_of_range(requested: Decimal, limit: Decimal) -> errors.ApiError:
    detail = common.OutOfRange(requested=_text(requested), limit=_text(limit))
    error = common.ServiceError(service=SERVICE, code="OutOfRange", out_of_range=detail)
    return errors.ApiError(grpc.StatusCode.OUT_OF_RANGE,
                           f"max_price {_text(requested)} is outside the allowed range (0, {_text(limit)}]", error)


def _bad(violations: list[validate.Violation]) -> errors.ApiError:
    return errors.bad_request(violations, service=SERVICE)

