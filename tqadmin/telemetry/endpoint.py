"""The worker's optional Prometheus endpoint: ``GET /metrics`` on a small threaded HTTP server.

It binds 127.0.0.1 unless told otherwise, because the figures name queues and task types: exposing them beyond
the host is the operator's decision (``--metrics-host 0.0.0.0``). Each scrape renders a fresh snapshot; the
server runs on daemon threads so it never holds the worker up when it stops.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

from tqadmin.errors import UsageError
from tqadmin.telemetry.prometheus import CONTENT_TYPE, render
from tqadmin.telemetry.snapshot import WorkerSnapshot


class MetricsServer:
    """Serve ``render(snapshot())`` at ``/metrics`` while the ``with`` block runs."""

    def __init__(self, host: str, port: int, snapshot: Callable[[], WorkerSnapshot]) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?", 1)[0] != "/metrics":
                    self.send_error(404, "only /metrics is served here")
                    return
                body = render(snapshot()).encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                """Scrapes every few seconds would drown the worker's log."""

        try:
            self._server = ThreadingHTTPServer((host, port), Handler)
        except OSError as exc:
            why = exc.strerror or exc
            raise UsageError(
                f"cannot serve metrics on {host}:{port} ({why}); choose another --metrics-port"
            ) from None
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="tq-metrics", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def __enter__(self) -> MetricsServer:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
