"""The per-provider id follower (vm_core.fleet.follower): what one round reads, and how a create's follow reads
each state. Toy providers count their calls; nothing here is timed."""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterator
from typing import Any

from vm_core.errors import Transient
from vm_core.fleet.follower import OPERATION_EVERY, CreateFollow, Follower, read_round
from vm_core.kit import Finished
from vm_core.model import Instance, InstanceState


def toy_instance(instance_id: str, state: InstanceState) -> Instance:
    return Instance(provider="toy", id=instance_id, name=instance_id, state=state, gpu="H100", gpu_count=1,
                    region="r1", shape="h100.1x", public_ip="192.0.2.1")


class Listed:
    """A provider with no batch read: followed through one listing a round."""

    name = "toy"
    poll_interval = 0.001

    def __init__(self, states: dict[str, InstanceState]) -> None:
        self.states = states
        self.listings = 0

    def list_instances(self) -> Iterator[Instance]:
        self.listings += 1
        return iter([toy_instance(i, s) for i, s in self.states.items()])


class Batched(Listed):
    """A provider with `get_states` and `get_instances` (as Nebius): states for all, whole VMs for those running."""

    def __init__(self, states: dict[str, InstanceState]) -> None:
        super().__init__(states)
        self.calls: list[tuple[str, list[str]]] = []

    def get_states(self, instance_ids: Collection[str]) -> dict[str, InstanceState | None]:
        self.calls.append(("states", sorted(instance_ids)))
        return {i: self.states.get(i) for i in instance_ids if i != "unread"}  # "unread": a per-id failure

    def get_instances(self, instance_ids: Collection[str]) -> dict[str, Instance | None]:
        self.calls.append(("instances", sorted(instance_ids)))
        return {i: toy_instance(i, self.states[i]) if i in self.states else None for i in instance_ids}


class _Item:
    def __init__(self, instance_id: str, wants: bool = True) -> None:
        self.instance_id = instance_id
        self.follow: Any = CreateFollow(None, wants_instance=wants)


def test_a_round_reads_the_states_once_then_the_running_vms_whole_once() -> None:
    provider = Batched({"up": InstanceState.RUNNING, "boot": InstanceState.CREATING, "also": InstanceState.RUNNING})
    items = [_Item("up"), _Item("boot"), _Item("gone"), _Item("unread"), _Item("also", wants=False)]
    states, instances = read_round(provider, items)  # type: ignore[arg-type]
    assert provider.calls == [("states", ["also", "boot", "gone", "unread", "up"]), ("instances", ["up"])]
    assert states == {"up": InstanceState.RUNNING, "boot": InstanceState.CREATING, "gone": None,
                      "also": InstanceState.RUNNING}  # an id the read could not read is unknown, not gone
    assert list(instances) == ["up"] and provider.listings == 0


class Many(Listed):
    """A provider with `get_instances` alone (as Crusoe's filtered listing): one call gives states and VMs."""

    def __init__(self, states: dict[str, InstanceState]) -> None:
        super().__init__(states)
        self.calls: list[list[str]] = []

    def get_instances(self, instance_ids: Collection[str]) -> dict[str, Instance | None]:
        self.calls.append(sorted(instance_ids))
        return {i: toy_instance(i, self.states[i]) if i in self.states else None for i in instance_ids}


def test_a_round_over_get_instances_alone_is_one_call() -> None:
    provider = Many({"up": InstanceState.RUNNING, "boot": InstanceState.CREATING})
    states, instances = read_round(provider, [_Item("up"), _Item("boot"), _Item("gone")])  # type: ignore[arg-type]
    assert provider.calls == [["boot", "gone", "up"]] and provider.listings == 0
    assert states == {"up": InstanceState.RUNNING, "boot": InstanceState.CREATING, "gone": None}
    assert instances["up"].state is InstanceState.RUNNING


