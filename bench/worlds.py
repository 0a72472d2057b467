"""The mock-cloud worlds the benchmarks run against: the default scenario, edited by `configure` functions.

Durations and rate limits are the default scenario's (mock-clouds/src/mock_clouds/default_scenario.toml), which
follow the research notes; `cloud_times` reads them from a world's configuration so the lower bounds use exactly
what the mocks run with.

Seeding thousands of instances: one template VM per provider is created through its real API (so every
front end's native record is exactly what a create makes), then cloned inside the world (`World.tx()`) with new
ids and names. Clones are running, hold on-demand capacity, and have no operation records (as after the
mocks' one-hour retention purge). 3,000 instances take about a second this way instead of minutes of API calls.
"""

from __future__ import annotations

import copy
import secrets
from dataclasses import dataclass
from typing import Any

from mock_clouds.core.models import Capacity, Quota, RateLimit, VMState, WorldState

PROVIDERS = ("crusoe", "lambda", "nebius")

# One VM size that all three clouds sell: 8 x H100 SXM per VM (`H100:8`). Crusoe sells H100 only as 8-GPU VMs and
# `H100` alone means H100:1 (sold by Lambda and Nebius only), so every fleet of the bench asks for H100:8.
GPU, GPU_COUNT = "H100", 8
# The offer each provider's H100:8 shape is placed on (one region each, room for ROOM VMs): shapes and regions of
# the default scenario (fleet_world checks they are there).
OFFERS = {
    "crusoe": ("us-east1-a", "h100-80gb-sxm-ib.8x"),
    "lambda": ("us-west-3", "gpu_8x_h100_sxm5"),
    "nebius": ("eu-north1", "gpu-h100-sxm/8gpu-128vcpu-1600gb"),
}
ROOM = 1200  # VMs per provider: more than the largest fleet (1,000), whatever the strategy puts where


@dataclass(frozen=True)
class CloudTimes:
    """Real-world seconds of one cloud (multiplied by the time scale in the mocks), as its world configures them."""

    create: float  # create/launch until running (boot included): durations.create
    delete: float  # delete/terminate until gone: durations.delete
    request_interval: float = 0.0  # every API call (token bucket of `request_burst`): rate_limit
    request_burst: int = 1
    create_interval: float = 0.0  # every create call, on top of the request bucket
    create_burst: int = 1
    call_latency: float = 0.0  # latency the mock adds to every call (faults.latency_ms; not time-scaled)


def cloud_times(state: WorldState) -> dict[str, CloudTimes]:
    """Each provider's durations, rate limits and added latency, read from a world's configuration."""
    times = {}
    for name in PROVIDERS:
        config = state.providers[name]
        rl, durations = config.rate_limit, config.durations
        times[name] = CloudTimes(durations.create, durations.delete, rl.request_interval, rl.request_burst,
                                 rl.create_interval, rl.create_burst, config.faults.latency_ms / 1000.0)
    return times


def fleet_world_times() -> dict[str, CloudTimes]:
    """The times of the fleet world (the default scenario as `fleet_world` edits it), what the bounds use."""
    from mock_clouds.scenario import load_scenario

    state = load_scenario()
    fleet_world(state)
    return cloud_times(state)


def fleet_world(state: WorldState) -> None:
    """The default scenario with room for ROOM H100:8 VMs per provider, on demand only.

    Reservations are removed (Lambda's cannot be terminated through the API, and they would add a second
    offer per provider), as are the other H100 capacity entries (one offer per provider); Crusoe's H100 quota
    is raised to match. Durations, rate limits and faults are the scenario's, unchanged."""
    for name, (region, shape) in OFFERS.items():
        config = state.providers[name]
        if region not in config.regions or shape not in {s.key for s in config.shapes}:
            raise RuntimeError(f"{name}: the scenario no longer sells {shape} in {region}")
        config.reservations = []
        config.capacity = [c for c in config.capacity if "h100" not in c.shape.lower()]
        config.capacity.append(Capacity(region=region, shape=shape, quantity=ROOM))
    crusoe = state.providers["crusoe"]
    crusoe.quotas = [q for q in crusoe.quotas if q.family != "h100"]
    crusoe.quotas += [Quota(scope=p.id, family="h100", max_gpus=GPU_COUNT * ROOM) for p in crusoe.projects]


def unlimited_world(state: WorldState) -> None:
    """fleet_world without Lambda's rate limits: the server itself is measured, not its token bucket."""
    fleet_world(state)
    state.providers["lambda"].rate_limit = RateLimit()


# ------------------------------------------------------------------------------------------------ seeding
def seed(clouds: Any, per_provider: int, names: dict[str, list[str]] | None = None) -> dict[str, dict[str, str]]:
    """Fill the running in-process `clouds` with `per_provider` running VMs per provider.

    `names[provider]` gives the first names (e.g. fleet members); the rest are `seed-<provider>-<n>`.
    Returns {provider: {name: instance id}}."""
    from common import connect_providers
    from vm_core.model import CreateSpec

    providers = connect_providers(clouds.endpoints)
    ids: dict[str, dict[str, str]] = {}
    for name, provider in providers.items():
        region, shape = OFFERS[name]
        template = provider.begin_create(CreateSpec(name=f"template-{name}", gpu=GPU, gpu_count=GPU_COUNT,
                                                    region=region, shape=shape)).wait(120)
        wanted = list((names or {}).get(name, []))
        wanted += [f"seed-{name}-{n:04d}" for n in range(len(wanted), per_provider - 1)]
        ids[name] = {template.name: template.id, **dict(zip(wanted, _clone(clouds.world, name, template.id, wanted),
                                                            strict=True))}
    return ids


def _clone(world: Any, provider: str, template_id: str, names: list[str]) -> list[str]:
    """Copies of the template VM under `names`, running, created now (inside one world transaction)."""
    from mock_clouds.core import ids
    from mock_clouds.lambda_cloud.state import private_ip, public_ip

    made = []
    with world.tx() as w:
        template = w.vm(provider, template_id)
        assert template is not None and template.state == VMState.RUNNING, template
        now = w.now()
        for n, name in enumerate(names, start=1):
            vm = copy.deepcopy(template)
            vm.id, vm.name, vm.created_at, vm.updated_at = ids.vm_id(provider), name, now, now
            if provider == "lambda":  # a launch numbers addresses; keep them distinct
                vm.native.update(ip=public_ip(10_000 + n), private_ip=private_ip(10_000 + n),
                                 jupyter_token=secrets.token_hex(16))
            elif provider == "crusoe":
                vm.native = {}  # the front end derives stable per-id addresses and disks (vmdata.load)
            w.state.vms[f"{provider}:{vm.id}"] = vm
            made.append(vm.id)
    return made
