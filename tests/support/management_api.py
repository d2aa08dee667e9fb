"""A local fake of RabbitMQ's management HTTP API, for fault injection and scale tests.

It serves the calls tqadmin makes (paged, column-filtered ``/api/queues/<vhost>``, one queue, ``/api/nodes``,
exchange bindings) from an in-memory model that a test seeds (``seed(10_000)``), and answers
any path with a canned failure instead (``fail("/api/queues", status(500))``): 401/403/404/5xx, garbage, a
wrong shape, a slow or trickling answer, a huge body, a dropped connection, a truncated body (or one cut by
a connection reset).

    with FakeManagementAPI() as api:
        api.seed(3, ready=5)
        api.fail("/api/nodes", garbage())
        main(["queues", "--management-url", api.url])

Runs on 127.0.0.1 at a free port in daemon threads; ``api.requests`` records every path asked for and
``api.requested_at`` when (``time.monotonic()``, path).
"""

from __future__ import annotations

import base64
import json
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self
from urllib.parse import parse_qs, unquote, urlsplit

Answer = Callable[["_Handler"], None]
MAX_PAGE_SIZE = 500


# ---- canned answers -------------------------------------------------------------------------------------


def status(code: int, reason: str = "injected failure") -> Answer:
    """An HTTP error with RabbitMQ's JSON error body."""
    return lambda h: h.send_body(code, json.dumps({"error": "injected", "reason": reason}).encode())


def garbage(raw: bytes = b"<html><body>502 Bad Gateway (a proxy)</body></html>") -> Answer:
    """200 with a body that is not JSON."""
    return lambda h: h.send_body(200, raw, content_type="text/html")


def shape(value: Any) -> Answer:
    """200 with valid JSON of whatever shape the test wants (a list for an object, strings for numbers...)."""
    return lambda h: h.send_body(200, json.dumps(value).encode())


def slow(seconds: float, then: Answer | None = None) -> Answer:
    """Wait before answering (``then``, or the normal answer): a broker that hangs."""

    def answer(h: _Handler) -> None:
        h.api.stopping.wait(seconds)
        (then or _Handler.serve_model)(h)

    return answer


def trickle(chunks: int = 50, every_s: float = 0.1) -> Answer:
    """A body sent a few bytes at a time, each well within a read timeout but slow in total."""

    def answer(h: _Handler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(chunks))
        h.end_headers()
        for _ in range(chunks):
            if h.api.stopping.wait(every_s):
                return
            h.wfile.write(b" ")
            h.wfile.flush()

    return answer


def huge(size: int, announce: bool = False) -> Answer:
    """A body of ``size`` bytes of a valid-looking JSON array; ``announce`` sends its Content-Length too,
    otherwise it streams until done or the client hangs up."""

    def answer(h: _Handler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        if announce:
            h.send_header("Content-Length", str(size))
        else:
            h.send_header("Connection", "close")
            h.close_connection = True
        h.end_headers()
        chunk = b'{"name": "x"},' * 4096
        sent = 0
        try:
            h.wfile.write(b"[")
            while sent < size:
                h.wfile.write(chunk)
                sent += len(chunk)
        except OSError:
            pass  # the client stopped reading: what we wanted

    return answer


def dropped() -> Answer:
    """Close the connection without a response: a crashed broker or a load balancer resetting."""

    def answer(h: _Handler) -> None:
        h.close_connection = True
        h.connection.close()

    return answer


def truncated(reset: bool = False) -> Answer:
    """Announce a body, send half of it, and hang up: an orderly close, or with ``reset`` a connection reset
    (RST), as a broker or proxy that died while answering leaves it."""

    def answer(h: _Handler) -> None:
        body = b'{"items": [{"name": "a"}], "page_count": 1, "filtered_count"'
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body) * 2))
        h.end_headers()
        h.wfile.write(body)
        h.wfile.flush()
        h.close_connection = True
        if reset:
            h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        h.connection.close()

    return answer


# ---- the model ------------------------------------------------------------------------------------------


@dataclass
class _Fault:
    prefix: str
    answer: Answer
    times: int | None  # None: every time


