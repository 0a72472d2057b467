"""How `vm` writes: results to stdout (table or JSON), progress, warnings and errors to stderr.

Colour only on a terminal and never when NO_COLOR is set. Every line written to stderr passes through
`redact`, which removes the secret values the session has seen (belt and braces: nothing should carry them).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import IO, Any

import click

from ..errors import VmError

TABLE, JSON = "table", "json"
ERASE_LINE = "\x1b[K"  # ANSI: erase from the cursor to the end of the line
FORMATS = (TABLE, JSON)

# Colour of a cell value (states and capability answers); anything else is plain.
STYLES: Mapping[str, Mapping[str, Any]] = {
    "running": {"fg": "green"}, "yes": {"fg": "green"}, "ok": {"fg": "green"},
    "stopped": {"dim": True}, "terminated": {"dim": True}, "-": {"dim": True}, "no": {"dim": True},
    "error": {"fg": "red"}, "unknown": {"fg": "red"}, "broken": {"fg": "red"}, "missing": {"fg": "red"},
    "preempted": {"fg": "red"},
    "auth refused": {"fg": "red"}, "unreachable": {"fg": "red"},
    "creating": {"fg": "yellow"}, "starting": {"fg": "yellow"}, "stopping": {"fg": "yellow"},
    "rebooting": {"fg": "yellow"}, "terminating": {"fg": "yellow"}, "not configured": {"dim": True},
}


def use_color(stream: IO[str], environ: Mapping[str, str] = os.environ) -> bool:
    """Colour when `stream` is a terminal and NO_COLOR is unset or empty (https://no-color.org)."""
    return not environ.get("NO_COLOR") and hasattr(stream, "isatty") and stream.isatty()


class Output:
    def __init__(self, fmt: str = TABLE, *, quiet: bool = False) -> None:
        self.format = fmt
        self.quiet = quiet
        self.redact: Callable[[str], str] = lambda text: text
        self._lock = threading.Lock()
        self._status = ""  # the line drawn in place at the bottom of stderr (a terminal), "" when there is none

    @property
    def json(self) -> bool:
        return self.format == JSON

    # ----------------------------------------------------------------------------------------------- stdout
    def data(self, value: Any) -> None:
        """A JSON document on stdout, indented by two spaces, UTF-8 (a value JSON has no type for as its str).
        msgspec's encoder: the standard library's indenting one is pure Python, about six times slower on a
        10,000-row `vm cost --by vm -o json`."""
        import msgspec

        click.echo(msgspec.json.format(msgspec.json.encode(value, enc_hook=str), indent=2).decode())

    def table(self, headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """Aligned columns on stdout; None cells show as "-"."""
        cells = [[_cell(v) for v in row] for row in rows]
        widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
        color = use_color(sys.stdout)
        click.echo(_line([click.style(h, bold=True) if color else h for h in headers], headers, widths))
        for row in cells:
            click.echo(_line([_styled(v, color) for v in row], row, widths))

    def line(self, text: str) -> None:
        """One plain line on stdout."""
        click.echo(text)

    def pairs(self, rows: Iterable[tuple[str, Any]]) -> None:
        """`key  value` lines on stdout (for single records such as `vm config show`)."""
        rows = list(rows)
        width = max((len(k) for k, _ in rows), default=0)
        for key, value in rows:
            click.echo(f"{key.ljust(width)}  {_cell(value)}")

    # ----------------------------------------------------------------------------------------------- stderr
    def progress(self, message: str) -> None:
        """One progress line on stderr, unless -q."""
        if not self.quiet:
            self._err(words(message))

    def debug(self, text: str) -> None:
        """Diagnostics of --debug on stderr (even with -q)."""
        self._err(text)

    def notice(self, message: str) -> None:
        """A line on stderr that -q does not silence (what a confirmation question is about)."""
        self._err(message)

    def warn(self, message: str) -> None:
        self._err(f"vm: warning: {words(message)}")

    def error(self, error: VmError, failures: Sequence[tuple[str, VmError]] = ()) -> None:
        """The error of a command (and of each failed target) on stderr: plain, or one JSON object."""
        from .spelling import render

        if self.json:
            body = {"error": _error_json(error)}
            if failures:
                body["error"]["failures"] = [{"target": t, **_error_json(e)} for t, e in failures]
            self._err(json.dumps(body))
            return
        for target, failure in failures:
            self._err(f"vm: error: {target}: {words(failure.message)}")
        self._err(f"vm: error: {words(error.message)}")
        if error.hint is not None:
            self._err(f"hint: {render(error.hint)}")

    def status(self, text: str) -> None:
        """Draw `text` as the status line: one line at the bottom of stderr, redrawn in place (`\\r`, erase to
        the end of the line) while lines written meanwhile scroll above it. For a terminal only: the caller
        checks `sys.stderr.isatty()`. Nothing under -q."""
        if self.quiet:
            return
        with self._lock:
            self._status = self.redact(text)
            self._draw_status()

    def end_status(self) -> None:
        """Leave the status line as it was last drawn, ending it with a newline; later lines start below it."""
        with self._lock:
            if self._status:
                sys.stderr.write("\n")
                sys.stderr.flush()
            self._status = ""

    def _draw_status(self) -> None:
        sys.stderr.write(f"\r{self._status}{ERASE_LINE}")
        sys.stderr.flush()

    def _err(self, text: str) -> None:
        with self._lock:
            if self._status:
                sys.stderr.write(f"\r{ERASE_LINE}")
            click.echo(self.redact(text), err=True, color=use_color(sys.stderr))
            if self._status:
                self._draw_status()


def words(text: str) -> str:
    """A message as printed: settings spelled as options (cli.hints.words); plain text as it is."""
    from .spelling import words as spelled

    return spelled(text)


def _error_json(error: VmError) -> dict[str, object]:
    """An error's JSON body with its message as printed and its hint (`suggestion`, `next`)."""
    from .spelling import to_json

    return {**error.to_json()["error"], "message": words(error.message), **to_json(error.hint)}


def _cell(value: Any) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def _styled(text: str, color: bool) -> str:
    style = STYLES.get(text) if color else None
    return click.style(text, **style) if style else text


def _line(shown: Sequence[str], plain: Sequence[str], widths: Sequence[int]) -> str:
    """Pad by the plain text's width, so colour codes do not break the alignment."""
    padded = [s + " " * (w - len(p)) for s, p, w in zip(shown, plain, widths, strict=True)]
    return "  ".join(padded).rstrip()
