"""Spot price caps: Nebius pricing policies for `vm create --spot --max-price` (`SupportsSpotPriceCap`).

A pricing policy caps the price per GPU-hour of one platform's preemptible VMs (`billing.v1.PricingPolicyService`,
as dstack caps spot prices, `backends/nebius/resources.py:317`); a VM names it in `spot_pricing_policy`. vm turns
a cap per VM-hour into the policy's price per GPU-hour (the cap / the shape's GPUs, to 1/10000 USD), reuses the
project's policy of that platform and price (named `vm-spot-<platform>-<price>`), and leaves it after the VM: one
policy backs any number of VMs, and later creates with the same cap reuse it. Nebius accepts a cap below the
current spot price but blocks scheduling under it: vm refuses it first (CapacityError, exit 6). A cap outside the
allowed range is the API's OUT_OF_RANGE (UsageError, exit 2); a policy vm made for such a cap is deleted again.

Every call blocks, with a deadline (`WAIT`). Importing this module imports neither nebius_sdk nor grpc.
"""

from __future__ import annotations

from decimal import ROUND_DOWN, Decimal
from typing import TYPE_CHECKING

from ..errors import CapacityError
from ..hints import Command, Hint, Setting
from ._nebius_map import NAME, ErrorContext, translated

if TYPE_CHECKING:
    from nebius_sdk import NebiusClient
    from nebius_sdk.models import PricingPolicy

WAIT = 300.0  # seconds a policy create may take
STEP = Decimal("0.0001")


def per_gpu(max_price_per_hour: float, gpus: int) -> Decimal:
    """The policy price of a VM cap: USD per GPU-hour, rounded down so that the VM never costs more."""
    return (Decimal(str(max_price_per_hour)) / max(gpus, 1)).quantize(STEP, rounding=ROUND_DOWN)


def policy_name(platform: str, price: Decimal) -> str:
    return f"vm-spot-{platform}-{price}"


def ensure(client: NebiusClient, project: str, region: str, platform: str, price: Decimal) -> str:
    """The id of the project's policy capping `platform` at `price` per GPU-hour: the existing one, else a new
    one. Raises CapacityError when the spot price is above it now, UsageError when Nebius refuses the price."""
    name = policy_name(platform, price)
    with translated(ErrorContext(region=region, project=project)):
        found = next((p for p in client.list_pricing_policies(project) if p.metadata and p.metadata.name == name), None)
        made = found is None
        if found is None:
            found = client.begin_create_pricing_policy(name, platform, price, parent_id=project).result(timeout=WAIT)
        if made and _blocked(found) and found.metadata is not None:
            client.begin_delete_pricing_policy(found.metadata.id).wait(WAIT)  # made for nothing: not left behind
    if _blocked(found):
        raise CapacityError(f"the spot price of {platform} in {region} is above the cap of ${price}/GPU-h now",
                            region=region, provider=NAME,
                            suggestion=Hint.say("raise {}, or see {}", Setting("max_price"),
                                                Command.of("offers", "--provider", NAME)))
    return found.metadata.id if found.metadata is not None else ""


def _blocked(policy: PricingPolicy) -> bool:
    from nebius_sdk.models import PricingPolicyStatusSchedulingState as Scheduling

    return policy.status is not None and policy.status.scheduling_state == Scheduling.BLOCKED
