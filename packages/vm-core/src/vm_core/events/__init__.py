"""Events and webhook notifications (docs/events.md).

    kinds.py      EventKind: what can happen to a fleet
    model.py      Event: one row of the append-only `events` table; its webhook body and JSON line
    text.py       the human sentence of an event (its `text`)
    store.py      EventLog: the events and deliveries tables, a mixin of the SQL fleet store (both backends)
    webhooks.py   Webhook: a profile's `[[profiles.NAME.notify]]` target, named by a hash of its URL
    signing.py    the X-Vm-Signature scheme (HMAC-SHA256 over timestamp and body), and its check
    delivery.py   deliver_pending: at-least-once delivery with backoff (the watchdog's entry point)
    recording.py  announce: what a fleet verb records and delivers at its end
"""
