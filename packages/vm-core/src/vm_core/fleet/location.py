"""Which fleet store a command uses: the local SQLite file, or a PostgreSQL database shared by a team.

`VM_STORE_URL`, else `store_url` of the profile, else the top-level `store_url` of config.toml. A
`postgresql://` (or `postgres://`) URL selects PostgreSQL; none selects $STATE/vm.db. A password in the URL is a
secret: `shown_url` replaces it, and the session's redaction removes it from any output and --debug log.
PostgreSQL's driver (psycopg, the `vm-core[postgres]` extra) is imported only when a URL asks for it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from ..errors import ConfigError
from .lease import lease_seconds
from .store import DEFAULT_LEASE_SECONDS

if TYPE_CHECKING:
    from ..session import Session
    from .store import FleetStore

POSTGRES_SCHEMES = ("postgresql", "postgres")
SQLITE_FILE = "vm.db"
HIDDEN = "<redacted>"
# What to run when the driver is missing: psycopg 3 (what the extra installs) into the environment vm runs from;
# the name vm-core is not on PyPI, so `pip install 'vm-core[postgres]'` would find nothing.
DRIVER_HINT = "install psycopg 3 where vm is installed ({prefix}): pip install 'psycopg[binary]==3.*'"


def store_url(session: Session) -> str | None:
    """The configured store URL; None: the local SQLite file. Records its password as a session secret."""
    url = (session.environ.get("VM_STORE_URL") or "").strip() or session.profile.store_url
    if url:
        session.secrets.update(url_secrets(url))
    return url


def open_store(session: Session) -> FleetStore:
    """The fleet store of this session, opened (and migrated). ConfigError (exit 4) for an unusable URL, a
    missing PostgreSQL driver or an unreachable database, VM_LEASE_SECONDS out of range."""
    store = store_at(store_url(session), session.paths.state_dir, lease_seconds(session.environ))
    store.clock = session.clock
    return store


def store_at(url: str | None, state_dir: Path, seconds: float = DEFAULT_LEASE_SECONDS) -> FleetStore:
    """The store a URL names; without one, the SQLite file in `state_dir`."""
    if url is None:
        from .store import SqliteFleetStore

        return SqliteFleetStore(state_dir / SQLITE_FILE, lease_seconds=seconds)
    return _postgres(url, seconds)


def existing_store(session: Session) -> FleetStore | None:
    """The store when there is one to read: None when the local SQLite file was never created."""
    if store_url(session) is None and not (session.paths.state_dir / SQLITE_FILE).exists():
        return None
    return open_store(session)


def describe(session: Session) -> str:
    """Where the store is, for people: the SQLite path, or the URL without its password."""
    url = store_url(session)
    return str(session.paths.state_dir / SQLITE_FILE) if url is None else shown_url(url)


def _postgres(url: str, seconds: float) -> FleetStore:
    shown = shown_url(url)
    if urlsplit(url).scheme not in POSTGRES_SCHEMES:
        raise ConfigError(f"unsupported fleet store URL {shown}: use postgresql://user@host:5432/database, or no "
                          "store_url for the local SQLite file")
    try:
        from .store_pg import PostgresFleetStore
    except ImportError:
        raise ConfigError(f"the fleet store {shown} needs the PostgreSQL driver psycopg 3, which is not installed",
                          suggestion=DRIVER_HINT.format(prefix=sys.prefix)) from None
    return PostgresFleetStore(url, shown=shown, lease_seconds=seconds)


def url_secrets(url: str) -> list[str]:
    """The passwords a URL carries (user info, or a `password=` query parameter)."""
    parts = urlsplit(url)
    found = [parts.password, unquote(parts.password)] if parts.password else []
    return found + [v for k, v in parse_qsl(parts.query) if k == "password" and v]


def shown_url(url: str) -> str:
    """The URL with any password replaced by <redacted>."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password:
        userinfo, host = netloc.rsplit("@", 1)
        netloc = f"{userinfo.split(':', 1)[0]}:{HIDDEN}@{host}"
    query = parts.query
    if any(k == "password" for k, _ in parse_qsl(query)):
        query = urlencode([(k, HIDDEN if k == "password" else v) for k, v in parse_qsl(query)], safe="<>")
    return urlunsplit(parts._replace(netloc=netloc, query=query))
