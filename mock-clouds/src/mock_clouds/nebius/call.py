"""The authenticated context every handler receives."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.world import World

IDEMPOTENCY_KEY = "x-idempotency-key"
RESET_MASK = "x-resetmask"
_RECORDED_HEADERS = (IDEMPOTENCY_KEY, RESET_MASK)


@dataclass(frozen=True)
class Call:
    world: World
    owner: str  # tenant id of the bearer token
    request_id: str  # sent back as `x-request-id`
    metadata: dict[str, str]  # lower-case keys, text values only

    @property
    def idempotency_key(self) -> str:
        return self.metadata.get(IDEMPOTENCY_KEY, "")

    def reset_mask(self) -> frozenset[str]:
        """Paths named by `X-ResetMask` (comma-separated, e.g. "spec.secondary_disks, metadata.labels")."""
        raw = self.metadata.get(RESET_MASK, "")
        return frozenset(path.strip() for path in raw.split(",") if path.strip())

    def request_headers(self) -> dict[str, list[str]]:
        """The headers an Operation records in `request_headers`."""
        return {name: [self.metadata[name]] for name in _RECORDED_HEADERS if name in self.metadata}
