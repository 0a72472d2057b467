"""Feeding the spend ledger from the single-VM verbs and the views: a create records its VMs as soon as each
cloud accepts it; stop, start, destroy, `vm list`, `vm get` and `vm fleet status` report what they saw.

Nothing here fails a verb: the VMs exist (or changed) whatever the ledger says, so a store that cannot be written
(a team database that is down) costs only the ledger entry, and `warn` says so. None of these calls a cloud.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from ..errors import VmError
from ..model import Instance, InstanceState
from .ledger import Ledger, LedgerVm, Observation, Pricing

if TYPE_CHECKING:
    from ..calls import Accepted
    from ..provider import Provider
    from ..session import Session

Warn = Callable[[str], None]


def account_of(provider: Provider) -> str:
    """The provider's account fingerprint ('' where it cannot tell), as fleets record it."""
    from ..provider import SupportsAccount

    return provider.account() if isinstance(provider, SupportsAccount) else ""


class CreatedVms:
    """Records the VMs of one `vm create` in the ledger: `accepted` as each cloud accepts one (state creating,
    from now), `settled` with what the create's wait returned (the cloud's creation time and state)."""

    def __init__(self, session: Session, provider: Provider, *, gpu: str, gpu_count: int, spot: bool,
                 warn: Warn) -> None:
        from ..fleet.lease import user_at_host

        self._session, self._provider, self._warn = session, provider, warn
        self._gpu, self._gpu_count, self._spot = gpu, gpu_count, spot
        self._account = account_of(provider)
        self._created_by = user_at_host()
        self._lock = threading.Lock()
        self._store: Ledger | None = None

    def accepted(self, accepted: Accepted) -> None:
        """A create the cloud accepted: the VM exists from now (may be called from several threads)."""
        vm = self._vm(accepted.instance_id, accepted.name, "", "", "", self._session.clock())
        self._change(lambda store: store.record_vm(vm, InstanceState.CREATING.value, price_per_hour=None,
                                                   source="create"))

    def settled(self, instances: Sequence[Instance]) -> None:
        """What the creates' waits returned: shape, region and price filled in, the state seen now."""
        if not instances:
            return

        def record(store: Ledger) -> None:
            for instance in instances:
                created = instance.created_at.timestamp() if instance.created_at else self._session.clock()
                vm = self._vm(instance.id, instance.name, instance.shape, instance.region, instance.reservation_id,
                              created)
                store.record_vm(vm, instance.state.value, price_per_hour=instance.price_per_hour, source="create")
                store.complete_vm(vm, first_seen=created)
            store.observe(observations(instances, self._account, "create", self._session.clock()))

        self._change(record)

    def _change(self, change: Callable[[Ledger], None]) -> None:
        """`change` on the session's store, opened once for this create."""
        from ..fleet.location import open_store

        with self._lock:
            try:
                self._store = self._store or open_store(self._session)
                change(self._store)
            except VmError as exc:
                self._warn(f"the spend ledger was not updated: {exc.message}")

    def _vm(self, instance_id: str, name: str, shape: str, region: str, reservation_id: str,
            created_at: float) -> LedgerVm:
        return LedgerVm(self._provider.name, self._account, instance_id, name, shape, region, self._gpu,
                        self._gpu_count, Pricing.of(reservation_id, self._spot), reservation_id, "", "",
                        self._session.profile.name, self._created_by, created_at)


def observations(instances: Iterable[Instance], account: str, source: str, at: float) -> list[Observation]:
    """What `instances` showed at `at`, for Ledger.observe."""
    return [Observation(i.provider, account, i.id, i.state.value, at, source, i.price_per_hour,
                        Pricing.of(i.reservation_id, i.spot)) for i in instances]


def observe(session: Session, instances: Sequence[Instance], source: str, warn: Warn, *,
            complete: Sequence[str] = ()) -> None:
    """Enter what `instances` show in the ledger (VMs it does not know are passed over). `complete` names the
    providers whose every VM is among `instances` (a listing with no filter): their ledger VMs that are absent
    went away outside vm and are closed."""
    if not instances and not complete:
        return
    accounts = {name: account_of(session.provider(name)) for name in {i.provider for i in instances} | set(complete)}
    now = session.clock()

    def record(store: Ledger) -> None:
        for name, account in accounts.items():
            store.observe(observations([i for i in instances if i.provider == name], account, source, now))
            if name in complete:
                store.close_absent(name, account, [i.id for i in instances if i.provider == name], now, source)

    _write(session, warn, record, only_existing=True)


def observe_members(store: Ledger, instances: Sequence[Instance], accounts: Mapping[str, str], source: str,
                    warn: Warn) -> None:
    """Enter what a fleet's members show (`accounts`: the fleet's recorded account of each provider) in the
    ledger through the fleet's own store (at the store's clock)."""
    now = store.clock()
    seen = [o for name in {i.provider for i in instances}
            for o in observations([i for i in instances if i.provider == name], accounts.get(name, ""), source, now)]
    try:
        store.observe(seen)
    except VmError as exc:
        warn(f"the spend ledger was not updated: {exc.message}")


def observe_gone(session: Session, provider: str, instance_ids: Iterable[str], source: str, warn: Warn) -> None:
    """Enter VMs that are gone (destroyed, or found gone) in the ledger."""
    ids = list(instance_ids)
    if not ids:
        return
    account = account_of(session.provider(provider))
    now = session.clock()
    seen = [Observation(provider, account, i, InstanceState.TERMINATED.value, now, source) for i in ids]
    _write(session, warn, lambda store: store.observe(seen), only_existing=True)


def _write(session: Session, warn: Warn, change: Callable[[Ledger], None], *,
           only_existing: bool = False) -> None:
    """Run `change` on the session's store (opened for it; with `only_existing`, nothing when the local store
    was never created: it has no ledger to change). A store error is warned about, never raised."""
    from ..fleet.location import existing_store, open_store

    try:
        store = existing_store(session) if only_existing else open_store(session)
        if store is not None:
            change(store)
    except VmError as exc:
        warn(f"the spend ledger was not updated: {exc.message}")