class FakeManagementAPI:
    """The fake server; use as a context manager (or call :meth:`start` and :meth:`stop`)."""

    def __init__(self, username: str = "guest", password: str = "guest") -> None:
        self.username = username
        self.password = password
        self.queues: dict[str, dict[str, dict[str, Any]]] = {"/": {}}  # vhost -> name -> item
        self.nodes: list[dict[str, Any]] = [
            {"name": "rabbit@fake", "running": True, "mem_alarm": False, "disk_free_alarm": False}
        ]
        self.bindings: dict[tuple[str, str], list[dict[str, Any]]] = {}  # (vhost, exchange) -> bindings
        self.requests: list[str] = []
        self.requested_at: list[tuple[float, str]] = []
        self.stopping = threading.Event()
        self._faults: list[_Fault] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._server.api = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- seeding

    def add_queue(
        self,
        name: str,
        vhost: str = "/",
        *,
        ready: int = 0,
        unacked: int = 0,
        consumers: int = 0,
        publish_rate: float = 0.0,
        deliver_rate: float = 0.0,
        ack_rate: float = 0.0,
        head_message_timestamp: int | None = None,
        arguments: Mapping[str, Any] | None = None,
        policy: Mapping[str, Any] | None = None,
        **raw: Any,
    ) -> dict[str, Any]:
        """A queue as RabbitMQ lists it; ``raw`` overrides any field (to send a wrong type, say)."""
        item: dict[str, Any] = {
            "name": name,
            "vhost": vhost,
            "type": "classic",
            "state": "running",
            "durable": True,
            "messages": ready + unacked,
            "messages_ready": ready,
            "messages_unacknowledged": unacked,
            "consumers": consumers,
            "arguments": dict(arguments or {}),
            "effective_policy_definition": dict(policy or {}),
            "head_message_timestamp": head_message_timestamp,
            "message_stats": {
                "publish_details": {"rate": publish_rate},
                "deliver_get_details": {"rate": deliver_rate},
                "ack_details": {"rate": ack_rate},
            },
            "backing_queue_status": {"mode": "default", "q1": 0, "len": ready},  # noise a full listing has
        }
        item.update(raw)
        with self._lock:
            self.queues.setdefault(vhost, {})[name] = item
        return item

    def seed(self, count: int, vhost: str = "/", prefix: str = "q", **figures: Any) -> list[str]:
        """``count`` queues named ``{prefix}00000``...; returns their names."""
        names = [f"{prefix}{i:05d}" for i in range(count)]
        for name in names:
            self.add_queue(name, vhost, **figures)
        return names

    def bind(self, exchange: str, queue: str, routing_key: str, vhost: str = "/") -> None:
        self.bindings.setdefault((vhost, exchange), []).append(
            {"destination": queue, "destination_type": "queue", "routing_key": routing_key}
        )

    def fail(self, prefix: str, answer: Answer, times: int | None = None) -> None:
        """Answer requests whose path starts with ``prefix`` with ``answer`` (``times`` times, or always)."""
        with self._lock:
            self._faults.append(_Fault(prefix, answer, times))

    def heal(self) -> None:
        """Drop every injected failure: the API answers from its model again."""
        with self._lock:
            self._faults.clear()

    def calls_to(self, prefix: str) -> int:
        return sum(1 for path in self.requests if path.startswith(prefix))

    def _fault_for(self, path: str) -> Answer | None:
        with self._lock:
            for fault in self._faults:
                if path.startswith(fault.prefix) and fault.times != 0:
                    if fault.times is not None:
                        fault.times -= 1
                    return fault.answer
        return None


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up mid-answer is what fault tests do: no traceback on the test's stderr."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ThreadingHTTPServer

    @property
    def api(self) -> FakeManagementAPI:
        return self.server.api  # type: ignore[attr-defined,no-any-return]

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read stderr."""

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        self.api.requests.append(self.path)
        self.api.requested_at.append((time.monotonic(), self.path))
        fault = self.api._fault_for(path)
        if fault is not None:
            fault(self)
        elif not self._authorised():
            status(401, "Login failed")(self)
        else:
            self.serve_model()

    def send_body(self, code: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _authorised(self) -> bool:
        expected = base64.b64encode(f"{self.api.username}:{self.api.password}".encode()).decode()
        return self.headers.get("Authorization", "") == f"Basic {expected}"

    def serve_model(self) -> None:
        split = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(split.query).items()}
        parts = [unquote(p) for p in split.path.split("/") if p]
        api = self.api
        if parts == ["api", "nodes"]:
            return shape(_columns(api.nodes, query))(self)
        if len(parts) == 3 and parts[:2] == ["api", "queues"]:
            if parts[2] not in api.queues:
                return status(404, "Not Found")(self)
            return self._queue_page(list(api.queues[parts[2]].values()), query)
        if len(parts) == 4 and parts[:2] == ["api", "queues"]:
            item = api.queues.get(parts[2], {}).get(parts[3])
            return status(404, "Not Found")(self) if item is None else shape(_columns([item], query)[0])(self)
        if len(parts) == 6 and parts[:2] == ["api", "exchanges"] and parts[4:] == ["bindings", "source"]:
            found = api.bindings.get((parts[2], parts[3]))
            return status(404, "Not Found")(self) if found is None else shape(_columns(found, query))(self)
        return status(404, "Not Found")(self)

    def _queue_page(self, items: list[dict[str, Any]], query: Mapping[str, str]) -> None:
        if "name" in query:
            items = [i for i in items if query["name"] in i["name"]]
        items.sort(key=lambda i: str(i["name"]))
        if "page" not in query:
            return shape(_columns(items, query))(self)
        page, size = int(query["page"]), int(query.get("page_size", "100"))
        if size > MAX_PAGE_SIZE:
            return status(400, f"page_size must be <= {MAX_PAGE_SIZE}")(self)
        page_count = -(-len(items) // size)
        if page > max(page_count, 1):
            return status(400, "Page out of range")(self)
        chunk = items[(page - 1) * size : page * size]
        return shape(
            {
                "items": _columns(chunk, query),
                "page": page,
                "page_size": size,
                "page_count": page_count,
                "item_count": len(chunk),
                "filtered_count": len(items),
                "total_count": len(items),
            }
        )(self)


def _columns(items: list[dict[str, Any]], query: Mapping[str, str]) -> list[dict[str, Any]]:
    """RabbitMQ's ``columns=a,b.c.d`` filter: keep only those (dotted) paths that exist."""
    if "columns" not in query:
        return items
    paths = [c.split(".") for c in query["columns"].split(",") if c]
    return [_pick(item, paths) for item in items]


def _pick(item: Mapping[str, Any], paths: list[list[str]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for path in paths:
        value: Any = item
        for key in path:
            if not isinstance(value, Mapping) or key not in value:
                break
            value = value[key]
        else:
            target = out
            for key in path[:-1]:
                target = target.setdefault(key, {})
            target[path[-1]] = value
    return out
