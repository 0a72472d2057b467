"""Fleet destroy at scale, through the wire: batched Lambda terminates, one read per provider per poll round to
confirm deletions (no per-VM polling), reserved members in a batch, and faults during the confirmation reads.

HTTP calls are counted at `requests.Session.request` (every Lambda SDK call, retries included), as bench/fleet.py
counts them. Ground truth is the mock clouds' own inventory.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from mock_clouds.core.models import Capacity, Faults, Provider, WorldState
from vm_core.errors import Transient, VmError
from vm_core.fleet.create import FleetCreator, FleetSpec
from vm_core.fleet.destroy import FleetDestroyer
from vm_core.fleet.follower import Follower
from vm_core.fleet.naming import FleetIdentity
from vm_core.fleet.report import Verb
from vm_core.fleet.store import FleetState, MemberState, SqliteFleetStore
from vm_core.fleet.strategies import spread
from vm_core.model import CreateSpec, Instance, InstanceState, ReservationMode, ReservationRequest
from vm_core.provider import SupportsGetMany
from vm_core.providers.lambda_cloud import BATCH_DESTROY_LIMIT

BUILT_IN = ("crusoe", "lambda", "nebius")
LAMBDA_RESERVATION = "9b2e4c6a8d0f41e3a5c7e9b1d3f5a7c9"
_ID = re.compile(r"/instances/[0-9a-f]{32}$")


def roomy(state: WorldState) -> None:
    """Room for 200 one-GPU H100 VMs on Lambda (us-south-2) and Nebius; rate limits as in the default scenario."""
    state.providers["lambda"].capacity.append(Capacity(region="us-south-2", shape="gpu_1x_h100_sxm5", quantity=200))
    state.providers["nebius"].capacity.append(Capacity(region="eu-north1", shape="gpu-h100-sxm/1gpu-16vcpu-200gb",
                                                       quantity=200))


class RestCalls:
    """Every HTTP request sent to one REST mock (Lambda, Crusoe) while installed: (method, path kind, status)."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.calls: list[tuple[str, str, int]] = []
        self._lock = threading.Lock()

    @staticmethod
    def kind(method: str, path: str) -> str:
        return f"{method} /instances/{{id}}" if _ID.search(path) else f"{method} {path.split('?')[0]}"

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        send = requests.Session.request

        def counted(session: requests.Session, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            response = send(session, method, url, *args, **kwargs)
            if url.startswith(self.base_url):
                with self._lock:
                    self.calls.append((method, self.kind(method, url[len(self.base_url):]), response.status_code))
            return response

        monkeypatch.setattr(requests.Session, "request", counted)

    def kinds(self) -> Counter[str]:
        """Calls per kind, without those refused with 429 (rate limited: the SDK sends them again)."""
        return Counter(kind for _, kind, status in self.calls if status != 429)


def live_names(clouds: Any, prefix: str) -> list[tuple[str, str]]:
    with clouds.world.tx() as world:
        return sorted((p.value, vm.name) for p in Provider for vm in world.vms(p) if vm.name.startswith(prefix))


@pytest.fixture
def env(tmp_path: Path, connect):
    def make(clouds: Any):
        return SqliteFleetStore(tmp_path / f"vm-{id(clouds)}.db"), {n: connect(clouds, n) for n in BUILT_IN}

    return make


@pytest.mark.parametrize(("count", "batch"), [(3, BATCH_DESTROY_LIMIT), (11, 10)])
def test_lambda_fleet_destroy_batches_terminates_and_confirms_with_listings(
        mock_clouds_factory, env, connect, monkeypatch, count: int, batch: int) -> None:
    clouds = mock_clouds_factory(configure=roomy)
    store, providers = env(clouds)
    providers["lambda"] = connect(clouds, "lambda", terminate_batch=batch)
    spec = FleetSpec(name="many", gpu="H100", count=count, min_count=count, providers=("lambda",))
    assert len(FleetCreator(store, providers, spread, timeout=120).create(spec).running) == count
    calls = RestCalls(clouds.endpoints["lambda"]["url"])
    calls.install(monkeypatch)

    started = time.monotonic()
    report = FleetDestroyer(store, providers, timeout=120).destroy("many")
    elapsed = time.monotonic() - started

    assert report.destroyed == count and report.failures == [] and report.forgotten
    assert live_names(clouds, "many") == []
    kinds = calls.kinds()
    assert kinds["POST /instance-operations/terminate"] == math.ceil(count / batch)
    assert kinds["GET /instances/{id}"] == 0, kinds  # no per-VM polling
    # the scan's listing, then one listing per poll round for every VM together, rounds a poll interval apart
    assert 2 <= kinds["GET /instances"] <= 2 + elapsed / providers["lambda"].poll_interval, kinds
    assert set(kinds) <= {"POST /instance-operations/terminate", "GET /instances", "GET /reservations"}, kinds


def test_crusoe_deletes_are_confirmed_by_listings_not_by_polling_each_operation(mock_clouds, env, monkeypatch) -> None:
    """Crusoe deletes one VM per call; the calls return at once and one listing per round confirms them all."""
    store, providers = env(mock_clouds)
    FleetCreator(store, providers, spread, timeout=120).create(
        FleetSpec(name="crew", gpu="H100", gpu_count=8, count=3, min_count=3, providers=("crusoe",)))
    calls = RestCalls(mock_clouds.endpoints["crusoe"]["url"])
    calls.install(monkeypatch)

    report = FleetDestroyer(store, providers, timeout=120).destroy("crew")

    assert report.destroyed == 3 and report.failures == [] and live_names(mock_clouds, "crew") == []
    kinds = calls.kinds()
    project = providers["crusoe"].account().removeprefix("project ")
    assert sum(n for kind, n in kinds.items() if kind.startswith("DELETE ")) == 3, kinds
    assert kinds[f"GET /projects/{project}/compute/vms/instances"] >= 2, kinds  # the scan, then one per round
    assert not [kind for kind in kinds if "/operations" in kind], kinds  # no per-VM operation polling


def test_a_batch_holding_a_reserved_lambda_member_releases_it_and_destroys_the_others(
        mock_clouds, env, monkeypatch) -> None:
    store, providers = env(mock_clouds)
    FleetCreator(store, providers, spread, timeout=120).create(
        FleetSpec(name="mix", gpu="H100", count=3, min_count=3, providers=("lambda",)))
    identity = FleetIdentity("mix", store.get_fleet("mix").fleet_id)
    reserved_spec = CreateSpec(name=identity.member_name(3, 1), gpu="H100", labels=identity.labels(),
                               reservation=ReservationRequest(ReservationMode.ID, LAMBDA_RESERVATION, strict=True))
    reserved = providers["lambda"].begin_create(reserved_spec).wait(60)  # a member the store never learnt
    calls = RestCalls(mock_clouds.endpoints["lambda"]["url"])
    calls.install(monkeypatch)

    report = FleetDestroyer(store, providers, timeout=120).destroy("mix")

    verbs = Counter(a.verb for a in report.actions if a.verb is not Verb.ADOPTED)
    assert verbs == {Verb.DESTROYED: 3, Verb.RELEASED: 1}, report.actions
    assert [a.instance_id for a in report.released] == [reserved.id]
    assert report.failures == [] and not report.forgotten
    assert live_names(mock_clouds, "mix") == [("lambda", reserved.name)]  # still running, and said so
    states = Counter(m.state for m in store.members("mix"))
    assert states == {MemberState.DESTROYED: 3, MemberState.RELEASED: 1}
    assert store.get_fleet("mix").state is FleetState.DESTROYING
    kinds = calls.kinds()
    # Lambda refuses the whole batch for the reserved id; the others go again without it
    assert kinds["POST /instance-operations/terminate"] == 2 and kinds["GET /instances/{id}"] == 0, kinds
    refused = [c for c in calls.calls if c[1] == "POST /instance-operations/terminate" and c[2] == 403]
    assert len(refused) == 1


def test_a_member_deleted_by_hand_is_missing_without_a_call(mock_clouds, env, monkeypatch) -> None:
    store, providers = env(mock_clouds)
    FleetCreator(store, providers, spread, timeout=120).create(
        FleetSpec(name="hand", gpu="H100", count=2, min_count=2, providers=("lambda",)))
    first, second = store.members("hand")
    providers["lambda"].begin_destroy(first.instance_id).wait(60)  # someone deleted it in the console
    calls = RestCalls(mock_clouds.endpoints["lambda"]["url"])
    calls.install(monkeypatch)

    report = FleetDestroyer(store, providers, timeout=120).destroy("hand")

    assert {a.instance_id: a.verb for a in report.actions} == {first.instance_id: Verb.MISSING,
                                                                second.instance_id: Verb.DESTROYED}
    assert report.failures == [] and report.forgotten
    # one call, for the second only: Lambda would refuse a batch naming a terminated id
    assert calls.kinds()["POST /instance-operations/terminate"] == 1


def test_faults_everywhere_during_a_destroy_lose_nothing(mock_clouds_factory, env) -> None:
    clouds = mock_clouds_factory(configure=roomy)
    store, providers = env(clouds)
    FleetCreator(store, providers, spread, timeout=120).create(
        FleetSpec(name="rough", gpu="H100", count=9, min_count=9))
    members = {m.instance_id for m in store.members("rough") if m.instance_id}
    for seed, provider in enumerate(Provider):
        clouds.world.configure_faults(provider, Faults(error_rate=0.6, drop_rate=0.2, seed=seed + 5))

    report = FleetDestroyer(store, providers, timeout=60).destroy("rough")

    by_id = Counter(a.instance_id for a in report.actions)
    assert set(by_id) == members and set(by_id.values()) == {1}, "one action per member"
    gone = {a.instance_id for a in report.actions if a.verb is Verb.DESTROYED}
    with clouds.world.tx() as world:
        in_cloud = {vm.id for p in Provider for vm in world.vms(p) if vm.name.startswith("rough")}
    assert not gone & in_cloud, "a member reported destroyed still exists"
    if report.forgotten:  # every member confirmed gone
        assert gone == members and report.failures == []
    else:
        recorded = {m.instance_id: m.state for m in store.members("rough")}
        assert all(recorded[i] is MemberState.DESTROYED for i in gone)
        assert all(recorded[i] is not MemberState.DESTROYED for i in members - gone), "a failure kept its member"
    for provider in Provider:
        clouds.world.configure_faults(provider, Faults())
    if not report.forgotten:
        again = FleetDestroyer(store, providers, timeout=60).destroy("rough")
        assert again.failures == [] and again.forgotten
    assert live_names(clouds, "rough") == []


class LosesReads:
    """A connected provider whose confirmation reads (the listing after the destroy's first one, and batch reads)
    fail with Transient `times` times: a watcher that loses its reads for a while. Everything else is the wire."""

    def __init__(self, provider: Any, times: int) -> None:
        self._provider, self._left, self._listings = provider, times, 0
        self.lost = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._provider, name)

    def _lose(self) -> None:
        if self._left > 0:
            self._left -= 1
            self.lost += 1
            raise Transient(f"{self._provider.name}: the read was lost", provider=self._provider.name)

    def list_instances(self) -> Iterator[Instance]:
        self._listings += 1
        if self._listings > 1:
            self._lose()
        return self._provider.list_instances()


