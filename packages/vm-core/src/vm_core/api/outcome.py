"""How an API call ended: an `ExitKind`, and the `Problem` behind any kind but OK.

Every report of `vm_core.api` carries a `problem` (None when everything asked for was done) and derives its
`exit` kind from it. The kind follows the error's class (vm_core.errors), so a Python caller and the `vm`
command agree on how a call ended; the CLI turns the kind into its documented exit code in one place
(`vm_core.cli.exits.exit_for`).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import (
    BudgetError,
    CapacityError,
    ConfigError,
    Interrupted,
    NotFound,
    PartialFailure,
    QuotaError,
    Timeout,
    Transient,
    Unsupported,
    UsageError,
    VmError,
)


class ExitKind(enum.Enum):
    """How a call ended, one value per documented exit code of `vm` (the value is the errors' `code` family)."""

    OK = "ok"
    ERROR = "error"
    USAGE = "usage"
    NOT_FOUND = "not_found"
    CONFIG = "config"
    UNSUPPORTED = "unsupported"
    CAPACITY = "capacity"
    PARTIAL = "partial_failure"
    TRANSIENT = "transient"
    TIMEOUT = "timeout"
    INTERRUPTED = "interrupted"

    @classmethod
    def of(cls, error: VmError | None) -> ExitKind:
        """The kind of a call that ended with `error` (OK for None); a VmError of no listed family is ERROR."""
        if error is None:
            return cls.OK
        return next((kind for family, kind in _FAMILIES if isinstance(error, family)), cls.ERROR)


# Most specific first: every subclass of vm_core.errors belongs to the first family it is an instance of.
_FAMILIES: tuple[tuple[type[VmError], ExitKind], ...] = (
    (Interrupted, ExitKind.INTERRUPTED), (Timeout, ExitKind.TIMEOUT), (Transient, ExitKind.TRANSIENT),
    (PartialFailure, ExitKind.PARTIAL), (CapacityError, ExitKind.CAPACITY), (QuotaError, ExitKind.CAPACITY),
    (BudgetError, ExitKind.CAPACITY), (Unsupported, ExitKind.UNSUPPORTED), (ConfigError, ExitKind.CONFIG),
    (NotFound, ExitKind.NOT_FOUND), (UsageError, ExitKind.USAGE),
)


@dataclass(frozen=True)
class Problem:
    """Why a call did not fully succeed: the `error` it ends with and, when it acted on several targets, each
    target's own failure (`failures`: (target, error) pairs, in the order they were acted on)."""

    error: VmError
    failures: tuple[tuple[str, VmError], ...] = ()

    @classmethod
    def of(cls, error: VmError, failures: Sequence[tuple[str, VmError]] = ()) -> Problem:
        return cls(error, tuple(failures))


@dataclass(kw_only=True)
class Outcome:
    """The base of every report: `problem` is None when the call did everything it was asked to."""

    problem: Problem | None = field(default=None)

    @property
    def exit(self) -> ExitKind:
        """How the call ended (ExitKind.OK when there is no problem)."""
        return ExitKind.of(self.problem.error if self.problem else None)

    @property
    def ok(self) -> bool:
        return self.problem is None
