"""The figures the suite prints at the end of the run (conftest's pytest_terminal_summary).

Counters are added by the tests as they go; the headline keys come first, in a fixed order. `leaked`,
`duplicated`, `lost` and `mismatched` must stay 0: every test asserts its own findings too.
"""

from __future__ import annotations

import threading
from collections import Counter

HEADLINE = ("cycles", "faults injected", "leaked", "duplicated", "lost", "mismatched")


class Figures:
    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def add(self, key: str, amount: int = 1) -> None:
        with self._lock:
            self._counts[key] += amount

    def get(self, key: str) -> int:
        with self._lock:
            return self._counts[key]

    def __bool__(self) -> bool:
        return bool(self._counts)

    def lines(self) -> list[str]:
        """The headline line (always with every headline key), then the other counters, one per line."""
        with self._lock:
            counts = dict(self._counts)
        head = ", ".join(f"{key} {counts.get(key, 0)}" for key in HEADLINE)
        rest = [f"{key}: {value}" for key, value in sorted(counts.items()) if key not in HEADLINE]
        return [head, *rest]


FIGURES = Figures()
