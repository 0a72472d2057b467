"""A webhook receiver for the event tests: an HTTP server on 127.0.0.1 in a thread of the test process.

It records every request (headers and body as received) and answers `failures` times 500 before answering 200,
as an unreliable receiver would. `seen()` is the event ids it accepted (answered 2xx), in order, with repeats.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.requests: list[tuple[dict[str, str], bytes, int]] = []  # (headers, body, status answered)
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver._lock:
                    status = 500 if receiver.failures > 0 else 200
                    receiver.failures -= status == 500
                    receiver.requests.append((dict(self.headers.items()), body, status))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                del args  # quiet: the test reads `requests`

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook?token=in-the-url"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def accepted(self) -> list[tuple[dict[str, str], bytes]]:
        with self._lock:
            return [(h, b) for h, b, status in self.requests if status == 200]

    def seen(self) -> list[str]:
        """The ids of the events accepted, in order (an id twice: delivered twice)."""
        return [json.loads(body)["id"] for _, body in self.accepted()]
