"""What every driver shares: the mock's endpoints, and one result line per call.

A driver runs in its client's own virtual environment, without this repository's packages, so this file uses
the standard library only. Results go to the JSON-lines file named by `OC_RESULTS` (one object per call:
client, call, result PASS/FAIL/INFO, detail); `run.py` prints them as a table. Endpoints come from the mock's
`endpoints.json`, named by `OC_ENDPOINTS`; the clouds' own credential files are under `HOME`, written by
`mock-clouds credentials`.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


def endpoints() -> dict[str, Any]:
    """The running mock's endpoints.json. Raises KeyError when `OC_ENDPOINTS` is unset."""
    with open(os.environ["OC_ENDPOINTS"], encoding="utf-8") as f:
        document: dict[str, Any] = json.load(f)
    return document


class Report:
    """Records each call of one client. Never raises for a failed call: the failure is recorded and the run goes
    on, so one missing endpoint does not hide the calls after it."""

    def __init__(self, client: str) -> None:
        self.client = client
        self.path = os.environ.get("OC_RESULTS", "")
        self.failed = 0

    def _write(self, call: str, result: str, detail: str) -> None:
        line = {"client": self.client, "call": call, "result": result, "detail": detail[:400]}
        print(f"[{self.client}] {result:4} {call}: {detail[:200]}", file=sys.stderr, flush=True)
        if self.path:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(line) + "\n")

    def info(self, call: str, detail: str) -> None:
        self._write(call, "INFO", detail)

    def check(self, call: str, ok: bool, detail: str) -> bool:
        self._write(call, "PASS" if ok else "FAIL", detail)
        self.failed += 0 if ok else 1
        return ok

    def run(self, call: str, fn: Callable[[], T], describe: Callable[[T], str] = repr) -> T | None:
        """Calls fn(); PASS with describe(result), or FAIL with the exception (None is returned then)."""
        started = time.monotonic()
        try:
            value = fn()
        except BaseException as e:  # noqa: BLE001 - a client's own exception types vary; KeyboardInterrupt too
            if isinstance(e, KeyboardInterrupt):
                raise
            where = traceback.extract_tb(e.__traceback__)[-1]
            self.check(call, False, f"{type(e).__name__}: {e} (at {os.path.basename(where.filename)}:{where.lineno})")
            return None
        self.check(call, True, f"{describe(value)} [{time.monotonic() - started:.1f}s]")
        return value


class HttpLog:
    """Counts the HTTP answers a `requests`-based client gets (read-only: wraps `HTTPAdapter.send` and returns
    its response untouched), so a summary can show the 429s a client met and waited out."""

    def __init__(self) -> None:
        import requests.adapters

        self.answers: list[tuple[str, str, int]] = []
        original = requests.adapters.HTTPAdapter.send
        log = self.answers

        def send(adapter: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
            response = original(adapter, request, *args, **kwargs)
            log.append((request.method, request.path_url.split("?")[0], response.status_code))
            if response.status_code == 429 and os.environ.get("OC_DEBUG"):
                print(f"429 {request.method} {request.path_url} {time.monotonic():.2f} {response.text[:200]}",
                      file=sys.stderr)
            return response

        requests.adapters.HTTPAdapter.send = send  # type: ignore[method-assign]

    def summary(self) -> str:
        limited = [f"{m} {p}" for m, p, s in self.answers if s == 429]
        text = f"{len(self.answers)} HTTP requests, {len(limited)} answered 429"
        return text + (f" ({', '.join(sorted(set(limited)))})" if limited else "")


def wait_until(predicate: Callable[[], T], timeout: float, interval: float = 0.5) -> T:
    """Polls predicate() until it returns a truthy value; raises TimeoutError after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"not reached within {timeout:.0f}s (last: {value!r})")
        time.sleep(interval)


@contextlib.contextmanager
def quiet_logs() -> Iterator[None]:
    """Lowers the root logger to WARNING for noisy clients."""
    import logging

    logging.basicConfig(level=logging.WARNING)
    yield
