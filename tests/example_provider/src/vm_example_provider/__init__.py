"""An example vm provider plugin whose cloud is a JSON file: Provider + SupportsStopStart.

Every action records the state it is in, the state it goes to and when; reading the file applies what is due. So
an action started by one `vm` process can be followed by another, as with a real cloud.

Everything vm knows of this cloud comes from `plugin` (ExamplePlugin): its settings, the GPU type it sells that
vm's catalog does not have (GPUS: RTX4090), its shapes in that catalog (SHAPES, which its offers sell), the pattern
of its instance ids and how many creates a fleet sends it at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Generic, TypeVar

from vm_core.catalog import GpuType, ShapeEntry
from vm_core.errors import AuthError, CapacityError, ConfigError, NotFound, Scope, Timeout, UsageError, VmError
from vm_core.model import CreateSpec, Instance, InstanceState, Offer
from vm_core.provider import Setting

T = TypeVar("T")
NAME = "example"
REGION = "local"
# The GPU type the example cloud sells that vm's catalog does not have: `vm create --gpu RTX4090` (or rtx-4090).
GPUS = (GpuType("RTX4090", aliases=("RTX-4090", "RTX4090-24GB"), memory_gb=24, vendor="NVIDIA"),)
# What the example cloud sells, one GPU per VM: its rows of vm's GPU catalog (GPU names are the catalog's or GPUS').
SHAPES = (
    ShapeEntry(NAME, "H100", "ex-h100.1x", 1, price_per_hour=1.25),
    ShapeEntry(NAME, "A10", "ex-a10.1x", 1, price_per_hour=0.45),
    ShapeEntry(NAME, "RTX4090", "ex-rtx4090.1x", 1, price_per_hour=0.35),
)


class Cloud:
    """The JSON file: {"token": str|null, "vms": {id: record}}. Each access holds an exclusive file lock."""

    def __init__(self, path: Path, token: str | None, seconds: float) -> None:
        self.path, self.token, self.seconds = path, token, seconds

    @contextlib.contextmanager
    def open(self) -> Iterator[dict[str, Any]]:
        """The document, with due transitions applied; written back when the block ends without error."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            doc = json.loads(self.path.read_text()) if self.path.exists() else {"token": None, "vms": {}}
            self._authenticate(doc)
            _settle(doc["vms"])
            yield doc
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(doc, indent=1))
            os.replace(tmp, self.path)

    def _authenticate(self, doc: dict[str, Any]) -> None:
        if doc["token"] is None:
            doc["token"] = self.token
        elif doc["token"] != self.token:
            raise AuthError("the example cloud refused the token", provider=NAME)

    def transition(self, vm_id: str, now: str, then: str) -> None:
        """Start moving a VM to `then` (KeyError when there is no such VM)."""
        with self.open() as doc:
            doc["vms"][vm_id].update(state=now, next=then, due=time.time() + self.seconds)


def _settle(vms: dict[str, dict[str, Any]]) -> None:
    for vm in vms.values():
        if vm["next"] and time.time() >= vm["due"]:
            vm["state"], vm["next"] = vm["next"], None


class Action(Generic[T]):
    """A pending action of the example cloud: done when its VM is no longer in transition."""

    def __init__(self, cloud: Cloud, vm_id: str, result: Callable[[], T]) -> None:
        self.id, self.resource_id = f"op-{secrets.token_hex(4)}", vm_id
        self._cloud, self._result = cloud, result

    def done(self) -> bool:
        with self._cloud.open() as doc:
            vm = doc["vms"].get(self.resource_id)
            return vm is None or vm["next"] is None

    def wait(self, timeout: float) -> T:
        deadline = time.monotonic() + timeout
        while not self.done():
            if time.monotonic() > deadline:
                raise Timeout(f"example: {self.id} not done after {timeout:g} s", provider=NAME)
            time.sleep(0.02)
        return self._result()


