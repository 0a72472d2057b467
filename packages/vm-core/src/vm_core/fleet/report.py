"""What a fleet command did (or, in a dry run, would do) to each VM: one line and one JSON object per VM."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any


class Verb(enum.StrEnum):
    CREATED = "created"  # a new VM of the fleet (scale, repair)
    ADOPTED = "adopted"  # a VM carrying the fleet's id that the store did not know, now recorded
    KEPT = "kept"  # a recorded member whose VM runs
    DESTROYED = "destroyed"  # the cloud confirmed the delete
    RELEASED = "released"  # the cloud refuses to delete it: it still runs and bills
    MISSING = "missing"  # recorded, but the cloud no longer has it
    NEVER_CREATED = "never created"  # an intent that left no VM
    FAILED = "failed"  # the action failed; the VM may still exist (a re-run retries)
    LEFT_ALONE = "left alone"  # looks like the fleet's but does not carry its id: not ours
    UNCHECKED = "unchecked"  # its provider could not be asked


# What a dry run says instead of the verb.
_WOULD = {Verb.CREATED: "would create", Verb.ADOPTED: "would adopt", Verb.KEPT: "would keep",
          Verb.DESTROYED: "would destroy", Verb.MISSING: "would mark missing",
          Verb.NEVER_CREATED: "would mark never created"}


@dataclass(frozen=True, slots=True)
class Action:
    verb: Verb
    provider: str
    name: str
    instance_id: str = ""
    detail: str = ""

    @property
    def why(self) -> str:
        """The detail when it says more than the verb ("" for none, or for a detail that only repeats the verb,
        such as a member's recorded error "never created" under the verb "never created")."""
        return "" if self.detail == self.verb.value else self.detail

    def line(self, dry_run: bool = False) -> str:
        """`PROVIDER: NAME (ID): VERB[: WHY]`, each part once."""
        verb = _WOULD.get(self.verb, self.verb.value) if dry_run else self.verb.value
        vm = f"{self.name} ({self.instance_id})" if self.instance_id else self.name
        return f"{self.provider}: {vm}: {verb}" + (f": {self.why}" if self.why else "")

    def to_json(self) -> dict[str, Any]:
        return {"action": self.verb.value, "provider": self.provider, "name": self.name,
                "id": self.instance_id or None, "detail": self.why or None}
