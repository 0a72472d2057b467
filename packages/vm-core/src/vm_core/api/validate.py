"""Checks of user input, made before any API call; each UsageError says what is valid.

Instance ids: a provider plugin may declare `instance_id_pattern` (a regex string the whole id must match) and
`instance_id_example` (how messages describe a valid id); a plugin that declares no pattern accepts any id.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..catalog import Catalog, GpuRequest
from ..errors import UsageError
from ..hints import Hint
from ..model import Offer, ReservationError, ReservationProblem, ReservationRequest

if TYPE_CHECKING:
    from ..plugins import LoadedPlugin

MAX_COUNT = 64  # VMs per create; more is almost certainly a typo
NAME_RULE = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
NAME_HELP = ("names are 1-63 characters of lowercase letters, digits and single '-', starting with a letter or"
             " digit (the rule all three clouds accept; '--' is reserved for fleet members)")


def instance_id(plugin: LoadedPlugin, provider: str, value: str) -> str:
    """The id, stripped; UsageError when it cannot be an instance id of `provider` (its plugin's pattern)."""
    text = value.strip()
    if not text:
        raise UsageError("empty instance id", provider=provider)
    pattern, example = plugin.instance_id_pattern, plugin.instance_id_example
    if pattern and re.fullmatch(pattern, text) is None:  # the record's pattern compiles (checked at load)
        looks = f"; {provider} instance ids look like {example}" if example else f" (expected /{pattern}/)"
        raise UsageError(f"malformed {provider} instance id {text!r}{looks}", provider=provider)
    return text


def count(value: int) -> int:
    if not 1 <= value <= MAX_COUNT:
        raise UsageError(f"--count must be from 1 to {MAX_COUNT} (got {value}); larger fleets are a job for"
                         " several commands or a fleet")
    return value


def names(name: str | None, how_many: int) -> list[str]:
    """NAME for one VM, NAME-1..NAME-N for several; a generated vm-<6 hex> when no name is given."""
    base = "vm-" + secrets.token_hex(3) if name is None else name
    result = [base] if how_many == 1 else [f"{base}-{i}" for i in range(1, how_many + 1)]
    for candidate in [base, *result]:
        vm_name(candidate)
    return result


def vm_name(value: str) -> str:
    if not value.strip():
        raise UsageError(f"empty VM name; {NAME_HELP}")
    if not NAME_RULE.fullmatch(value) or "--" in value:
        raise UsageError(f"invalid VM name {value!r}; {NAME_HELP}")
    return value


def gpu(catalog: Catalog, provider: str, text: str) -> GpuRequest:
    """`TYPE[:N]` from the catalog (`TYPE` is `TYPE:1`); for a provider the catalog knows, also that it sells
    that size."""
    request = catalog.parse(text)
    note = catalog.size_note(provider, request.gpu, request.gpu_count or 1)
    if note is None:
        return request
    if catalog.sizes(provider, request.gpu):
        raise UsageError(note, provider=provider)
    sellers = sorted({s.provider for s in catalog.shapes if s.gpu == request.gpu})
    raise UsageError(f"{provider} does not sell {request.gpu}; providers that do: {', '.join(sellers) or 'none'}",
                     provider=provider)


RESERVATION_PROBLEMS = {
    ReservationProblem.EMPTY: "--reservation needs auto, none or a reservation id",
    ReservationProblem.STRICT_WITHOUT_RESERVATION: "--strict cannot be combined with --reservation none",
}


def reservation(value: str, strict: bool, provider: str | None = None) -> ReservationRequest:
    """The request of `--reservation VALUE` (and `--strict`); UsageError, in the options' words, if it cannot be."""
    try:
        return ReservationRequest.parse(value, strict=strict)
    except ReservationError as exc:
        raise UsageError(RESERVATION_PROBLEMS[exc.problem], provider=provider) from None


def region(provider: str, value: str | None) -> str | None:
    """The region as given (stripped of nothing); UsageError for an empty one. Whether the provider offers it
    is checked against its offers (see `offered_region`)."""
    if value is None:
        return None
    if not value.strip():
        raise UsageError("empty --region", provider=provider)
    return value


def offered_region(offers: Sequence[Offer], provider: str, wanted: str, value: str) -> str:
    """`value` when some offer of `provider` (with capacity now or not) is in that region; else UsageError naming
    the regions its offers are in, those with capacity now first. `wanted` names the GPU request (H100:8)."""
    if any(o.region == value for o in offers):
        return value
    now = sorted({o.region for o in offers if o.available})
    later = sorted({o.region for o in offers} - set(now))
    if not now and not later:
        raise UsageError(f"{provider} offers no {wanted} in any region (asked for region {value!r})",
                         provider=provider, suggestion=Hint.run("offers", "--gpu", wanted, "--all"))
    parts = [f"with capacity now: {', '.join(now) or 'none'}"] + ([f"without: {', '.join(later)}"] if later else [])
    raise UsageError(f"{provider} offers no {wanted} in region {value!r}; regions that sell it: {'; '.join(parts)}",
                     provider=provider, suggestion=Hint.run("offers", "--gpu", wanted, "--provider", provider, "--all"))