class LosesBatchReads(LosesReads):
    def get_instances(self, instance_ids: Any) -> dict[str, Instance | None]:
        self._lose()
        return self._provider.get_instances(instance_ids)

    def get_states(self, instance_ids: Any) -> dict[str, InstanceState | None]:
        self._lose()
        return self._provider.get_states(instance_ids)


def loses_reads(provider: Any, times: int) -> LosesReads:
    return (LosesBatchReads if isinstance(provider, SupportsGetMany) else LosesReads)(provider, times)


def test_a_watcher_that_loses_its_reads_for_a_while_neither_loses_nor_double_counts(mock_clouds, env) -> None:
    store, providers = env(mock_clouds)
    FleetCreator(store, providers, spread, timeout=120).create(FleetSpec(name="lossy", gpu="H100", count=6,
                                                                         min_count=6))
    members = {m.instance_id for m in store.members("lossy")}
    placed = {m.provider for m in store.members("lossy")}
    flaky = {name: loses_reads(p, times=3) for name, p in providers.items()}

    report = FleetDestroyer(store, flaky, timeout=120).destroy("lossy")

    assert placed and all(flaky[name].lost == 3 for name in placed)
    assert Counter(a.instance_id for a in report.actions) == dict.fromkeys(members, 1)
    assert report.destroyed == 6 and report.failures == [] and report.forgotten
    assert live_names(mock_clouds, "lossy") == []


