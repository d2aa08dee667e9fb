"""``GET /metrics`` on a small HTTP server of one thread: the worker's optional endpoint and the exporter's.

It binds 127.0.0.1 unless told otherwise, because the figures name queues and task types: exposing them beyond
the host is the operator's decision (``--metrics-host 0.0.0.0``, ``--listen 0.0.0.0:9808``, ``[::]:9808``).
Each scrape collects fresh families and encodes them as the scraper asks (``Accept``: OpenMetrics or the
classic text, ``prometheus_client``'s encoders). A scrape that fails is a 500 and one log line with its
traceback, through the logging handler (masked: a store URL in the error keeps its password hidden).

Why one thread and a selector rather than ``http.server``'s thread per connection: a client costs a socket,
never a thread, however long it takes. Each connection has ``timeout_s`` in all (from connect to the last
byte of the answer, so a request trickled a byte at a time or a scraper that stops reading is reset at its
deadline, and the body it held is let go); at most ``max_connections`` are open at once, and one past that is
closed as soon as it is accepted, without an answer (one warning says so each time the server fills up).
Scrapes are encoded one after another on this thread: they were already, behind the stable part's lock.
"""

from __future__ import annotations

import contextlib
import logging
import re
import selectors
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from types import TracebackType

from prometheus_client.core import Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector

from tqadmin.errors import UsageError

log = logging.getLogger("tqadmin.metrics")

TIMEOUT_S = 30.0  # a connection's whole life: longer than Prometheus's default scrape_timeout (10 s)
MAX_CONNECTIONS = 512  # open at once; an idle one costs a socket and a few KB, not a thread
MAX_REQUEST_BYTES = 16 * 1024  # a scraper's request is a few hundred bytes
POLL_S = 0.5  # how often deadlines and a stop are looked at when no socket is ready
STOP_S = 5.0  # how long a stop waits for a scrape being encoded (10,000 queues: about a second)
_HEAD_END = re.compile(rb"\r?\n\r?\n")
_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close with a reset, dropping what is still queued


def address(host: str, port: int) -> str:
    """``host:port`` as a URL writes it (``[::1]:9808`` for an IPv6 address)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


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
    the encoding is most of a scrape's time, and the figures change only when the exporter polls. The bytes
    are shared by every answer that carries them, so scrapers being written to hold one copy between them."""

    def __init__(self, stable: Stable) -> None:
        self._stable = stable
        self._kept: dict[str, tuple[Hashable, bytes]] = {}

    def body(self, encode: Callable[[Collector], bytes], content_type: str) -> bytes:
        key, produce = self._stable()
        kept = self._kept.get(content_type)
        if kept is None or kept[0] != key:
            kept = self._kept[content_type] = (key, encode(_Collected(produce())))
        return kept[1]


@dataclass
class _Connection:
    sock: socket.socket
    peer: str
    deadline: float
    request: bytearray = field(default_factory=bytearray)
    answer: deque[memoryview] = field(default_factory=deque)  # empty until the request is read


def _response(status: HTTPStatus, content_type: str, *body: bytes) -> list[bytes]:
    head = (
        f"HTTP/1.1 {status.value} {status.phrase}\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {sum(map(len, body))}\r\nConnection: close\r\n\r\n"
    )
    return [head.encode("ascii"), *body]


def _error(status: HTTPStatus, why: str) -> list[bytes]:
    return _response(status, "text/plain; charset=utf-8", f"{why}\n".encode())


def _field(fields: list[str], wanted: str) -> str:
    """The first header field of that (lower-case) name, or ``""``."""
    for line in fields:
        name, _, value = line.partition(":")
        if name.strip().lower() == wanted:
            return value.strip()
    return ""


