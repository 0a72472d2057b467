"""The reliability suite's plumbing: which tests run, the fixtures, and the figures printed at the end.

Tests marked `soak` (registered in pyproject.toml) are the long runs: they are skipped unless
`VM_RELIABILITY=full` is set or the marker is selected with `-m soak`. Everything else is the fast subset that
`hatch test` runs. The helpers live in `reliability_kit/` next to this file (put on sys.path here, since the
suite runs with --import-mode=importlib).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from reliability_kit import sizes  # noqa: E402
from reliability_kit.figures import FIGURES, Figures  # noqa: E402
from reliability_kit.home import VmHome  # noqa: E402

SKIP_REASON = "long reliability run: set VM_RELIABILITY=full or select it with -m soak (tests/reliability/README.md)"


def _soak_selected(config: pytest.Config) -> bool:
    return sizes.full_requested() or "soak" in (config.getoption("markexpr", "") or "")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _soak_selected(config):
        return
    skip = pytest.mark.skip(reason=SKIP_REASON)
    for item in items:
        if item.get_closest_marker("soak") is not None:
            item.add_marker(skip)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int,
                            config: pytest.Config) -> None:
    if not FIGURES:
        return
    mode = "full (soak included)" if _soak_selected(config) else "fast subset"
    terminalreporter.write_sep("=", "reliability figures")
    terminalreporter.write_line(f"seed {sizes.seed()} (replay: VM_RELIABILITY_SEED={sizes.seed()}), mode: {mode}")
    for line in FIGURES.lines():
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def figures() -> Figures:
    return FIGURES


@pytest.fixture
def home_factory(tmp_path: Path) -> Iterator[Callable[..., VmHome]]:
    """home_factory(time_scale="0.002") -> a fresh VM_HOME; its mock clouds are stopped afterwards."""
    homes: list[VmHome] = []

    def make(time_scale: str = "0.002") -> VmHome:
        home = VmHome(tmp_path / f"vm-home-{len(homes)}", time_scale)
        homes.append(home)
        return home

    yield make
    for home in homes:
        home.stop()


@pytest.fixture
def home(home_factory: Callable[..., VmHome]) -> VmHome:
    """A fresh VM_HOME whose mock clouds are already running."""
    made = home_factory()
    made.start()
    return made
