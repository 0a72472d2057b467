"""Normalized errors: every provider error becomes one of these at the adapter's edge.

    VmError                     exit 1   anything else that went wrong
    ├── Cancelled               exit 1   the user answered no to a confirmation; nothing was done
    ├── UsageError              exit 2   bad input, rejected before any API call
    │   └── StrategyError       exit 2   the chosen strategy plugin raised or answered something not a placement
    ├── NotFound                exit 3
    ├── ConfigError             exit 4   missing/unsafe configuration
    │   └── AuthError           exit 4   the cloud refused the credentials
    ├── Unsupported             exit 5   the provider has no such feature (e.g. Lambda stop)
    ├── CapacityError           exit 6   no capacity (scope: zone, region or provider)
    ├── QuotaError              exit 6
    ├── BudgetError             exit 6   the plan's total $/h is above --max-price (or cannot be known), its
    │                                    cost over --ttl above --budget, or a monthly budget is reached
    ├── PartialFailure          exit 7   some of several targets failed
    ├── Transient               exit 8   rate limited, unavailable, lost response: retry later
    │   └── RateLimited         exit 8
    ├── Timeout                 exit 9   a wait passed its deadline; the cloud operation goes on
    └── Interrupted             exit 130 Ctrl-C/SIGTERM; cloud actions already accepted go on

Adapters classify by the SDK's typed errors, never by message text. An error's hint (what to do next) is data
(vm_core.hints): the CLI renders its commands, and its JSON output gives them as argv lists (`next`).
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when an error is made, so `vm --help` loads no more than it did
    from .hints import Hint


class Scope(enum.StrEnum):
    """How much a capacity error rules out (the fleet allocator blocks that scope)."""

    ZONE = "zone"
    RESERVATION = "reservation"  # only that reservation (capacity block) is full
    REGION = "region"
    PROVIDER = "provider"


class VmError(Exception):
    code = "error"
    exit_code = 1
    retryable = False

    def __init__(self, message: str, *, provider: str | None = None, suggestion: str | Hint | None = None) -> None:
        """`suggestion`: what to do next, a Hint when it names vm commands, else plain text."""
        from .hints import hint_of

        super().__init__(message)
        self.message = message
        self.provider = provider
        self.hint = hint_of(suggestion)

    @property
    def suggestion(self) -> str | None:
        """The hint's text when it names no vm command or setting; a hint with them is spelled by the CLI only."""
        return self.hint.text if self.hint is not None and not self.hint.refs else None

    @suggestion.setter
    def suggestion(self, text: str | None) -> None:
        from .hints import hint_of

        self.hint = hint_of(text)

    def to_json(self) -> dict[str, dict[str, object]]:
        """The error's JSON body without its hint (the CLI adds `suggestion` and `next`)."""
        body: dict[str, object] = {
            "code": self.code, "message": self.message, "provider": self.provider, "retryable": self.retryable,
        }
        return {"error": body}


class Cancelled(VmError):
    code = "cancelled"


class UsageError(VmError):
    code, exit_code = "usage", 2


class StrategyError(UsageError):
    """A placement strategy (a plugin of `vm_core.strategies`) raised, or answered something that is not a list
    of offers. The engine stops placing: no VM is created from such an answer."""


class NotFound(VmError):
    code, exit_code = "not_found", 3


class ConfigError(VmError):
    code, exit_code = "config", 4


class AuthError(ConfigError):
    code = "auth"


class Unsupported(VmError):
    code, exit_code = "unsupported", 5


class CapacityError(VmError):
    code, exit_code = "capacity", 6

    def __init__(self, message: str, *, scope: Scope = Scope.REGION, region: str | None = None,
                 provider: str | None = None, suggestion: str | Hint | None = None) -> None:
        super().__init__(message, provider=provider, suggestion=suggestion)
        self.scope = scope
        self.region = region

    def to_json(self) -> dict[str, dict[str, object]]:
        body = super().to_json()
        body["error"]["scope"] = self.scope.value
        return body


class QuotaError(VmError):
    code, exit_code = "quota", 6


class BudgetError(VmError):
    """A plan refused by the fleet's price cap (--max-price) or spend budget (--budget over --ttl), or a create
    refused by the user's monthly budget: nothing was recorded or created."""

    code, exit_code = "budget", 6


class PartialFailure(VmError):
    code, exit_code = "partial_failure", 7


class Transient(VmError):
    code, exit_code, retryable = "transient", 8, True


class RateLimited(Transient):
    code = "rate_limited"
    retry_after: float | None = None  # the cloud's hint in seconds, where it sent one


class Timeout(VmError):
    code, exit_code, retryable = "timeout", 9, True


class Interrupted(VmError):
    """Ctrl-C during a command. The cloud actions already accepted keep running."""

    code, exit_code = "interrupted", 130
