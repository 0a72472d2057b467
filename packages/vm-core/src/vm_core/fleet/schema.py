"""The fleet store's schema, as numbered forward migrations shared by every backend.

Version 1 is the first released layout; each later version is a list of statements that turns the previous one
into it. A backend applies the missing migrations inside one write transaction (SQLite: BEGIN IMMEDIATE;
PostgreSQL: under pg_advisory_xact_lock), so concurrent processes that open an old store migrate it exactly once.
A store newer than this code is refused. The SQL uses only types both SQLite and PostgreSQL understand (TEXT,
INTEGER, BIGINT, DOUBLE PRECISION).
"""

from __future__ import annotations

VERSION_TABLE = "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"

MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        """CREATE TABLE IF NOT EXISTS fleets (
  name TEXT PRIMARY KEY, gpu TEXT NOT NULL, gpu_count INTEGER, requested_count INTEGER NOT NULL,
  min_count INTEGER NOT NULL, strategy TEXT NOT NULL, providers TEXT, region TEXT, reservation TEXT NOT NULL,
  state TEXT NOT NULL, message TEXT NOT NULL, owner_pid INTEGER NOT NULL, created_at DOUBLE PRECISION NOT NULL,
  updated_at DOUBLE PRECISION NOT NULL)""",
        """CREATE TABLE IF NOT EXISTS members (
  fleet TEXT NOT NULL REFERENCES fleets(name), slot INTEGER NOT NULL, attempt INTEGER NOT NULL,
  provider TEXT NOT NULL, name TEXT NOT NULL, region TEXT NOT NULL, shape TEXT NOT NULL,
  reservation_id TEXT NOT NULL, state TEXT NOT NULL, instance_id TEXT NOT NULL, operation_id TEXT NOT NULL,
  price_per_hour DOUBLE PRECISION, error TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL,
  updated_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (fleet, slot, attempt))""",
    ),
    # Fleet identity: a random id carried by every member VM, and the accounts the fleet was created in.
    # Fleets of version 1 get fleet_id '' (they never adopt VMs by name).
    2: (
        "ALTER TABLE fleets ADD COLUMN fleet_id TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE fleets ADD COLUMN profile TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE fleets ADD COLUMN accounts TEXT NOT NULL DEFAULT '{}'",
        "ALTER TABLE fleets ADD COLUMN created_by TEXT NOT NULL DEFAULT ''",
    ),
    # Leases: who may change a fleet until when (lease.py). Keyed by fleet name, without a reference to `fleets`:
    # a create holds the name's lease before the fleet is recorded. `owner_pid` stays, unused, for older vms.
    3: (
        """CREATE TABLE IF NOT EXISTS leases (
  fleet TEXT PRIMARY KEY, holder TEXT NOT NULL, operation TEXT NOT NULL, process TEXT NOT NULL,
  acquired_at DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION NOT NULL)""",
    ),
    # Expiry and budget: when `vm fleet reap` may destroy the fleet (epoch seconds; NULL: never), and the cap on
    # its total $/h (NULL: none). Fleets of earlier versions have neither.
    4: (
        "ALTER TABLE fleets ADD COLUMN expires_at DOUBLE PRECISION",
        "ALTER TABLE fleets ADD COLUMN max_price DOUBLE PRECISION",
    ),
    # Machine options: the image, boot disk and startup script every member is created with, as JSON text
    # (machine.MachineOptions.to_record; '' for the providers' defaults, as every fleet of earlier versions has).
    5: (
        "ALTER TABLE fleets ADD COLUMN machine TEXT NOT NULL DEFAULT ''",
    ),
    # Reservation and placement as their own columns: the mode (auto, none, id), the reservation's id ('' unless
    # mode id), whether --strict was asked (0/1), and the placement (any, cluster). They are filled from what
    # earlier versions kept: the `reservation` text ("auto", "none" or an id, " (strict)" appended for --strict),
    # which stays (NOT NULL, written as before) but is no longer read, and `strategy` "cluster" for a cluster fleet.
    6: (
        "ALTER TABLE fleets ADD COLUMN reservation_mode TEXT NOT NULL DEFAULT 'auto'",
        "ALTER TABLE fleets ADD COLUMN reservation_id TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE fleets ADD COLUMN reservation_strict INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE fleets ADD COLUMN placement TEXT NOT NULL DEFAULT 'any'",
        "UPDATE fleets SET reservation_strict = 1 "
        "WHERE length(reservation) > 9 AND substr(reservation, length(reservation) - 8) = ' (strict)'",
        "UPDATE fleets SET reservation_id = CASE WHEN reservation_strict = 1 "
        "THEN substr(reservation, 1, length(reservation) - 9) ELSE reservation END",
        "UPDATE fleets SET reservation_mode = CASE WHEN lower(reservation_id) IN ('auto', 'none') "
        "THEN lower(reservation_id) ELSE 'id' END",
        "UPDATE fleets SET reservation_id = '' WHERE reservation_mode <> 'id'",
        "UPDATE fleets SET placement = 'cluster' WHERE strategy = 'cluster'",
    ),
    # Money and fleets that look after themselves. On the fleet: its spend budget in USD (NULL: none) and what
    # reaching it does ('stop' or 'destroy'); whether the watchdog keeps its count (maintain 0/1); spot members
    # (spot 0/1, the first on_demand_base on-demand, spot_fallback 0/1: on-demand when no spot is left); and until
    # when a fleet waiting for capacity waits (epoch seconds; NULL: it does not wait).
    # The spend ledger (spend/): every VM vm created, single or fleet member, keyed by its cloud account and id
    # (`account` is the fingerprint fleets record, never a secret), and each interval of its life in one state at
    # one price (`ended_at` NULL: still open). Events: an append-only log (events/), and each webhook delivery of one.
    # A member records whether it was placed on a spot offer (members of earlier versions were not: 0).
    7: (
        "ALTER TABLE fleets ADD COLUMN budget DOUBLE PRECISION",
        "ALTER TABLE fleets ADD COLUMN on_budget TEXT NOT NULL DEFAULT 'stop'",
        "ALTER TABLE fleets ADD COLUMN maintain INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE fleets ADD COLUMN spot INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE fleets ADD COLUMN on_demand_base INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE fleets ADD COLUMN spot_fallback INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE fleets ADD COLUMN wait_until DOUBLE PRECISION",
        "ALTER TABLE members ADD COLUMN spot INTEGER NOT NULL DEFAULT 0",
        """CREATE TABLE IF NOT EXISTS ledger_vms (
  provider TEXT NOT NULL, account TEXT NOT NULL, instance_id TEXT NOT NULL, name TEXT NOT NULL,
  shape TEXT NOT NULL, region TEXT NOT NULL, gpu TEXT NOT NULL, gpu_count INTEGER NOT NULL,
  pricing TEXT NOT NULL, reservation_id TEXT NOT NULL, fleet TEXT NOT NULL, fleet_id TEXT NOT NULL,
  profile TEXT NOT NULL, created_by TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL,
  closed_at DOUBLE PRECISION, PRIMARY KEY (provider, account, instance_id))""",
        """CREATE TABLE IF NOT EXISTS ledger_intervals (
  provider TEXT NOT NULL, account TEXT NOT NULL, instance_id TEXT NOT NULL, started_at DOUBLE PRECISION NOT NULL,
  ended_at DOUBLE PRECISION, state TEXT NOT NULL, pricing TEXT NOT NULL, price_per_hour DOUBLE PRECISION,
  source TEXT NOT NULL, PRIMARY KEY (provider, account, instance_id, started_at))""",
        "CREATE INDEX IF NOT EXISTS ledger_intervals_time ON ledger_intervals (started_at, ended_at)",
        """CREATE TABLE IF NOT EXISTS events (
  id TEXT PRIMARY KEY, seq BIGINT NOT NULL, at DOUBLE PRECISION NOT NULL, actor TEXT NOT NULL, kind TEXT NOT NULL,
  fleet TEXT NOT NULL, provider TEXT NOT NULL, instance_id TEXT NOT NULL, details TEXT NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS events_at ON events (at)",
        """CREATE TABLE IF NOT EXISTS deliveries (
  event_id TEXT NOT NULL, target TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL,
  next_attempt_at DOUBLE PRECISION NOT NULL, last_error TEXT NOT NULL, PRIMARY KEY (event_id, target))""",
    ),
    # One name for the number of VMs a fleet should have: `count`, as --count and beside min_count (the column was
    # requested_count; the fleet JSON key and the events' details key change with it). `count` is a non-reserved
    # keyword in PostgreSQL: statements name the column unquoted.
    8: (
        "ALTER TABLE fleets RENAME COLUMN requested_count TO count",
    ),
}

LATEST = max(MIGRATIONS)

# Every table the migrations create. A team database's user roles need SELECT, INSERT, UPDATE and DELETE on each
# (only its owner role creates or alters them: docs/fleets.md, team mode).
TABLES = ("fleets", "members", "leases", "schema_version", "ledger_vms", "ledger_intervals", "events", "deliveries")


def pending(current: int) -> list[tuple[int, tuple[str, ...]]]:
    """The migrations to apply to a store at version `current` (0: empty), in order."""
    return [(version, MIGRATIONS[version]) for version in sorted(MIGRATIONS) if version > current]