def _listening(host: str, port: int) -> socket.socket:
    """A bound, listening, non-blocking socket; an IPv6 address (``::1``, ``::``) gets an IPv6 one, and
    ``::`` takes IPv4 scrapers too, whatever the system's default."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind((host, port))
        sock.listen()
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


class MetricsServer:
    """Serve ``collect()`` at ``/metrics`` while the ``with`` block runs, followed by ``stable``'s families
    when given (encoded once per key); ``option`` names the setting that chose the port, for the error when
    it is taken. ``timeout_s`` and ``max_connections`` are the limits the module's docstring explains."""

    def __init__(
        self,
        host: str,
        port: int,
        collect: Families,
        option: str = "--metrics-port",
        stable: Stable | None = None,
        *,
        timeout_s: float = TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self._collect = collect
        self._encoded = _Encoded(stable) if stable is not None else None
        self._timeout_s = timeout_s
        self._max_connections = max_connections
        try:
            self._listener = _listening(host, port)
        except OSError as exc:
            why = exc.strerror or exc
            raise UsageError(
                f"cannot serve metrics on {address(host, port)} ({why}); choose another {option}"
            ) from None
        self._selector = selectors.DefaultSelector()
        self._open: dict[socket.socket, _Connection] = {}
        self._full_said = False
        self._accept_after = 0.0  # while the process is out of file descriptors, accepting waits
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="tq-metrics", daemon=True)

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    def __enter__(self) -> MetricsServer:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop(STOP_S)

    def stop(self, timeout_s: float) -> bool:
        """Stop serving: the connections open are reset and the port let go. A scrape being encoded is
        waited for up to ``timeout_s``; ``False`` when it still runs then (its thread is a daemon: it ends
        with the process, the port with it)."""
        self._stop.set()
        self._thread.join(max(timeout_s, 0.0))
        if self._thread.is_alive():
            return False
        self._listener.close()
        return True

    def _serve(self) -> None:
        self._selector.register(self._listener, selectors.EVENT_READ)
        try:
            while not self._stop.is_set():
                for key, _ in self._selector.select(POLL_S):
                    if key.data is None:
                        self._accept()
                    elif key.data.answer:
                        self._write(key.data)
                    else:
                        self._read(key.data)
                now = time.monotonic()
                self._resume_accepting(now)
                self._expire(now)
        finally:
            for connection in list(self._open.values()):
                self._close(connection, reset=True)
            self._selector.close()

    def _accept(self) -> None:
        try:
            sock, peer = self._listener.accept()
        except BlockingIOError:
            return  # another process or a reset took it first
        except OSError as exc:  # out of file descriptors: the listener would stay ready and spin this loop
            log.warning("metrics: cannot accept a connection (%s); trying again in 1 s", exc.strerror or exc)
            self._selector.unregister(self._listener)
            self._accept_after = time.monotonic() + 1.0
            return
        if len(self._open) >= self._max_connections:
            sock.close()
            if not self._full_said:
                log.warning(
                    "metrics: %d connections open, the most served at once; refusing more until some close",
                    len(self._open),
                )
                self._full_said = True
            return
        self._full_said = False
        sock.setblocking(False)
        connection = _Connection(sock, address(*peer[:2]), time.monotonic() + self._timeout_s)
        self._open[sock] = connection
        self._selector.register(sock, selectors.EVENT_READ, connection)

    def _read(self, connection: _Connection) -> None:
        try:
            chunk = connection.sock.recv(MAX_REQUEST_BYTES)
        except BlockingIOError:
            return
        except OSError:
            self._close(connection, reset=True)
            return
        if not chunk:  # the client went away before asking
            self._close(connection, reset=False)
            return
        connection.request += chunk
        end = _HEAD_END.search(connection.request)
        if end is not None:
            answer = self._answer(bytes(connection.request[: end.start()]))
        elif len(connection.request) > MAX_REQUEST_BYTES:
            answer = _error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "request too large")
        else:
            return
        connection.answer.extend(memoryview(part) for part in answer)
        self._selector.modify(connection.sock, selectors.EVENT_WRITE, connection)
        self._write(connection)

    def _answer(self, head: bytes) -> list[bytes]:
        line, *fields = head.decode("latin-1").splitlines()
        words = line.split()
        if len(words) != 3 or not words[2].startswith("HTTP/"):
            return _error(HTTPStatus.BAD_REQUEST, "bad request line")
        method, target, _ = words
        if method != "GET":
            return _error(HTTPStatus.METHOD_NOT_ALLOWED, "only GET is served here")
        if target.split("?", 1)[0] != "/metrics":
            return _error(HTTPStatus.NOT_FOUND, "only /metrics is served here")
        return self._scrape(_field(fields, "accept"))

    def _scrape(self, accept: str) -> list[bytes]:
        encode, content_type = choose_encoder(accept)
        try:
            body = encode(_Collected(self._collect()))
            if self._encoded is None:
                return _response(HTTPStatus.OK, content_type, body)
            stable = self._encoded.body(encode, content_type)
        except Exception:
            log.error("metrics scrape failed", exc_info=True)
            return _error(HTTPStatus.INTERNAL_SERVER_ERROR, "metrics unavailable: see the log")
        return _response(HTTPStatus.OK, content_type, body.removesuffix(EOF_LINE), stable)

    def _write(self, connection: _Connection) -> None:
        answer = connection.answer
        while answer:
            try:
                sent = connection.sock.send(answer[0])
            except BlockingIOError:
                return
            except OSError:  # the scraper hung up mid-answer
                self._close(connection, reset=True)
                return
            if sent < len(answer[0]):
                answer[0] = answer[0][sent:]
                return  # the socket's buffer is full: the selector says when it has room
            answer.popleft()
        self._close(connection, reset=False)

    def _resume_accepting(self, now: float) -> None:
        if self._accept_after and now >= self._accept_after:
            self._accept_after = 0.0
            self._selector.register(self._listener, selectors.EVENT_READ)

    def _expire(self, now: float) -> None:
        for connection in [c for c in self._open.values() if c.deadline <= now]:
            log.debug("metrics: connection from %s reset after %g s", connection.peer, self._timeout_s)
            self._close(connection, reset=True)

    def _close(self, connection: _Connection, reset: bool) -> None:
        """Closed once its answer is all handed to the kernel; reset (what is queued dropped) when it is
        past its deadline or broken, so nothing of it outlives the connection."""
        del self._open[connection.sock]
        self._selector.unregister(connection.sock)
        if reset:
            with contextlib.suppress(OSError):  # a socket already reset by the client
                connection.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
        connection.sock.close()
