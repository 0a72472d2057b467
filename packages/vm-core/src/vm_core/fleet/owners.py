"""Which fleet each VM belongs to, for `vm list` and `vm get`: read from the fleet store (when there is one) in
the background, so the read overlaps the providers' network calls."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ..errors import VmError
from ..model import Instance

if TYPE_CHECKING:
    from ..session import Session


class FleetNames:
    """The fleet of each instance that is a fleet member (one that may exist, or released), read in a daemon
    thread started at construction."""

    def __init__(self, session: Session) -> None:
        self._owner: dict[tuple[str, str], str] = {}
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._read, args=(session,), daemon=True, name="vm-fleet-names")
        self._thread.start()

    def apply(self, instances: Sequence[Instance], warn: Callable[[str], None]) -> list[Instance]:
        """`instances` with `fleet` set from the store. A store that cannot be read (a team database that is
        down) costs only the fleet names: `warn` says so. Any other failure of the read is raised here."""
        self._thread.join()
        if isinstance(self._failure, VmError):
            warn(f"fleet names not shown: {self._failure.message}")
            return list(instances)
        if self._failure is not None:
            raise self._failure
        return [replace(i, fleet=self._owner.get((i.provider, i.id), i.fleet)) for i in instances]

    def _read(self, session: Session) -> None:
        from .location import existing_store

        try:
            store = existing_store(session)
            if store is not None:
                self._owner = {(m.provider, m.instance_id): f.name for f in store.list_fleets()
                               for m in store.members(f.name)
                               if m.instance_id and m.state.may_run}
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread by apply()
            self._failure = exc
