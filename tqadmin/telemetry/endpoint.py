"""The worker's optional Prometheus endpoint: ``GET /metrics`` on a small threaded HTTP server.

It binds 127.0.0.1 unless told otherwise, because the figures name queues and task types: exposing them beyond
the host is the operator's decision (``--metrics-host 0.0.0.0``). Each scrape renders a fresh snapshot; the
server runs on daemon threads so it never holds the worker up when it stops. A scrape that fails is a 500 and
one log line with its traceback, through the logging handler (masked: a store URL in the error keeps its
password hidden), never the traceback ``socketserver`` would print raw to stderr.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

from tqadmin.errors import UsageError
from tqadmin.telemetry.prometheus import CONTENT_TYPE, render
from tqadmin.telemetry.snapshot import WorkerSnapshot

log = logging.getLogger("tqadmin.metrics")


class _LoggingServer(ThreadingHTTPServer):
    def handle_error(self, request: socket.socket | tuple[bytes, socket.socket], client: object) -> None:
        """A request that failed past the handler (the scraper hung up mid-answer): logged, masked."""
        log.warning("metrics request from %s failed", client, exc_info=True)


class MetricsServer:
    """Serve ``render(snapshot())`` at ``/metrics`` while the ``with`` block runs."""

    def __init__(self, host: str, port: int, snapshot: Callable[[], WorkerSnapshot]) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?", 1)[0] != "/metrics":
                    self.send_error(404, "only /metrics is served here")
                    return
                try:
                    body = render(snapshot()).encode("utf-8")
                except Exception:
                    log.error("metrics scrape failed", exc_info=True)
                    self.send_error(500, "metrics unavailable: see the worker's log")
                    return
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                """Scrapes every few seconds would drown the worker's log."""

        try:
            self._server = _LoggingServer((host, port), Handler)
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
