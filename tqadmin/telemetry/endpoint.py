"""``GET /metrics`` on a small threaded HTTP server: the worker's optional endpoint and the exporter's.

It binds 127.0.0.1 unless told otherwise, because the figures name queues and task types: exposing them beyond
the host is the operator's decision (``--metrics-host 0.0.0.0``, ``--listen 0.0.0.0:9808``). Each scrape
collects fresh families and encodes them as the scraper asks (``Accept``: OpenMetrics or the classic text,
``prometheus_client``'s encoders); the server runs on daemon threads so it never holds its process up when
it stops. A scrape that fails is a 500 and one log line with its traceback, through the logging handler
(masked: a store URL in the error keeps its password hidden), never the traceback ``socketserver`` would
print raw to stderr.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

from prometheus_client.core import Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector

from tqadmin.errors import UsageError

log = logging.getLogger("tqadmin.metrics")


class _LoggingServer(ThreadingHTTPServer):
    def handle_error(self, request: socket.socket | tuple[bytes, socket.socket], client: object) -> None:
        """A request that failed past the handler (the scraper hung up mid-answer): logged, masked."""
        log.warning("metrics request from %s failed", client, exc_info=True)


class _Collected(Collector):
    """Families already collected, for an encoder that asks a registry for them."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self._families = list(families)

    def collect(self) -> Iterator[Metric]:
        return iter(self._families)


Families = Callable[[], Iterable[Metric]]
Stable = Callable[[], tuple[Hashable, Families]]
"""A key and the families that stay the same while it does (the exporter's last poll)."""

EOF_LINE = b"# EOF\n"  # OpenMetrics ends with it, once


class _Encoded:
    """The stable families encoded once per format and key, however many scrapers ask: over 10,000 queues
    the encoding is most of a scrape's time, and the figures change only when the exporter polls."""

    def __init__(self, stable: Stable) -> None:
        self._stable = stable
        self._lock = threading.Lock()  # scrapers arriving together wait for one encoding, not do three
        self._kept: dict[str, tuple[Hashable, bytes]] = {}

    def body(self, encode: Callable[[Collector], bytes], content_type: str) -> bytes:
        key, produce = self._stable()
        with self._lock:
            kept = self._kept.get(content_type)
            if kept is None or kept[0] != key:
                kept = self._kept[content_type] = (key, encode(_Collected(produce())))
        return kept[1]


class MetricsServer:
    """Serve ``collect()`` at ``/metrics`` while the ``with`` block runs, followed by ``stable``'s families
    when given (encoded once per key); ``option`` names the setting that chose the port, for the error when
    it is taken."""

    def __init__(
        self,
        host: str,
        port: int,
        collect: Families,
        option: str = "--metrics-port",
        stable: Stable | None = None,
    ) -> None:
        encoded = _Encoded(stable) if stable is not None else None

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?", 1)[0] != "/metrics":
                    self.send_error(404, "only /metrics is served here")
                    return
                encode, content_type = choose_encoder(self.headers.get("Accept", ""))
                try:
                    body = encode(_Collected(collect()))
                    if encoded is not None:
                        body = body.removesuffix(EOF_LINE) + encoded.body(encode, content_type)
                except Exception:
                    log.error("metrics scrape failed", exc_info=True)
                    self.send_error(500, "metrics unavailable: see the log")
                    return
                self.send_response(200)
                self.send_header("Content-Type", content_type)
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
                f"cannot serve metrics on {host}:{port} ({why}); choose another {option}"
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
