"""What a fleet is asked to be (`FleetSpec`), and the spec of a recorded fleet (`spec_of`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..machine import MachineOptions
from ..model import ReservationRequest
from .placement import Placement
from .store import FleetRecord, OnBudget
from .strategies import FleetRequest


@dataclass(frozen=True)
class FleetSpec:
    name: str
    gpu: str
    count: int
    min_count: int
    strategy: str = "spread"
    gpu_count: int = 1  # GPUs per VM: every member of a fleet has the same size
    providers: tuple[str, ...] | None = None
    region: str | None = None
    reservation: ReservationRequest = ReservationRequest()
    allow_unterminable: bool = False
    ssh_public_key: str | None = None  # installed on every member (None: each provider's own default)
    placement: Placement = Placement.ANY  # CLUSTER: every member in one place (cluster_place.py)
    ttl: float | None = None  # seconds until `vm fleet reap` may destroy it (None: never)
    max_price: float | None = None  # the cap on the fleet's total $/h (budget.py)
    machine: MachineOptions = MachineOptions()  # image, boot disk and startup script of every member (recorded)
    maintain: bool = False  # the watchdog keeps `count` running (--maintain)
    spot: bool = False  # members beyond on_demand_base are spot where a cloud sells spot (--spot; spot.py)
    on_demand_base: int = 0  # with spot: how many members are on-demand (--on-demand-base)
    spot_fallback: bool = False  # with spot: on-demand when no spot can be placed (--spot-fallback)
    wait: float | None = None  # seconds to wait for capacity when the fleet cannot be placed now (waiting.py)
    budget: float | None = None  # the cap on the fleet's total spend in USD (spend_budget.py; None: none)
    on_budget: OnBudget = OnBudget.STOP  # what reaching the budget does

    def request(self, count: int, unterminable: frozenset[str]) -> FleetRequest:
        return FleetRequest(gpu=self.gpu, count=count, gpu_count=self.gpu_count, region=self.region,
                            providers=self.providers, reservation=self.reservation,
                            allow_unterminable=self.allow_unterminable, unterminable_reservations=unterminable)


def spec_of(record: FleetRecord, count: int, ssh_public_key: str | None = None, *, on_demand: int = 0) -> FleetSpec:
    """The spec of a recorded fleet with `count` VMs (its size, strategy, providers, region, reservation and
    machine: the image, boot disk and startup script its members were created with; whether it is maintained and
    spot, and its spot fallback). Of a spot fleet's `count` new VMs the first `on_demand` are on-demand and the
    rest spot: how many of its on-demand base are missing is the caller's to say (spot.replacement_pricing)."""
    return FleetSpec(name=record.name, gpu=record.gpu, count=count, min_count=min(record.min_count, count),
                     strategy=record.strategy, gpu_count=record.gpu_count or 1, providers=record.providers,
                     region=record.region, reservation=record.reservation, ssh_public_key=ssh_public_key,
                     machine=record.machine, maintain=record.maintain, spot=record.spot,
                     on_demand_base=min(on_demand, count) if record.spot else 0, spot_fallback=record.spot_fallback)