def test_a_round_without_batch_reads_is_one_listing_giving_states_and_vms() -> None:
    provider = Listed({"up": InstanceState.RUNNING, "other": InstanceState.RUNNING})
    states, instances = read_round(provider, [_Item("up"), _Item("gone")])  # type: ignore[arg-type]
    assert provider.listings == 1
    assert states == {"up": InstanceState.RUNNING, "gone": None} and list(instances) == ["up"]


class Asked(Finished[Instance]):
    """A create's Pending that counts its `done()` calls and says it is not finished until told."""

    def __init__(self, instance_id: str) -> None:
        super().__init__(instance_id, toy_instance(instance_id, InstanceState.RUNNING))
        self.asked = 0
        self.finished = False
        self.fails_with: Exception | None = None

    def done(self) -> bool:
        self.asked += 1
        if self.fails_with is not None:
            raise self.fails_with
        return self.finished


def test_a_create_settles_running_or_ended_and_asks_its_pending_about_a_vm_not_shown() -> None:
    running = CreateFollow(Asked("a"))
    assert not running.shown(InstanceState.CREATING, None)
    assert not running.shown(InstanceState.RUNNING, None)  # running but not read whole: the next round
    assert running.shown(InstanceState.RUNNING, toy_instance("a", InstanceState.RUNNING)) and running.instance
    ended = CreateFollow(Asked("b"))
    assert ended.shown(InstanceState.STOPPED, None) and ended.ended is InstanceState.STOPPED

    vanished = Asked("c")
    follow = CreateFollow(vanished)
    assert not follow.shown(InstanceState.CREATING, None)
    assert not follow.shown(None, None) and vanished.asked == 1  # shown before, gone now: asked at once
    for _ in range(OPERATION_EVERY - 1):
        assert not follow.shown(None, None)
    assert vanished.asked == 2  # never shown since: asked every OPERATION_EVERY rounds
    vanished.fails_with = Transient("blip")
    for _ in range(OPERATION_EVERY):
        assert not follow.shown(None, None)  # a Transient answer settles nothing
    vanished.fails_with, vanished.finished = None, True
    for _ in range(OPERATION_EVERY - 1):
        follow.shown(None, None)
    assert follow.shown(None, None) and follow.instance is None  # its `wait` says how it ended


def test_an_adopted_vm_without_a_pending_settles_when_it_runs_ends_or_goes() -> None:
    gone = CreateFollow(None)
    assert not gone.shown(InstanceState.CREATING, None)
    assert gone.shown(None, None) and gone.seen_gone and gone.instance is None


def test_one_follower_reads_once_a_round_for_every_id_and_settles_each_once() -> None:
    provider = Batched({"a": InstanceState.CREATING, "b": InstanceState.CREATING})
    follower = Follower(provider)  # type: ignore[arg-type]
    settled: dict[str, list[bool]] = {"a": [], "b": []}
    both = threading.Event()
    follows = {i: CreateFollow(None) for i in settled}

    def on_settled(instance_id: str) -> Any:
        def settle(by_read: bool) -> None:
            settled[instance_id].append(by_read)
            if all(settled.values()):
                both.set()
        return settle

    for instance_id, follow in follows.items():
        follower.follow(instance_id, follow, 120.0, on_settled(instance_id))
    provider.states = {"a": InstanceState.RUNNING, "b": InstanceState.ERROR}
    assert both.wait(120.0)
    assert settled == {"a": [True], "b": [True]}
    assert follows["a"].instance is not None and follows["b"].ended is InstanceState.ERROR
    assert all(len(ids) == 2 for kind, ids in provider.calls if kind == "states")  # one read for both ids


def test_an_id_whose_deadline_passes_settles_without_a_read() -> None:
    provider = Batched({"slow": InstanceState.CREATING})
    follower = Follower(provider)  # type: ignore[arg-type]
    settled: list[bool] = []
    done = threading.Event()
    follower.follow("slow", CreateFollow(None), 0.0, lambda by_read: (settled.append(by_read), done.set()))
    assert done.wait(120.0) and settled == [False]
