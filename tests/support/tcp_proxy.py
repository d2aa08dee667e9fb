"""A byte-level TCP proxy on loopback that can freeze, and a black hole: a server that hangs, two ways.

:class:`TcpProxy` forwards every connection to its upstream; :meth:`TcpProxy.freeze` stops moving bytes either
way while every connection stays open and new ones are still accepted (what a client sees of a server that
was SIGSTOPped, is stuck on a full disk or paused by its VM: connected, and never answered), and
:meth:`TcpProxy.thaw` moves them again. :class:`BlackHole` accepts connections, reads what is sent and never
answers (an endpoint behind a firewall that drops its replies).
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading

TICK_S = 0.05


class _Server:
    """A loopback listener whose accepted connections :meth:`_take` handles; :meth:`close` cuts them all."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.accepted = 0
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._closed.set()
        self.listener.close()
        for sock in list(self._sockets):
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                sock, _ = self.listener.accept()
            except OSError:
                continue
            self.accepted += 1
            self._sockets.append(sock)
            self._take(sock)

    def _take(self, sock: socket.socket) -> None:
        raise NotImplementedError


class TcpProxy(_Server):
    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.frozen = threading.Event()
        super().__init__()

    def freeze(self) -> None:
        self.frozen.set()

    def thaw(self) -> None:
        self.frozen.clear()

    def _take(self, client: socket.socket) -> None:
        try:
            server = socket.create_connection(self.upstream)
        except OSError:
            client.close()
            return
        self._sockets.append(server)
        threading.Thread(target=self._pump, args=(client, server), daemon=True).start()

    def _pump(self, client: socket.socket, server: socket.socket) -> None:
        other = {client: server, server: client}
        while not self._closed.is_set():
            if self.frozen.is_set():  # bytes stay in the kernel's buffers, unread
                self._closed.wait(TICK_S)
                continue
            try:
                ready, _, _ = select.select([client, server], [], [], TICK_S)
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        raise OSError("closed")
                    other[sock].sendall(data)
            except (OSError, ValueError):
                break
        for sock in (client, server):
            with contextlib.suppress(OSError):
                sock.close()


class BlackHole(_Server):
    """Accepts, reads and discards, never answers."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _take(self, sock: socket.socket) -> None:
        threading.Thread(target=self._swallow, args=(sock,), daemon=True).start()

    def _swallow(self, sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while not self._closed.is_set() and sock.recv(65536):
                pass