class CountsReads:
    """A connected provider that counts its batch reads by kind: whole instances, or states only."""

    def __init__(self, provider: Any) -> None:
        self._provider, self.reads = provider, Counter[str]()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._provider, name)

    def get_instances(self, instance_ids: Any) -> dict[str, Instance | None]:
        self.reads["instances"] += 1
        return self._provider.get_instances(instance_ids)

    def get_states(self, instance_ids: Any) -> dict[str, InstanceState | None]:
        self.reads["states"] += 1
        return self._provider.get_states(instance_ids)


def test_nebius_deletions_are_confirmed_by_reading_states_only(mock_clouds_factory, env) -> None:
    """Waiting for deletions needs each VM's state alone: Nebius's are read without decoding whole instances
    (BatchGet of statuses), and every member is recorded destroyed once."""
    clouds = mock_clouds_factory(configure=roomy)
    store, providers = env(clouds)
    spec = FleetSpec(name="quiet", gpu="H100", count=5, min_count=5, providers=("nebius",))
    assert len(FleetCreator(store, providers, spread, timeout=120).create(spec).running) == 5
    counted = CountsReads(providers["nebius"])

    report = FleetDestroyer(store, {**providers, "nebius": counted}, timeout=120).destroy("quiet")

    assert report.destroyed == 5 and report.failures == [] and report.forgotten
    assert counted.reads["states"] >= 1 and counted.reads["instances"] == 0, counted.reads
    assert Counter(a.instance_id for a in report.actions).most_common(1)[0][1] == 1
    assert live_names(clouds, "quiet") == []


