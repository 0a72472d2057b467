"""A plugin's `shapes` (its rows of the GPU catalog) from a TOML file next to its module, read on first use."""

from __future__ import annotations

import threading
from importlib import resources

from ..catalog import ShapeEntry, read_shapes


class ShapesFile:
    """The plugin attribute `shapes`: `provider`'s rows of the `[[shape]]` tables of `filename` in `package`
    (vm_core.catalog.read_shapes), read once, when first asked for: loading the plugin reads no file."""

    def __init__(self, provider: str, package: str, filename: str) -> None:
        self._provider = provider
        self._package = package
        self._filename = filename
        self._shapes: tuple[ShapeEntry, ...] | None = None
        self._lock = threading.Lock()

    def __get__(self, plugin: object, owner: type | None = None) -> tuple[ShapeEntry, ...]:
        with self._lock:
            if self._shapes is None:
                source = resources.files(self._package).joinpath(self._filename)
                self._shapes = read_shapes(self._provider, source)
            return self._shapes
