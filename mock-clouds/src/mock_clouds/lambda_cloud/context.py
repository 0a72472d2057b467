"""What every endpoint receives: the world, the front end's store, the caller and the request."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..core.models import VM, Provider, ProviderConfig
from ..core.world import World
from ..http import Request
from .errors import instance_not_found
from .state import AccountState, LambdaStore

LAMBDA = Provider.LAMBDA


@dataclass(frozen=True)
class Ctx:
    world: World
    store: LambdaStore
    account: str  # the API key's owner
    scope: str  # the project holding the account's instances
    request: Request

    @property
    def config(self) -> ProviderConfig:
        return self.world.config(LAMBDA)

    @property
    def resources(self) -> AccountState:
        """The caller's SSH keys and file systems."""
        return self.store.account(self.account)

    def instance(self, instance_id: str, *, include_terminated: bool = False) -> VM:
        """The caller's instance, else the 404 ApiError (other accounts' instances do not exist for it)."""
        vm = self.world.vm(LAMBDA, instance_id, include_deleted=include_terminated)
        if vm is None or vm.scope != self.scope:
            raise instance_not_found()
        return vm


# An endpoint returns the `data` payload of a 200 response, or raises ApiError. It runs inside world.tx().
Endpoint = Callable[[Ctx], object]