class ExampleProvider:
    name = NAME

    def __init__(self, cloud: Cloud, capacity: int) -> None:
        self._cloud, self._capacity = cloud, capacity

    def list_instances(self) -> Iterator[Instance]:
        with self._cloud.open() as doc:
            vms = [v for v in doc["vms"].values() if v["state"] != "terminated"]
        return iter([_instance(v) for v in vms])

    def get_instance(self, instance_id: str) -> Instance:
        with self._cloud.open() as doc:
            vm = doc["vms"].get(instance_id)
        if vm is None:
            raise NotFound(f"example: no instance {instance_id}", provider=NAME)
        return _instance(vm)

    def find_instance(self, name: str) -> Instance | None:
        return next((i for i in self.list_instances() if i.name == name), None)

    def begin_create(self, spec: CreateSpec) -> Action[Instance]:
        shape = next((s for s in SHAPES if s.gpu == spec.gpu and spec.gpu_count in (None, s.gpu_count)), None)
        if shape is None:
            sold = ", ".join(f"{s.gpu}:{s.gpu_count}" for s in SHAPES)
            raise UsageError(f"example sells only {sold}", provider=NAME)
        if spec.region not in (None, REGION):
            raise UsageError(f"unknown example region {spec.region!r}; regions: {REGION}", provider=NAME)
        vm_id = f"ex-{secrets.token_hex(4)}"
        with self._cloud.open() as doc:
            if sum(v["state"] != "terminated" for v in doc["vms"].values()) >= self._capacity:
                raise CapacityError(f"example: no room for {spec.name}", scope=Scope.PROVIDER, region=REGION,
                                    provider=NAME)
            doc["vms"][vm_id] = {"id": vm_id, "name": spec.name, "state": "creating", "next": "running",
                                 "due": time.time() + self._cloud.seconds, "created": datetime.now(UTC).isoformat(),
                                 "shape": shape.shape, "labels": dict(spec.labels)}
        return Action(self._cloud, vm_id, lambda: self.get_instance(vm_id))

    def begin_destroy(self, instance_id: str) -> Action[None]:
        """Already gone (or never there) is an action that is done at once."""
        with contextlib.suppress(NotFound):
            if self.get_instance(instance_id).state is not InstanceState.TERMINATED:
                self._cloud.transition(instance_id, "terminating", "terminated")
        return Action(self._cloud, instance_id, lambda: None)

    def begin_stop(self, instance_id: str) -> Action[Instance]:
        return self._change(instance_id, "running", "stopping", "stopped")

    def begin_start(self, instance_id: str) -> Action[Instance]:
        return self._change(instance_id, "stopped", "starting", "running")

    def offers(self, gpu: str, gpu_count: int | None = None) -> list[Offer]:
        """One offer per shape of SHAPES (the room left is shared by every shape)."""
        room = self._capacity - sum(1 for _ in self.list_instances())
        return [Offer(NAME, REGION, s.gpu, s.gpu_count, s.shape, s.price_per_hour or 0.0, max(room, 0),
                      available=room > 0)
                for s in SHAPES if s.gpu == gpu and gpu_count in (None, s.gpu_count)]

    def _change(self, instance_id: str, before: str, now: str, then: str) -> Action[Instance]:
        state = self.get_instance(instance_id).state.value
        if state != before:
            raise VmError(f"example: {instance_id} is {state}, not {before}", provider=NAME)
        self._cloud.transition(instance_id, now, then)
        return Action(self._cloud, instance_id, lambda: self.get_instance(instance_id))


def _instance(vm: dict[str, Any]) -> Instance:
    shape = next((s for s in SHAPES if s.shape == vm.get("shape")), SHAPES[0])  # files from before SHAPES had one
    return Instance(provider=NAME, id=vm["id"], name=vm["name"], state=InstanceState(vm["state"]), gpu=shape.gpu,
                    gpu_count=shape.gpu_count, region=REGION, shape=shape.shape, price_per_hour=shape.price_per_hour,
                    created_at=datetime.fromisoformat(vm["created"]), labels=vm.get("labels", {}), native=vm)


class ExamplePlugin:
    """The `vm_core.providers` entry point `example`."""

    name = NAME
    title = "Example Cloud"
    settings = (
        Setting("path", env="VM_EXAMPLE_PATH", help="the JSON file that is the cloud"),
        Setting("token", env="VM_EXAMPLE_TOKEN", secret=True, required=False, help="credential (optional)"),
        Setting("seconds", required=False, help="how long each action takes (default 0.2)"),
        Setting("capacity", required=False, help="how many VMs may live at once (default 8)"),
    )
    instance_id_pattern = r"ex-[0-9a-f]{8}"  # `vm get/stop/destroy ID` refuse other ids before any call
    instance_id_example = "ex-0123abcd"
    gpus = GPUS  # GPU types vm's catalog gains from this plugin (vm checks them when it loads the plugin)
    shapes = SHAPES  # its rows of vm's GPU catalog: `vm create --gpu H100:2 -p example` is refused up front
    create_concurrency = 2  # creates a fleet sends it at once (vm's default: 4)
    provider_class = ExampleProvider  # capabilities `vm providers` shows without connecting

    def connect(self, settings: Mapping[str, Any]) -> ExampleProvider:
        if not settings.get("path"):
            raise ConfigError("example: the setting `path` is required", provider=NAME)
        try:
            seconds, capacity = float(settings.get("seconds", 0.2)), int(settings.get("capacity", 8))
        except (TypeError, ValueError):
            raise ConfigError("example: seconds must be a number and capacity an integer", provider=NAME) from None
        cloud = Cloud(Path(settings["path"]).expanduser(), settings.get("token"), seconds)
        return ExampleProvider(cloud, capacity)


plugin = ExamplePlugin()
