"""Fleet identity: which VMs in a (shared) cloud account provably belong to a fleet.

Every fleet has an immutable random id (8 base32 characters, `new_fleet_id`). Every VM created for the fleet
carries it in its name, `<fleet>--<id>-<slot>` (`-r<n>` after the first attempt of a slot), and, where the cloud
has labels, in the label `vm-fleet-id` (Nebius `metadata.labels`, Lambda `tags`). A plain `vm create` name can
never contain `--` (see cli/validate.py), fleet names cannot either, and the id is random, so a VM of another
fleet, another person's store or a hand-made VM never matches. A label that names another id overrides a
matching name.

Fleets recorded before ids existed have the id '' and keep their old member names `<fleet>-<slot>[-r<n>]`:
such names prove nothing, so those fleets never adopt a VM by name.
"""

from __future__ import annotations

import base64
import re
import secrets
from dataclasses import dataclass
from functools import cached_property

from ..errors import UsageError
from ..model import Instance

FLEET_NAME = re.compile(r"^[a-z][a-z0-9-]{0,39}$")
FLEET_ID = re.compile(r"^[a-z2-7]{8}$")
NAME_LABEL = "vm-fleet"
ID_LABEL = "vm-fleet-id"


NAME_RULE = "use 1-40 lower-case letters, digits and single dashes, starting with a letter"


def check_fleet_name(name: str) -> str:
    """The name, or UsageError saying what is allowed (names must also be valid VM names on every cloud)."""
    if not name:
        raise UsageError(f"empty fleet name: {NAME_RULE}")
    if not FLEET_NAME.match(name) or name.endswith("-") or "--" in name:
        raise UsageError(f"invalid fleet name {name!r}: {NAME_RULE}")
    return name


def new_fleet_name(given: str | None) -> str:
    """The name of a new fleet: `given`, checked, or a generated one when none was given (None). An empty name
    is refused like any invalid one, never replaced: a script whose variable is unset would otherwise create a
    fleet under a name its own teardown (`vm fleet destroy ""`) cannot name."""
    return generated_name() if given is None else check_fleet_name(given)


def generated_name() -> str:
    """The name of a fleet created without one: fleet-<6 hex>."""
    return f"fleet-{secrets.token_hex(3)}"


def new_fleet_id() -> str:
    """8 random base32 characters (40 bits), lower case: URL-safe and valid in every cloud's names."""
    return base64.b32encode(secrets.token_bytes(5)).decode().lower()


@dataclass(frozen=True, slots=True)
class Claim:
    """A VM that provably carries a fleet's id; slot and attempt come from its name (None when only its label
    names the fleet, e.g. after a rename)."""

    slot: int | None
    attempt: int | None


@dataclass(frozen=True)
class FleetIdentity:
    fleet: str
    fleet_id: str  # '' for a fleet recorded before ids existed

    def member_name(self, slot: int, attempt: int) -> str:
        base = f"{self.fleet}--{self.fleet_id}-{slot}" if self.fleet_id else f"{self.fleet}-{slot}"
        return base if attempt == 1 else f"{base}-r{attempt}"

    def labels(self) -> dict[str, str]:
        return {NAME_LABEL: self.fleet, ID_LABEL: self.fleet_id} if self.fleet_id else {NAME_LABEL: self.fleet}

    def claim(self, instance: Instance) -> Claim | None:
        """How `instance` proves it is this fleet's, or None when it does not. Never true for a fleet without
        an id."""
        if not self.fleet_id:
            return None
        label = instance.labels.get(ID_LABEL)
        if label is not None and label != self.fleet_id:
            return None
        match = self._pattern.match(instance.name)
        if match is not None:
            return Claim(int(match["slot"]), int(match["attempt"] or 1))
        return Claim(None, None) if label == self.fleet_id else None

    def resembles(self, instance: Instance) -> bool:
        """Whether the VM's name or label looks like this fleet's (for saying "not ours: left alone")."""
        return instance.name.startswith(f"{self.fleet}-") or instance.labels.get(NAME_LABEL) == self.fleet

    @cached_property
    def _pattern(self) -> re.Pattern[str]:
        return re.compile(rf"^{re.escape(self.fleet)}--{re.escape(self.fleet_id)}-(?P<slot>\d+)"
                          rf"(?:-r(?P<attempt>\d+))?$")
