"""One contract, every provider: the same lifecycle through the Provider protocol against the mock clouds.

Where the clouds differ, the difference is asserted explicitly (CAPABILITIES), never skipped silently.
"""

from __future__ import annotations

import contextlib

import pytest
from vm_core.errors import AuthError, CapacityError, NotFound
from vm_core.model import CreateSpec, InstanceState, ReservationMode, ReservationRequest
from vm_core.provider import Provider, SupportsReboot, SupportsReservations, SupportsStopStart

WAIT = 60.0  # generous: the machine is shared and slow; mock operations take a fraction of a second

# What each cloud can do (the README's capability table says the same).
CAPABILITIES = {
    "crusoe": {"stop_start": True, "reboot": True, "reservations": True},
    "lambda": {"stop_start": False, "reboot": True, "reservations": True},
    "nebius": {"stop_start": True, "reboot": True, "reservations": False},
}
# A region of the default scenario where the cloud sells H100 but has no H100 capacity.
NO_H100_CAPACITY = {"crusoe": "us-northcentral1-a", "lambda": "us-east-1", "nebius": "eu-west1"}
# Well-formed ids that do not exist.
UNKNOWN_IDS = {
    "crusoe": "00000000-0000-4000-8000-000000000000",
    "lambda": "0" * 32,
    "nebius": "computeinstance-e00zzzzzzzzzzzzzzz",
}


def create(provider: Provider, name: str, **kwargs) -> object:
    spec = CreateSpec(name=name, gpu="H100", reservation=ReservationRequest(ReservationMode.NONE), **kwargs)
    return provider.begin_create(spec)


def test_lifecycle(provider: Provider) -> None:
    pending = create(provider, "contract-vm")
    assert pending.resource_id
    vm = pending.wait(WAIT)
    assert (vm.provider, vm.id, vm.name, vm.state) == (provider.name, pending.resource_id, "contract-vm",
                                                       InstanceState.RUNNING)
    assert vm.gpu == "H100" and vm.gpu_count >= 1 and vm.region and vm.shape
    assert vm.price_per_hour is not None and vm.price_per_hour > 0
    assert vm.reserved is False and vm.reservation_id == ""
    assert provider.get_instance(vm.id).id == vm.id
    assert vm.id in [i.id for i in provider.list_instances()]
    found = provider.find_instance("contract-vm")
    assert found is not None and found.id == vm.id
    assert provider.find_instance("no-such-vm") is None

    provider.begin_destroy(vm.id).wait(WAIT)
    assert vm.id not in [i.id for i in provider.list_instances()]
    with contextlib.suppress(NotFound):  # the cloud may have forgotten it already: also correct
        assert provider.get_instance(vm.id).state is InstanceState.TERMINATED
    provider.begin_destroy(vm.id).wait(WAIT)  # destroying again is success


def test_stop_and_start_where_supported(provider: Provider) -> None:
    supported = isinstance(provider, SupportsStopStart)
    assert supported is CAPABILITIES[provider.name]["stop_start"]
    if not supported:
        return
    vm = create(provider, "stop-start").wait(WAIT)
    assert provider.begin_stop(vm.id).wait(WAIT).state is InstanceState.STOPPED
    assert provider.get_instance(vm.id).state is InstanceState.STOPPED
    assert provider.begin_start(vm.id).wait(WAIT).state is InstanceState.RUNNING
    provider.begin_destroy(vm.id).wait(WAIT)


def test_reboot(provider: Provider) -> None:
    assert isinstance(provider, SupportsReboot) is CAPABILITIES[provider.name]["reboot"]
    vm = create(provider, "reboot-me").wait(WAIT)
    assert provider.begin_reboot(vm.id).wait(WAIT).state is InstanceState.RUNNING
    provider.begin_destroy(vm.id).wait(WAIT)


def test_reservations_capability(provider: Provider) -> None:
    supported = isinstance(provider, SupportsReservations)
    assert supported is CAPABILITIES[provider.name]["reservations"]
    if supported:
        reservations = provider.list_reservations()
        assert reservations and all(r.provider == provider.name and r.id for r in reservations)


def test_capacity_error_names_its_scope(provider: Provider) -> None:
    with pytest.raises(CapacityError) as err:
        create(provider, "no-room", region=NO_H100_CAPACITY[provider.name]).wait(WAIT)
    assert err.value.provider == provider.name
    assert err.value.region == NO_H100_CAPACITY[provider.name]
    # A failed create leaves nothing behind, even where the cloud keeps the husk (Nebius leaves it STOPPED).
    assert provider.find_instance("no-room") is None


def test_unknown_instance_is_not_found(provider: Provider) -> None:
    with pytest.raises(NotFound):
        provider.get_instance(UNKNOWN_IDS[provider.name])
    provider.begin_destroy(UNKNOWN_IDS[provider.name]).wait(WAIT)  # already gone = success


def test_wrong_credentials_are_an_auth_error(mock_clouds, connect, provider: Provider) -> None:
    secret_key = {"crusoe": "secret_key", "lambda": "api_key", "nebius": "token"}[provider.name]
    bad = connect(mock_clouds, provider.name, **{secret_key: "d3JvbmctY3JlZGVudGlhbA"})
    with pytest.raises(AuthError):
        list(bad.list_instances())


def test_offers_for_h100(provider: Provider) -> None:
    offers = provider.offers("H100")
    assert offers, "every cloud of the default scenario sells H100"
    assert all(o.provider == provider.name and o.gpu == "H100" and o.price_per_hour > 0 for o in offers)
    assert any(o.available for o in offers)
    one_gpu = provider.offers("H100", 8)
    assert one_gpu and all(o.gpu_count == 8 for o in one_gpu)
