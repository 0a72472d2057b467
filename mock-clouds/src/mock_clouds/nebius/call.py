"""The authenticated context every handler receives."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.world import World
from . import fieldmask

IDEMPOTENCY_KEY = "x-idempotency-key"
RESET_MASK = "x-resetmask"
_RECORDED_HEADERS = (IDEMPOTENCY_KEY, RESET_MASK)


@dataclass(frozen=True)
class Call:
    world: World
    owner: str  # tenant id of the bearer token
    request_id: str  # sent back as `x-request-id`
    metadata: dict[str, str]  # lower-case keys, text values only
    raw: bytes = b""  # the request as received (what an Operation's `request` holds)

    @property
    def idempotency_key(self) -> str:
        return self.metadata.get(IDEMPOTENCY_KEY, "")

    def reset_mask(self) -> fieldmask.Mask:
        """The `X-ResetMask` header parsed (grouped syntax, `fieldmask`); raises MaskSyntaxError."""
        return fieldmask.parse(self.metadata.get(RESET_MASK, ""))

    def request_headers(self) -> dict[str, list[str]]:
        """The headers an Operation records in `request_headers`."""
        return {name: [self.metadata[name]] for name in _RECORDED_HEADERS if name in self.metadata}
