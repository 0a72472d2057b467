"""Live Nebius prices: the billing calculator's hourly prices of the catalog's Nebius shapes in one region.

`vm offers` and fleet planning price each Nebius on-demand and spot offer with
`nebius.billing.v1.CalculatorService.EstimateBatch` (one call per region and kind, as SkyPilot's catalog fetcher
prices presets), and say so (`PriceSource.API`). When the calculator does not answer (credentials without a
billing role are PERMISSION_DENIED; the billing endpoint may be unreachable) the catalog's list price is used,
and the offer says `PriceSource.CATALOG`. Capacity block offers keep the contract price of the `capacity_blocks`
setting: the calculator prices on-demand and preemptible VMs, not a customer's block.

Importing this module imports neither nebius_sdk nor grpc.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nebius_sdk import NebiusClient

log = logging.getLogger(__name__)


def read_live(client: NebiusClient, project: str, shapes: Sequence[str], *, preemptible: bool) -> dict[str, float]:
    """"platform/preset" -> hourly USD of one VM of it in `project`'s region, preemptible or not, from one
    EstimateBatch call (blocks for it). Every shape must be one the region sells. An empty dict when the
    calculator fails, logged and never raised: the caller falls back to the catalog. No shapes, no call."""
    from nebius_sdk import NebiusError

    if not shapes:
        return {}
    asked = [(platform, preset, preemptible) for platform, _, preset in (s.partition("/") for s in shapes)]
    try:
        prices = client.estimate_instance_prices(asked, parent_id=project)
    except NebiusError as exc:
        log.info("no live Nebius prices in project %s, catalog prices stand in: %s", project, exc)
        return {}
    return {shape: float(price) for shape, price in zip(shapes, prices, strict=True)}
