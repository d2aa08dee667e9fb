"""A TCP proxy in front of the local RabbitMQ that can drop connections, refuse them, or act out an alarm.

Faults are injected between pika and a real broker, so the publisher is tested against real AMQP while we
decide when the connection dies or gets blocked, without touching the broker's alarms (which would block
every publisher on the machine). The proxy forwards whole frames so that it can inject a
``Connection.Blocked`` frame between two of the broker's. :meth:`AmqpProxy.go_down` acts out a broker that
is down (as ``rabbitmqctl stop_app`` leaves it: every connection cut, new ones refused) until
:meth:`AmqpProxy.come_back`, without touching the broker every other test on the machine is using;
:attr:`AmqpProxy.attempts` keeps the time of every connection attempt, refused ones included.
:meth:`AmqpProxy.strand_all` acts out a half-open disconnect: the client's side is cut while the broker's
stays open, as a NAT or firewall that forgot the connection leaves it, until the broker's heartbeat timeout.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time

import pika.frame
import pika.spec

PROTOCOL_HEADER_SIZE = 8
FRAME_HEADER = struct.Struct(">BHI")
METHOD_FRAME = 1
BASIC_PUBLISH = (60, 40)
BASIC_CONSUME = (60, 20)


class AmqpProxy:
    def __init__(self, upstream: tuple[str, int] = ("127.0.0.1", 5672)) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.block_on_publish = False
        self.drop_after_publishes: int | None = None
        self.connections = 0
        self.publishes = 0
        self.pairs: list[_Pair] = []
        self.attempts: list[float] = []  # time.monotonic() of every connection attempt
        self.consumed_at: list[float] = []  # ... of every Basic.Consume forwarded to the broker
        self.published_at: list[float] = []  # ... of every Basic.Publish forwarded to the broker
        self.refusing = False
        self._closed = False
        self._admitting = threading.Lock()  # go_down never misses a connection being let through
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, query: str = "") -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/%2F" + (f"?{query}" if query else "")

    def close(self) -> None:
        self._closed = True
        self.listener.close()
        self.drop_all()
        for pair in self.pairs:
            pair.close(stranded_too=True)

    def strand_all(self) -> None:
        """A half-open disconnect of every connection made so far: each client sees its connection cut, the
        broker keeps its end open (nothing more is sent to it or read from it) until :meth:`close`."""
        for pair in self.pairs:
            pair.strand()

    def go_down(self) -> None:
        """The broker goes away: every connection is cut and new ones are refused (RST) until
        :meth:`come_back`. Refused attempts still count in :attr:`attempts`."""
        with self._admitting:
            self.refusing = True
        self.drop_all()

    def come_back(self) -> float:
        """The broker is back: connections are forwarded again. Returns the ``time.monotonic()`` of it."""
        self.refusing = False
        return time.monotonic()

    def drop_all(self) -> None:
        """Cut every connection made so far, as a network failure would."""
        for pair in self.pairs:
            pair.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                if self._closed:
                    return
                continue
            self.attempts.append(time.monotonic())
            with self._admitting:
                if self.refusing:
                    _reset(client)
                    continue
                pair = self._connect_upstream(client)
                if pair is None:
                    continue
                self.connections += 1
                self.pairs.append(pair)
            threading.Thread(target=self._client_to_server, args=(pair,), daemon=True).start()
            threading.Thread(target=self._server_to_client, args=(pair,), daemon=True).start()

    def _connect_upstream(self, client: socket.socket) -> _Pair | None:
        """The pair of sockets for one admitted client, or ``None`` once it was reset (broker refused)."""
        try:
            return _Pair(client, socket.create_connection(self.upstream))
        except OSError:  # the broker itself refused: so does the proxy, and it keeps accepting
            _reset(client)
            return None

    def _client_to_server(self, pair: _Pair) -> None:
        header = _read_exact(pair.client, PROTOCOL_HEADER_SIZE)
        if header is None:
            return pair.close()
        pair.server.sendall(header)
        blocked = False
        while (frame := _read_frame(pair.client)) is not None:
            if _method_of(frame) == BASIC_CONSUME:
                self.consumed_at.append(time.monotonic())
            if _method_of(frame) == BASIC_PUBLISH:
                self.published_at.append(time.monotonic())
                self.publishes += 1
                if self.drop_after_publishes is not None and self.publishes >= self.drop_after_publishes:
                    self.drop_after_publishes = None
                    return pair.close()
                if self.block_on_publish and not blocked:
                    blocked = True
                    notice = pika.frame.Method(0, pika.spec.Connection.Blocked("test alarm")).marshal()
                    with pair.lock:
                        pair.client.sendall(notice)
            if not blocked:  # a blocked connection's publishes are held back, as the broker does
                pair.server.sendall(frame)
        pair.close()

    def _server_to_client(self, pair: _Pair) -> None:
        while (frame := _read_frame(pair.server)) is not None:
            with pair.lock:
                try:
                    pair.client.sendall(frame)
                except OSError:
                    break
        pair.close()


class _Pair:
    def __init__(self, client: socket.socket, server: socket.socket) -> None:
        self.client = client
        self.server = server
        self.lock = threading.Lock()
        self.stranded = False  # the broker's end is left open (a half-open connection)

    def strand(self) -> None:
        self.stranded = True
        self.close()

    def close(self, *, stranded_too: bool = False) -> None:
        ends = (self.client, self.server) if stranded_too or not self.stranded else (self.client,)
        for s in ends:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()


def _reset(sock: socket.socket) -> None:
    """Close with RST, as a port with nothing listening answers: the client sees ECONNRESET at once."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def _read_exact(sock: socket.socket, size: int) -> bytes | None:
    chunks = b""
    while len(chunks) < size:
        try:
            chunk = sock.recv(size - len(chunks))
        except OSError:
            return None
        if not chunk:
            return None
        chunks += chunk
    return chunks


def _read_frame(sock: socket.socket) -> bytes | None:
    header = _read_exact(sock, FRAME_HEADER.size)
    if header is None:
        return None
    _kind, _channel, size = FRAME_HEADER.unpack(header)
    rest = _read_exact(sock, size + 1)
    return None if rest is None else header + rest


def _method_of(frame: bytes) -> tuple[int, int] | None:
    """(class id, method id) of a method frame, ``None`` for a header, body or heartbeat frame."""
    if frame[0] != METHOD_FRAME:
        return None
    class_id, method_id = struct.unpack(">HH", frame[7:11])
    return class_id, method_id
