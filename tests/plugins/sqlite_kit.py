"""The SQLite broker on a file of the test's own: both faces, a steppable clock, and a consumer driven in a
thread that collects what it is handed."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tqadmin_sqlite.admin import SQLiteAdmin
from tqadmin_sqlite.transport import SQLiteTransport

from tqadmin.plugin.base import BrokerConfig, Delivery
from tqadmin.plugin.models import Message
from tqadmin.plugin.transport import Consumer


class SteppedClock:
    """Wall time that a test can step forward or back; it runs on with the real clock in between."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset

    def step(self, seconds: float) -> None:
        self.offset += seconds


class Kit:
    def __init__(self, path: Path, timeout_s: float = 10.0, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.url = f"sqlite:///{path}"
        self.config = BrokerConfig(url=self.url, timeout_s=timeout_s)
        self.clock = clock
        self.transport = SQLiteTransport(self.config, clock)
        self.admin = SQLiteAdmin(self.config, clock)

    def publish(self, queue: str, *bodies: bytes, headers: dict[str, object] | None = None) -> None:
        self.transport.declare(queue)
        result = self.transport.publish([(queue, Message(b, headers=headers or {})) for b in bodies])
        assert result.all_confirmed, result.error

    def stats(self, queue: str):  # type: ignore[no-untyped-def]
        return next(q for q in self.admin.list_queues().queues if q.name == queue)

    def bodies(self, queue: str) -> list[bytes]:
        return [m.body for m in self.admin.peek(queue, 1000).messages]

    @contextmanager
    def consuming(
        self,
        queue: str,
        *,
        prefetch: int = 10,
        lease_s: float = 30.0,
        transport: SQLiteTransport | None = None,
    ) -> Iterator[tuple[Consumer, list[Delivery]]]:
        """A consumer running in a thread; the list fills with what it is handed. Stopped after."""
        consumer = (transport or self.transport).consumer(queue, prefetch=prefetch, lease_s=lease_s)
        got: list[Delivery] = []
        thread = threading.Thread(target=consumer.run, args=(got.append,), daemon=True)
        thread.start()
        try:
            yield consumer, got
        finally:
            consumer.stop()
            consumer.release([d for d in got if consumer.alive(d)])
            consumer.drained()
            thread.join(timeout=10)
            assert not thread.is_alive(), "the consumer did not stop"

    def close(self) -> None:
        self.transport.close()
        self.admin.close()


def wait_for(condition: Callable[[], bool], timeout_s: float = 60.0, what: str = "the condition") -> None:
    """Poll until ``condition`` holds (a deadline for the broker to act, not a speed assertion)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.01)
