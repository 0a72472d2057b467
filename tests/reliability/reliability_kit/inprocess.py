"""`vm` run in this process (the function the `vm` script calls), for property tests that need hundreds of runs.

`run` is `vm_core.cli.main.run`: it parses argv exactly like the executable (Python decodes undecodable argv
bytes to lone surrogates, which the strategies produce too) and never raises. Output is captured from
sys.stdout/sys.stderr; the environment is the home's, as for a subprocess.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from unittest import mock

from vm_core.cli.main import run

from .audit import Store
from .home import Run, VmHome

EXIT_CODES = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 130}  # the documented ones (`vm --help`)


class _Stream(io.StringIO):
    """A captured text stream that encodes like the real one: UTF-8, `strict` for stdout (a lone surrogate
    written there would crash a real `vm`), `backslashreplace` for stderr (Python's default)."""

    def __init__(self, errors: str) -> None:
        super().__init__()
        self.errors_mode = errors

    def write(self, text: str) -> int:
        return super().write(text.encode("utf-8", self.errors_mode).decode("utf-8"))


@contextlib.contextmanager
def environment(home: VmHome) -> Iterator[None]:
    with mock.patch.dict(os.environ, home.env, clear=True):
        yield


def vm(home: VmHome, argv: Sequence[str]) -> Run:
    out, err = _Stream("strict"), _Stream("backslashreplace")
    with environment(home), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(list(argv))
    return Run(tuple(argv), code, out.getvalue(), err.getvalue())


@dataclass(frozen=True)
class State:
    """What a command must not change when it is refused: the clouds, the store, the config file."""

    inventory: tuple[tuple[str, str, str], ...]
    store: Any
    config: tuple[bytes, int] | None

    @classmethod
    def of(cls, home: VmHome) -> State:
        inventory = tuple(sorted((vm["provider"], vm["id"], vm["state"]) for vm in home.inventory()))
        store = Store.read(home.db)
        config_file = home.path / "config.toml"
        config = (config_file.read_bytes(), config_file.stat().st_mode) if config_file.exists() else None
        return cls(inventory, (store.fleets, store.members), config)


def assert_clean_failure(result: Run, codes: set[int]) -> None:
    """The command ended with one of `codes`, and without a crash: no traceback, no internal error, and a
    message on stderr when it failed (an error line, or the usage of a command given no arguments)."""
    assert result.code in codes, result.describe()
    assert result.code in EXIT_CODES, result.describe()
    assert "Traceback" not in result.err and "internal error: " not in result.err, result.describe()
    if result.code != 0:
        assert "error" in result.err or result.err.startswith("Usage:"), result.describe()