# ------------------------------------------------------------------------------- the follower of a deletion
class _Listing:
    """A provider whose listing fails `failures` times, then shows `present` (and never anything else)."""

    name = "fake"
    poll_interval = 5.0

    def __init__(self, present: dict[str, InstanceState], failures: int) -> None:
        self.present, self.failures, self.listings = present, failures, 0

    def list_instances(self) -> Iterator[Instance]:
        self.listings += 1
        if self.listings <= self.failures:
            raise Transient("listing failed", provider="fake")
        for instance_id, state in self.present.items():
            yield Instance("fake", instance_id, instance_id, state, "H100", 1, "r", "s")


class _Clock:
    """Time that passes only when slept (by the follower's thread), and only once `started` is set (every id is
    registered by then, so the first round reads them all)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.started = threading.Event()

    def sleep(self, seconds: float) -> None:
        assert self.started.wait(60.0)
        self.now += seconds


class _Gone:
    """Settles when a read shows the VM gone; gives up on a read error that is not Transient (as a deletion's)."""

    wants_instance = False

    def shown(self, state: InstanceState | None, instance: Instance | None) -> bool:
        return state is None

    def read_failed(self, error: Exception) -> bool:
        return isinstance(error, VmError) and not isinstance(error, Transient)


def _follow_all(provider: Any, ids: list[str], timeout: float, idle_backoff: float = 4.0,
                ) -> tuple[list[tuple[str, bool, float]], Follower, _Clock]:
    clock, settled, done = _Clock(), [], threading.Event()
    follower = Follower(provider, sleep=clock.sleep, clock=lambda: clock.now, idle_backoff=idle_backoff)

    def on_settled(instance_id: str) -> Any:
        def settle(by_read: bool) -> None:
            settled.append((instance_id, by_read, clock.now))
            if len(settled) == len(ids):
                done.set()
        return settle

    for instance_id in ids:
        follower.follow(instance_id, _Gone(), timeout, on_settled(instance_id))
    clock.started.set()
    assert done.wait(60.0)
    return settled, follower, clock


def test_the_follower_settles_nothing_from_a_failed_read_and_each_id_once() -> None:
    provider = _Listing({"b": InstanceState.TERMINATING}, failures=2)
    settled, follower, _ = _follow_all(provider, ["a", "b", "c"], timeout=60)
    by_read = [(i, read) for i, read, _ in settled]
    assert by_read == [("a", True), ("c", True), ("b", False)]  # a and c on the third read, b at its deadline
    assert settled[0][2] > 5.0 * 2, "the two failed rounds settled nothing"
    assert settled[2][2] >= 60.0 and provider.listings == follower.reads


def test_a_follower_without_idle_backoff_reads_every_poll_interval_while_nothing_settles() -> None:
    """A deletion's follower (idle_backoff 1): the last VM gone is seen within one poll interval."""
    steady, follower, _ = _follow_all(_Listing({"b": InstanceState.TERMINATING}, 0), ["b"], 50, idle_backoff=1.0)
    assert steady == [("b", False, 50.0)] and follower.reads == 10  # at 5, 10, ..., 50 s
    _, backing_off, _ = _follow_all(_Listing({"b": InstanceState.TERMINATING}, 0), ["b"], 50)
    assert backing_off.reads < 10


def test_a_read_error_that_is_not_transient_settles_the_ids_whose_follow_gives_up_on_it() -> None:
    class Broken(_Listing):
        def list_instances(self) -> Iterator[Instance]:
            self.listings += 1
            raise VmError("bad key", provider="fake")

    provider = Broken({}, 0)
    settled, follower, _ = _follow_all(provider, ["a", "b"], timeout=600)
    assert sorted(settled) == [("a", True, 5.0), ("b", True, 5.0)]  # on the first read, long before the deadline
    assert provider.listings == follower.reads == 1


class FailsConfirmations(LosesBatchReads):
    """A connected provider whose confirmation reads fail with an error that is not Transient (a revoked key)."""

    def _lose(self) -> None:
        self.lost += 1
        raise VmError("the API key was revoked", provider=self._provider.name)


def test_a_deletion_whose_confirmation_fails_for_good_reports_each_member_failed_and_a_rerun_finishes(
        mock_clouds_factory, env) -> None:
    clouds = mock_clouds_factory(configure=roomy)
    store, providers = env(clouds)
    spec = FleetSpec(name="revoked", gpu="H100", count=3, min_count=3, providers=("nebius",))
    assert len(FleetCreator(store, providers, spread, timeout=120).create(spec).running) == 3
    members = {m.instance_id for m in store.members("revoked")}
    failing = FailsConfirmations(providers["nebius"], times=0)

    report = FleetDestroyer(store, {**providers, "nebius": failing}, timeout=600).destroy("revoked")

    failed = [a for a in report.actions if a.verb is Verb.FAILED]
    assert failing.lost >= 1 and not report.forgotten and len(report.failures) == 3
    assert {a.instance_id for a in failed} == members
    assert all(a.detail == "its deletion could not be confirmed: the API key was revoked" for a in failed)
    assert all(m.state is MemberState.DESTROYING for m in store.members("revoked")), "each VM may still exist"
    again = FleetDestroyer(store, providers, timeout=120).destroy("revoked")
    assert again.failures == [] and again.forgotten
    assert live_names(clouds, "revoked") == []
