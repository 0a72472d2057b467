"""The capacity VMs hold, counted as they take and release it.

Speed only: the capacity checks of every create (on-demand room, a reservation's free GPUs, a project's GPU quota)
read these counts instead of scanning every VM of the world, which made a burst of N creates cost O(N^2).
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple


class Held(NamedTuple):
    """What one VM holds: its on-demand slot (reservation_id "") or its reservation's GPUs, and GPUs of a family
    counted against its scope's quota."""

    provider: str
    scope: str
    region: str
    shape: str
    reservation_id: str
    family: str
    gpus: int


class Holdings:
    """Counts of what the VMs holding capacity hold. `take` and `release` are called by the world exactly when a
    VM starts and stops holding capacity; a VM takes at most one holding at a time."""

    def __init__(self) -> None:
        self._by_vm: dict[str, Held] = {}
        self._on_demand: Counter[tuple[str, str, str]] = Counter()  # (provider, region, shape) -> VMs
        self._reserved: Counter[tuple[str, str]] = Counter()  # (provider, reservation id) -> GPUs
        self._quota: Counter[tuple[str, str, str]] = Counter()  # (provider, scope, family) -> GPUs

    def take(self, vm_key: str, held: Held) -> None:
        """Count what the VM `vm_key` now holds (what it held before is released first)."""
        self.release(vm_key)
        self._by_vm[vm_key] = held
        self._count(held, 1)

    def release(self, vm_key: str) -> None:
        """Stop counting what the VM holds; nothing when it holds nothing."""
        held = self._by_vm.pop(vm_key, None)
        if held is not None:
            self._count(held, -1)

    def on_demand_vms(self, provider: str, region: str, shape: str) -> int:
        return self._on_demand[(provider, region, shape)]

    def reservation_gpus(self, provider: str, reservation_id: str) -> int:
        return self._reserved[(provider, reservation_id)]

    def quota_gpus(self, provider: str, scope: str, family: str) -> int:
        return self._quota[(provider, scope, family)]

    def _count(self, held: Held, sign: int) -> None:
        if held.reservation_id:
            self._reserved[(held.provider, held.reservation_id)] += sign * held.gpus
        else:
            self._on_demand[(held.provider, held.region, held.shape)] += sign
        self._quota[(held.provider, held.scope, held.family)] += sign * held.gpus
