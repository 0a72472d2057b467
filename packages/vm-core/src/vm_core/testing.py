"""The provider contract suite: the lifecycle tests every built-in cloud passes, for any provider plugin.

A plugin's tests subclass `ProviderContract`, state what their cloud can do in `ContractFacts`, and provide two
fixtures; pytest then collects every `test_*` method below against that provider (requires pytest):

    from vm_core.testing import ContractFacts, ProviderContract

    class TestMyCloud(ProviderContract):
        facts = ContractFacts(unknown_id="vm-000000", bad_credentials={"token": "wrong"}, ...)

        @pytest.fixture
        def provider(self) -> Provider: ...          # connected to a test cloud, empty or not

        @pytest.fixture
        def reconnect(self) -> Callable[..., Provider]: ...   # reconnect(**setting_overrides) -> Provider

Where clouds differ, the difference is a fact that is asserted (a provider that claims stop/start must do it, one
that does not must not be an instance of SupportsStopStart); nothing is skipped silently: a fact left None skips
its test with a reason saying so. Every wait has the deadline `facts.wait`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from .errors import AuthError, CapacityError, NotFound
from .model import CreateSpec, Instance, InstanceState, ReservationMode, ReservationRequest
from .provider import (
    Completes,
    Pending,
    Provider,
    SupportsGetMany,
    SupportsGetStates,
    SupportsReboot,
    SupportsReservations,
    SupportsStopStart,
)


@dataclass(frozen=True)
class ContractFacts:
    """What the provider under test can do, and inputs the suite cannot guess."""

    unknown_id: str  # a well-formed instance id that does not exist
    bad_credentials: Mapping[str, str] | None  # setting overrides the cloud refuses (None: no credentials)
    stop_start: bool = False
    reboot: bool = False
    reservations: bool = False
    gpu: str = "H100"
    gpu_count: int | None = None  # GPUs per VM to create (None: the cloud's smallest size of `gpu`)
    full_region: str | None = None  # a region that sells `gpu` but has no room (None: no such region)
    wait: float = 60.0
    create_options: Mapping[str, Any] = field(default_factory=dict)  # extra CreateSpec fields


class ProviderContract:
    """Lifecycle tests through the Provider protocol; see the module docstring for how to use it."""

    facts: ContractFacts

    def begin(self, provider: Provider, name: str, **options: Any) -> Pending[Instance]:
        spec = CreateSpec(name=name, gpu=self.facts.gpu, gpu_count=self.facts.gpu_count,
                          reservation=ReservationRequest(ReservationMode.NONE),
                          **{**self.facts.create_options, **options})
        return provider.begin_create(spec)

    def test_lifecycle(self, provider: Provider) -> None:
        pending = self.begin(provider, "contract-vm")
        assert pending.resource_id
        vm = pending.wait(self.facts.wait)
        assert (vm.provider, vm.id, vm.name, vm.state) == (provider.name, pending.resource_id, "contract-vm",
                                                           InstanceState.RUNNING)
        assert vm.gpu == self.facts.gpu and vm.region and vm.shape
        assert vm.gpu_count == self.facts.gpu_count if self.facts.gpu_count else vm.gpu_count >= 1
        assert vm.price_per_hour is not None and vm.price_per_hour > 0
        assert vm.reserved is False and vm.reservation_id == ""
        assert provider.get_instance(vm.id).id == vm.id
        assert vm.id in [i.id for i in provider.list_instances()]
        found = provider.find_instance("contract-vm")
        assert found is not None and found.id == vm.id
        assert provider.find_instance("no-such-vm") is None

        provider.begin_destroy(vm.id).wait(self.facts.wait)
        assert vm.id not in [i.id for i in provider.list_instances()]
        with contextlib.suppress(NotFound):  # the cloud may have forgotten it already: also correct
            assert provider.get_instance(vm.id).state is InstanceState.TERMINATED
        provider.begin_destroy(vm.id).wait(self.facts.wait)  # destroying again is success

    def test_a_fleet_can_follow_its_vms(self, provider: Provider) -> None:
        """A fleet follows every VM of a provider with one read a round: `get_states` (or `get_instances`) where
        the provider has it, which must answer as `get_instance` does, else one listing. A create's Pending that
        is Completes makes its result from the VM as that read shows it running."""
        pending = self.begin(provider, "followed")
        vm = pending.wait(self.facts.wait)
        ids = [vm.id, self.facts.unknown_id]
        if isinstance(provider, SupportsGetStates):
            states = provider.get_states(ids)
            assert states[vm.id] is InstanceState.RUNNING and states.get(self.facts.unknown_id) is None
        if isinstance(provider, SupportsGetMany):
            found = provider.get_instances(ids)
            read = found[vm.id]
            assert read is not None and read.state is InstanceState.RUNNING
            assert found.get(self.facts.unknown_id) is None
        listed = next(i for i in provider.list_instances() if i.id == vm.id)
        if isinstance(pending, Completes):
            completed = pending.completed(listed, self.facts.wait)
            assert completed is not None and (completed.id, completed.state) == (vm.id, InstanceState.RUNNING)
        provider.begin_destroy(vm.id).wait(self.facts.wait)

    def test_stop_and_start_as_claimed(self, provider: Provider) -> None:
        assert isinstance(provider, SupportsStopStart) is self.facts.stop_start
        if not isinstance(provider, SupportsStopStart):
            return
        vm = self.begin(provider, "stop-start").wait(self.facts.wait)
        assert provider.begin_stop(vm.id).wait(self.facts.wait).state is InstanceState.STOPPED
        assert provider.get_instance(vm.id).state is InstanceState.STOPPED
        assert provider.begin_start(vm.id).wait(self.facts.wait).state is InstanceState.RUNNING
        provider.begin_destroy(vm.id).wait(self.facts.wait)

    def test_reboot_as_claimed(self, provider: Provider) -> None:
        assert isinstance(provider, SupportsReboot) is self.facts.reboot
        if not isinstance(provider, SupportsReboot):
            return
        vm = self.begin(provider, "reboot-me").wait(self.facts.wait)
        assert provider.begin_reboot(vm.id).wait(self.facts.wait).state is InstanceState.RUNNING
        provider.begin_destroy(vm.id).wait(self.facts.wait)

    def test_reservations_as_claimed(self, provider: Provider) -> None:
        assert isinstance(provider, SupportsReservations) is self.facts.reservations
        if isinstance(provider, SupportsReservations):
            reservations = provider.list_reservations()
            assert all(r.provider == provider.name and r.id for r in reservations)

    def test_capacity_error_names_its_scope(self, provider: Provider) -> None:
        if self.facts.full_region is None:
            pytest.skip("facts.full_region is None: the cloud under test has no region without room")
        with pytest.raises(CapacityError) as err:
            self.begin(provider, "no-room", region=self.facts.full_region).wait(self.facts.wait)
        assert err.value.provider == provider.name
        assert err.value.region == self.facts.full_region
        # A failed create leaves nothing behind, even where the cloud keeps a husk of it.
        assert provider.find_instance("no-room") is None

    def test_unknown_instance_is_not_found(self, provider: Provider) -> None:
        with pytest.raises(NotFound):
            provider.get_instance(self.facts.unknown_id)
        provider.begin_destroy(self.facts.unknown_id).wait(self.facts.wait)  # already gone = success

    def test_wrong_credentials_are_an_auth_error(self, reconnect: Callable[..., Provider]) -> None:
        if self.facts.bad_credentials is None:
            pytest.skip("facts.bad_credentials is None: the cloud under test takes no credentials")
        with pytest.raises(AuthError):
            list(reconnect(**self.facts.bad_credentials).list_instances())

    def test_offers(self, provider: Provider) -> None:
        offers = provider.offers(self.facts.gpu)
        assert offers, f"the cloud under test sells {self.facts.gpu}"
        assert all(o.provider == provider.name and o.gpu == self.facts.gpu and o.price_per_hour > 0
                   for o in offers)
        assert any(o.available for o in offers)
        size = offers[0].gpu_count
        sized = provider.offers(self.facts.gpu, size)
        assert sized and all(o.gpu_count == size for o in sized)
