"""One event: a row of the append-only `events` table, and the documents made of it.

`body()` is the JSON object a webhook receives; `to_json()` is one line of `vm events -o json` (the body and the
event's `seq`). Both are documented in docs/events.md; `text` is a sentence for people (text.py), so a Slack
incoming-webhook URL shows it as it is.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .kinds import EventKind


@dataclass(frozen=True, slots=True)
class Event:
    """What happened (`kind`), when (`at`, epoch seconds), by whom (`actor`: `user@host`, or `watchdog
    user@host`), to which fleet and VM (`provider` and `instance_id`, "" for the fleet as a whole), with the
    kind's `details` (JSON-ready values). `id` is a uuid4, the receivers' key for deduplication; `seq` orders the
    events of one store (0 until the store numbers it)."""

    kind: EventKind
    fleet: str
    actor: str
    details: dict[str, Any] = field(default_factory=dict)
    provider: str = ""
    instance_id: str = ""
    at: float = field(default_factory=time.time)
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    seq: int = 0

    @property
    def text(self) -> str:
        """A sentence saying what happened (text.py)."""
        from .text import sentence

        return sentence(self)

    def body(self) -> dict[str, Any]:
        """The webhook body: id, at (RFC 3339, UTC), actor, kind, fleet, provider, instance_id, details, text."""
        return {"id": self.id, "at": rfc3339(self.at), "actor": self.actor, "kind": self.kind.value,
                "fleet": self.fleet, "provider": self.provider, "instance_id": self.instance_id,
                "details": self.details, "text": self.text}

    def to_json(self) -> dict[str, Any]:
        """One line of `vm events -o json`: the webhook body and `seq`."""
        return {"seq": self.seq, **self.body()}

    def encoded(self) -> bytes:
        """The body as the bytes a webhook is sent (compact JSON, UTF-8): what its signature covers."""
        return json.dumps(self.body(), separators=(",", ":"), sort_keys=True).encode()


def rfc3339(at: float) -> str:
    """Epoch seconds as an RFC 3339 UTC time with milliseconds, e.g. 2026-12-02T17:15:23.042Z."""
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
