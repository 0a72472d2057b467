"""Questions a verb asks before it does something that cannot be undone (destroying VMs, creating VMs the cloud
will not delete through its API).

A verb builds a `Confirmation` and hands it to the caller's `Confirm` callable, which answers by returning (go
ahead) or by raising vm_core.errors.Cancelled (nothing is done; `Confirmation.refusal()` is the error `vm` raises).
A verb given no `Confirm` asks nothing: the call is the consent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import Cancelled
from ..hints import Hint
from ..model import Instance


@dataclass(frozen=True)
class Confirmation:
    """`lines` (what it is about, one item per line) and the yes/no `question`; `again` is the command that
    does it without asking, `undone` what a refusal leaves undone ("destroyed", "created")."""

    question: str
    again: Hint
    lines: tuple[str, ...] = ()
    undone: str = "destroyed"

    def refusal(self) -> Cancelled:
        """The error of a "no": nothing was done (exit 1), its hint the command that does it without asking."""
        return Cancelled(f"cancelled: nothing was {self.undone}", suggestion=self.again)


Confirm = Callable[[Confirmation], None]


def destroying(instances: Sequence[Instance], *, again: Hint, what: str = "") -> Confirmation | None:
    """The question before destroying `instances` (None when there are none): each VM (provider, id, name,
    state, $/h), then "Destroy WHAT (running now: $TOTAL/h)?"; `what` names the group ("fleet train"), default
    "N VM(s)". A total with an unknown price is a lower bound (">= $12.00/h")."""
    if not instances:
        return None
    prices = [i.price_per_hour for i in instances if not i.state.not_billed]
    known = sum(p for p in prices if p is not None)
    total = f"{'>= ' if None in prices else ''}${known:.2f}/h"
    lines = ["These will be destroyed:"]
    for i in instances:
        price = "-" if i.running_price is None else f"${i.running_price:.2f}/h"
        lines.append(f"  {i.provider}  {i.id}  {i.name or '-'}  {i.state.value}  {price}")
    label = what or f"{len(instances)} VM{'s' if len(instances) > 1 else ''}"
    return Confirmation(f"Destroy {label} (running now: {total})?", again, tuple(lines))


def ask(confirm: Confirm | None, confirmation: Confirmation | None) -> None:
    """Put `confirmation` to `confirm`, if both are given; raises what `confirm` raises (Cancelled)."""
    if confirm is not None and confirmation is not None:
        confirm(confirmation)
