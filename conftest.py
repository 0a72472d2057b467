"""Fixtures shared by every test suite of the repository: a throwaway PostgreSQL cluster (tests/pgcluster.py)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "tests"))

from pgcluster import postgres_cluster, postgres_url  # noqa: E402,F401
