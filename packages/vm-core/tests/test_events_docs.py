"""docs/events.md says what the code does: its signature check (the ```python block) accepts the requests vm
sends and refuses altered ones, its kinds table lists every EventKind, its JSON table every key of a line."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from vm_core.events import delivery
from vm_core.events.kinds import EventKind
from vm_core.events.model import Event
from vm_core.events.store import EventLog
from vm_core.events.webhooks import Webhook
from vm_core.fleet.location import store_at
from webhook_receiver import Receiver

DOC = (Path(__file__).parents[3] / "docs" / "events.md").read_text()


def snippet() -> dict[str, Any]:
    (block,) = re.findall(r"^```python\n(.*?)^```", DOC, re.S | re.M)
    scope: dict[str, Any] = {}
    exec(compile(block, "docs/events.md", "exec"), scope)  # noqa: S102 - the documented code, as written
    return scope


def test_the_documented_check_accepts_what_vm_sends_and_nothing_altered(tmp_path: Path) -> None:
    verified = snippet()["verified"]
    store = store_at(None, tmp_path)
    assert isinstance(store, EventLog)
    with Receiver() as receiver:
        hook = Webhook(receiver.url, "docs-secret")
        store.add_event(Event(EventKind.DEGRADED, "train", "ana@lab", {"message": "3 of 4 running"}), [hook.target])
        delivery.deliver_pending(store, [hook], now=time.time())
    ((headers, body),) = receiver.accepted()
    assert verified("docs-secret", headers, body)
    assert not verified("docs-secret", headers, body.replace(b"3 of 4", b"4 of 4"))
    assert not verified("another-secret", headers, body)
    stale = {**headers, "X-Vm-Timestamp": str(int(headers["X-Vm-Timestamp"]) - 3600)}
    assert not verified("docs-secret", stale, body)


def test_every_kind_and_every_key_is_documented() -> None:
    kinds_table = DOC[DOC.index("## 2. Kinds"):DOC.index("## 3.")]
    documented = set(re.findall(r"^\| `([a-z_]+)`(?:, `([a-z_]+)`)?", kinds_table, re.M))
    assert {k for pair in documented for k in pair if k} == {k.value for k in EventKind}
    keys_table = DOC[DOC.index("### The JSON line"):DOC.index("## 2. Kinds")]
    keys = set(re.findall(r"^\| `([a-z_]+)` \|", keys_table, re.M))
    assert keys == set(Event(EventKind.CREATED, "f", "a").to_json())
