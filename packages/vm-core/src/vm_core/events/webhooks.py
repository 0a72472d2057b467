"""The webhooks of a profile: `[[profiles.NAME.notify]]` tables of config.toml (parsed by vm_core.config).

    [[profiles.team.notify]]
    url = "https://hooks.slack.com/services/..."    # where each event is POSTed (http or https)
    secret = "..."                                  # the HMAC key of its signature (signing.py)
    events = ["created", "degraded"]                # optional: these kinds only (default: every kind)

A webhook is named in the store and in messages by its `target`: a stable hash of its URL, never the URL (whose
path or query may itself be a secret, as a Slack incoming-webhook URL's is) nor its secret.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from .kinds import EventKind


@dataclass(frozen=True, slots=True)
class Webhook:
    """One notify target. `kinds` None: every kind. The URL and the secret are not in its repr."""

    url: str = field(repr=False)
    secret: str = field(repr=False)
    kinds: frozenset[EventKind] | None = None

    @property
    def target(self) -> str:
        """`wh-` and the first 16 hex digits of the URL's SHA-256: the webhook's name in the deliveries table."""
        return target_of(self.url)

    def wants(self, kind: EventKind) -> bool:
        """Whether events of `kind` are sent to this webhook."""
        return self.kinds is None or kind in self.kinds


def target_of(url: str) -> str:
    """The stable name of the webhook at `url` (see Webhook.target)."""
    return "wh-" + hashlib.sha256(url.encode()).hexdigest()[:16]
