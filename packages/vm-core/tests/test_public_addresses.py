"""Every public address a mock cloud hands out routes nowhere: RFC 5737 (documentation), RFC 6598 (shared address
space) or 198.18.0.0/15 (benchmarking), over any sequence of creates, stops, starts and reboots, so `vm ssh` or
`vm fleet ssh` (which accepts new host keys) against a mock VM never reaches a real host. A dynamic address is
released on stop where the real cloud releases it (Crusoe, Nebius): a stopped VM has none, and no `ssh` line.
"""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mock_clouds.crusoe import vmdata
from mock_clouds.lambda_cloud.state import private_ip, public_ip
from vm_core.model import CreateSpec, Instance, InstanceState, ReservationMode, ReservationRequest

NON_ROUTABLE = tuple(ipaddress.ip_network(n) for n in (
    "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24",  # RFC 5737
    "100.64.0.0/10",  # RFC 6598
    "198.18.0.0/15",  # RFC 2544
))
WAIT = 60.0
SIZE = {"crusoe": ("H100", 8), "lambda": ("A10", 1), "nebius": ("H100", 1)}
ACTIONS = st.lists(st.tuples(st.sampled_from(["create", "restart", "reboot", "destroy"]),
                             st.sampled_from(sorted(SIZE)), st.integers(0, 7)), min_size=1, max_size=8)


def assert_non_routable(address: str) -> None:
    assert address, "no address"
    ip = ipaddress.ip_address(address)
    assert any(ip in net for net in NON_ROUTABLE), f"{address} is a routable address"


@pytest.fixture
def providers(mock_clouds: Any) -> dict[str, Any]:
    """The three providers on one set of mock clouds, shared by every example of a test (hypothesis)."""
    from vm_core.embedded import settings_from_endpoints
    from vm_core.plugins import provider_plugins

    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGgLAWC6bF3K8NqzCcSE0G4cqyBqV3zZkh9q6rUa0fB1 tests@vm-core"
    plugins = provider_plugins()
    return {name: plugins.get(name).connect({**settings_from_endpoints(mock_clouds.endpoints, name),
                                             "ssh_public_key": key}) for name in SIZE}


def seen(vm: Instance) -> Instance:
    """`vm`, after checking what it shows of its address: none while stopped (released), else non-routable."""
    if vm.state is InstanceState.STOPPED:
        assert vm.public_ip == "" and vm.ssh == ""
    elif vm.public_ip:
        assert_non_routable(vm.public_ip)
    if vm.state is not InstanceState.RUNNING:
        assert vm.ssh == ""
    return vm


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(actions=ACTIONS)
def test_every_address_handed_out_is_non_routable(providers: dict[str, Any], actions: list[Any]) -> None:
    made: list[tuple[str, str]] = []  # (provider, id)
    try:
        for number, (action, provider, index) in enumerate(actions):
            if action == "create" or not made:
                gpu, count = SIZE[provider]
                spec = CreateSpec(name=f"addr-{number}", gpu=gpu, gpu_count=count,
                                  reservation=ReservationRequest(ReservationMode.AUTO))
                vm = seen(providers[provider].begin_create(spec).wait(WAIT))
                assert vm.state is InstanceState.RUNNING
                made.append((provider, vm.id))
                continue
            provider, vm_id = made[index % len(made)]
            cloud = providers[provider]
            if action == "destroy":
                cloud.begin_destroy(vm_id).wait(WAIT)
                made.remove((provider, vm_id))
                continue
            if action == "restart" and provider != "lambda":  # Lambda has no stop
                seen(cloud.begin_stop(vm_id).wait(WAIT))
                seen(cloud.get_instance(vm_id))
                seen(cloud.begin_start(vm_id).wait(WAIT))
            else:
                seen(cloud.begin_reboot(vm_id).wait(WAIT))
            seen(cloud.get_instance(vm_id))
    finally:
        for provider, vm_id in made:
            providers[provider].begin_destroy(vm_id).wait(WAIT)


@given(st.integers(min_value=0, max_value=10**9))
def test_the_address_pools_stay_non_routable_when_they_wrap(number: int) -> None:
    assert_non_routable(public_ip(number))  # Lambda's n-th launch
    assert ipaddress.ip_address(private_ip(number)).is_private
    assert_non_routable(str(vmdata._PUBLIC_BASE + 1 + number % (vmdata._PUBLIC_SIZE - 2)))  # Crusoe's n-th
