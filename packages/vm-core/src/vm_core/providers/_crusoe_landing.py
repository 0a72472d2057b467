"""Where a Crusoe create landed, and what vm says about it.

Crusoe's backend ignores `reservation_specification.id` at create (since early 2026; Terraform's provider warns
"The requested reservation_id was ignored by the backend", terraform-provider-crusoe
internal/vm/vm_resource.go:468-476) and places every VM as `lowest_cost` does: the cheapest matching reservation
with room, else on-demand. Only the created VM's `reservation_id` says where it is, so vm reads it after every
create: it reports the reservation with its price against the on-demand one, and a `--reservation ID --strict`
VM that landed elsewhere is destroyed and its create reported failed (CapacityError, exit 6).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from ..catalog import ShapeEntry
from ..errors import CapacityError, Scope, VmError
from ..hints import MARK, Command, Hint
from ..model import Instance, ReservationMode, ReservationRequest
from ..provider import Pending

NAME = "crusoe"
IGNORED = "Crusoe's backend ignores a reservation named at create and places a VM on the cheapest one with room"


@dataclass(frozen=True, slots=True)
class Landing:
    """What a create asked for: `wanted`, the reservation named ("" for auto), or None for on-demand only
    (`--reservation none`, nothing to say); `strict`: landing elsewhere fails the create; `on_demand`: the shape's
    on-demand $/h (None when unknown); `gpu`: its GPU, for hints."""

    wanted: str | None
    strict: bool
    on_demand: float | None
    gpu: str

    def refuses(self, instance: Instance) -> bool:
        """Whether `instance` must not be kept: strict and not on the reservation named."""
        return self.strict and bool(self.wanted) and instance.reservation_id != self.wanted

    def note(self, instance: Instance) -> str:
        """Where the VM runs and at what price ("" for an on-demand-only create)."""
        if self.wanted is None:
            return ""
        where = self.where(instance)
        if self.wanted and instance.reservation_id != self.wanted:
            return f"{where}, not on reservation {self.wanted}: {IGNORED}"
        return where

    def where(self, instance: Instance) -> str:
        """`on reservation R at $X/h (on-demand $Y/h)` or `on-demand at $Y/h`."""
        price = _dollars(instance.price_per_hour)
        if instance.reservation_id:
            return f"on reservation {instance.reservation_id} at {price} (on-demand {_dollars(self.on_demand)})"
        return f"on-demand at {price}"

    def refusal(self, instance: Instance, cleanup: VmError | None = None) -> CapacityError:
        """The error of a strict create that landed elsewhere: its VM was destroyed, or `cleanup` says why not."""
        if cleanup is None:
            outcome = "it was destroyed"
            hint = Hint.say("{} shows the reservations with room, cheapest first: Crusoe places a VM on the first",
                            Command.of("offers", "--gpu", self.gpu, "--provider", NAME))
        else:
            outcome = f"destroying it failed: {cleanup.message.replace(MARK, '{ }')}"
            hint = Hint.say("destroy it with {}", Command.of("destroy", instance.id, "--provider", NAME))
        return CapacityError(f"{instance.name or instance.id} landed {self.where(instance)}, not on reservation "
                             f"{self.wanted} ({IGNORED}); --strict: {outcome}", scope=Scope.RESERVATION,
                             region=instance.region, provider=NAME, suggestion=hint)


class Landed:
    """A create's Pending that checks where the VM landed once `wait` returned it (the Explained protocol: its
    `note`). A strict create on the wrong reservation is destroyed within the wait's deadline, and `wait` raises
    the Landing's CapacityError (its hint says how to destroy it when that failed). `id`, `resource_id` and
    `done()` are the wrapped Pending's."""

    def __init__(self, pending: Pending[Instance], landing: Landing,
                 destroy: Callable[[str, float], None]) -> None:
        self.pending = pending
        self.landing = landing
        self._destroy = destroy
        self.note = ""

    @property
    def id(self) -> str:
        return self.pending.id

    @property
    def resource_id(self) -> str:
        return self.pending.resource_id

    def done(self) -> bool:
        return self.pending.done()

    def completed(self, instance: Instance, timeout: float) -> Instance | None:
        """The running VM as read, checked as `wait` checks it (Completes): a strict create off its reservation
        is destroyed (blocking, at most `timeout` seconds) and the Landing's CapacityError raised."""
        if not self.landing.refuses(instance):
            self.note = self.landing.note(instance)
            return instance
        try:
            self._destroy(instance.id, max(timeout, 1.0))
        except VmError as cleanup:
            raise self.landing.refusal(instance, cleanup) from cleanup
        raise self.landing.refusal(instance)

    def wait(self, timeout: float) -> Instance:
        deadline = time.monotonic() + timeout
        instance = self.pending.wait(timeout)
        if not self.landing.refuses(instance):
            self.note = self.landing.note(instance)
            return instance
        try:
            self._destroy(instance.id, max(deadline - time.monotonic(), 1.0))
        except VmError as cleanup:
            raise self.landing.refusal(instance, cleanup) from cleanup
        raise self.landing.refusal(instance)


def landing_of(request: ReservationRequest, shape: ShapeEntry) -> Landing:
    """The Landing of a create of `shape` with `--reservation`/`--strict` as `request`."""
    wanted = {ReservationMode.AUTO: "", ReservationMode.NONE: None}.get(request.mode, request.reservation_id)
    return Landing(wanted, request.strict, shape.price_per_hour, shape.gpu)


def _dollars(price: float | None) -> str:
    return f"${price:.2f}/h" if price is not None else "an unknown price"
