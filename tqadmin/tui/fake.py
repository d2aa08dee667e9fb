"""A seeded, in-memory broker, telemetry and cron for tests, screenshots and the benchmark.

It implements the real :class:`BrokerAdmin` contract (listing, peek, transfer sessions, purge), so the
generic admin engine runs on it exactly as on RabbitMQ, and it records every write it receives so a test
can prove a read-only profile sent none. The same seed always yields the same screen.
"""

from __future__ import annotations

import dataclasses
import json
import random
import threading
from collections.abc import Sequence
from typing import ClassVar

from tqadmin.errors import QueueNotFound, TqadminError
from tqadmin.plugin.base import BrokerAdmin, Delivery, TransferSession
from tqadmin.plugin.capabilities import Capabilities, Operation
from tqadmin.plugin.delays import fold_delays
from tqadmin.plugin.models import Alarm, DeathRecord, Message, PeekResult, QueueListing, QueueStats
from tqadmin.tui.views import (
    CronView,
    Latency,
    ScheduleView,
    TaskTypeView,
    TelemetryView,
    WorkerView,
)

FAKE_CAPABILITIES = Capabilities(
    supported=frozenset(Operation) - {Operation.SERVER_SIDE_MOVE},
    reasons=((Operation.SERVER_SIDE_MOVE, "the fake broker has no server-side move"),),
    peek_cost=(
        "fake broker, modelled on RabbitMQ: peek gets and requeues, which marks the messages redelivered and"
        " counts a delivery; order is kept"
    ),
    peek_counts_delivery=True,
    broker_headers=frozenset({"x-death"}),
)
TASK_TYPES = ("resize_image", "send_email", "generate_report")
ERRORS = (
    ("max_retries", "TimeoutError: upstream image store did not answer in 30s"),
    ("fatal", "ValueError: image has zero width"),
    ("malformed", "body is not a JSON object"),
)
# Retry delay queues of the default seed, as RabbitMQ's tiers: (work queue, delay queue, messages waiting).
DELAY_QUEUES = (
    ("resize_image", "resize_image.retry.2s", 4),
    ("resize_image", "resize_image.retry.8s", 2),
    ("resize_image", "resize_image.retry.30s", 1),
    ("emails", "emails.retry.1s", 3),
)
FROZEN_NOW = 1_780_000_000.0  # 2026-05-28T20:26:40Z: the clock of every seeded screen


class FakeAdmin(BrokerAdmin):
    """Queues of messages in memory; figures drift by a seeded random walk at each listing."""

    capabilities: ClassVar[Capabilities] = FAKE_CAPABILITIES

    def __init__(self, seed: int = 7, *, queues: Sequence[str] | None = None, extra: int = 0) -> None:
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self.messages: dict[str, list[Message]] = {}
        self.backlog: dict[str, int] = {}
        self.writes: list[tuple[str, str]] = []
        self.calls: list[str] = []
        self.failure: TqadminError | None = None
        self.alarms: tuple[Alarm, ...] = ()
        self.delay_for: dict[str, str] = {}
        names = list(queues) if queues is not None else ["orders", "resize_image", "emails", "reports"]
        names += [f"bulk-{i:05d}" for i in range(extra)]
        for index, name in enumerate(names):
            self.messages[name] = [self._job(name, index, n) for n in range(3 + index % 4)]
            self.backlog[name] = (
                self._random.randint(0, 400) if index % 3 == 0 else self._random.randint(0, 20)
            )
            if extra == 0 or index < 4:
                self.messages[f"{name}.dlq"] = [self._dead(name, index, n) for n in range(2 + index % 3)]
                self.backlog[f"{name}.dlq"] = 0
        for work, delay_queue, waiting in DELAY_QUEUES if queues is None else ():
            self.messages[delay_queue] = [self._job(work, 0, 200 + n) for n in range(waiting)]
            self.backlog[delay_queue] = 0
            self.delay_for[delay_queue] = work

    def _job(self, queue: str, index: int, n: int) -> Message:
        task_type = TASK_TYPES[(index + n) % len(TASK_TYPES)]
        job_id = f"{queue}-{n:04d}"
        job = {
            "task_type": task_type,
            "id": job_id,
            "timestamp": "2026-05-28T20:20:00Z",
            "retry_count": n % 2,
        }
        job["image_url"] = f"https://img.example/{index}/{n}.png"
        return Message(body=json.dumps(job).encode(), id=job_id, properties={"routing_key": queue})

    def _dead(self, queue: str, index: int, n: int) -> Message:
        reason, error = ERRORS[(index + n) % len(ERRORS)]
        original = self._job(queue, index, n + 100)
        body = b"\x00not json" if reason == "malformed" else original.body
        headers = {
            "x-tq-reason": reason,
            "x-tq-error": error,
            "x-tq-attempts": 6 if reason == "max_retries" else 1,
            "x-tq-original-queue": queue,
            "x-tq-first-seen": "2026-05-28T20:01:00Z",
            "x-tq-dead-lettered-at": "2026-05-28T20:19:00Z",
        }
        return Message(body=body, headers=headers, id=original.id, properties={"routing_key": f"{queue}.dlq"})

    def deaths(self, message: Message) -> tuple[DeathRecord, ...]:
        """Modelled on RabbitMQ: a worker's dead letter was rejected once in its original queue; another
        framework's message carries the broker's own ``x-death`` records."""
        recorded = message.headers.get("x-death")
        if isinstance(recorded, list):
            return tuple(DeathRecord(d["queue"], d["reason"], d["count"], d["time"], ()) for d in recorded)
        queue = message.headers.get("x-tq-original-queue")
        if not isinstance(queue, str):
            return ()
        details = (("exchange", "task_exchange"), ("routing-keys", queue))
        return (DeathRecord(queue, "rejected", 1, "2026-05-28T20:19:00+00:00", details),)

    def _stats(self, name: str) -> QueueStats:
        held = len(self.messages[name])
        depth = held + self.backlog[name]
        idle = name.endswith(".dlq") or name in self.delay_for  # nobody consumes these
        unacked = 0 if idle else min(depth, self._random.randint(0, 4))
        dlq = f"{name}.dlq" if f"{name}.dlq" in self.messages else None
        rate = self._random.uniform(0, 40) if not idle else 0.0
        return QueueStats(
            name=name,
            messages=depth,
            ready=depth - unacked,
            unacked=unacked,
            consumers=0 if idle else 1 + len(name) % 3,
            publish_rate=round(rate, 1),
            deliver_rate=round(rate * 0.9, 1),
            ack_rate=round(rate * 0.85, 1),
            oldest_age_s=float(self._random.randint(0, 900)) if depth else None,
            dlq=dlq,
            dlq_messages=len(self.messages[dlq]) if dlq else None,
            kind="classic",
            delay_for=self.delay_for.get(name),
        )

    def step(self) -> None:
        """Let the synthetic backlog drift, as a live broker's would between two polls."""
        with self._lock:
            for name in self.backlog:
                if not name.endswith(".dlq") and name not in self.delay_for:
                    self.backlog[name] = max(0, self.backlog[name] + self._random.randint(-8, 10))

    def list_queues(self) -> QueueListing:
        self.calls.append("list_queues")
        if self.failure is not None:
            raise self.failure
        with self._lock:
            queues = fold_delays([self._stats(name) for name in self.messages])
        return QueueListing(queues=queues, alarms=self.alarms, broker="fake://seeded")

    def peek(self, queue: str, count: int) -> PeekResult:
        """As on RabbitMQ: the look returns the messages as they were, then leaves them marked redelivered."""
        self.calls.append(f"peek {queue}")
        with self._lock:
            held = self.held(queue)
            looked = tuple(held[:count])
            held[:count] = [dataclasses.replace(m, redelivered=True) for m in looked]
        return PeekResult(queue, looked, self.capabilities.peek_cost)

    def purge(self, queue: str) -> int:
        self._write("purge", queue)
        with self._lock:
            dropped = len(self.held(queue))
            self.messages[queue] = []
            self.backlog[queue] = 0
        return dropped

    def open_transfer(self, queue: str) -> TransferSession:
        self.calls.append(f"open_transfer {queue}")
        return FakeTransfer(self, queue)

    def queue_exists(self, queue: str) -> bool:
        return queue in self.messages

    def held(self, queue: str) -> list[Message]:
        """The queue's messages, its synthetic backlog turned into jobs first, so that a peek, a dry run or
        a purge counts what the listing shows. Only queues someone looks into pay for it (not the 10,000 of
        the benchmark)."""
        if queue not in self.messages:
            raise QueueNotFound(f"queue {queue!r} not found on the fake broker")
        held = self.messages[queue]
        backlog = self.backlog.get(queue, 0)
        if backlog:
            index = list(self.messages).index(queue)
            held.extend(self._job(queue, index, n) for n in range(len(held), len(held) + backlog))
            self.backlog[queue] = 0
        return held

    def _write(self, kind: str, queue: str) -> None:
        self.writes.append((kind, queue))


class FakeTransfer(TransferSession):
    """Takes messages off the front of a fake queue; unacked ones go back to the front on close."""

    def __init__(self, admin: FakeAdmin, queue: str) -> None:
        self.admin = admin
        self.queue = queue
        self._start = len(admin.held(queue))
        self._taken = 0
        self._outstanding: list[Delivery] = []

    def count_at_start(self) -> int:
        return self._start

    def fetch(self, limit: int) -> Sequence[Delivery]:
        with self.admin._lock:
            room = max(0, min(limit, self._start - self._taken))
            source = self.admin.messages[self.queue]
            batch = [Delivery(m, ("fake", self.queue)) for m in source[:room]]
            del source[: len(batch)]
        self._taken += len(batch)
        self._outstanding.extend(batch)
        return batch

    def publish_confirmed(self, items: Sequence[tuple[str, Message]]) -> None:
        for target, message in items:
            self.admin._write("publish", target)
            with self.admin._lock:
                self.admin.messages.setdefault(target, []).append(message)
                self.admin.backlog.setdefault(target, 0)

    def ack(self, deliveries: Sequence[Delivery]) -> None:
        for delivery in deliveries:
            self.admin._write("ack", self.queue)
            self._outstanding.remove(delivery)

    def release(self, deliveries: Sequence[Delivery]) -> None:
        with self.admin._lock:
            for delivery in reversed(deliveries):
                self._outstanding.remove(delivery)
                self.admin.messages[self.queue].insert(0, delivery.message)

    def close(self) -> None:
        self.release(list(self._outstanding))


class FakeTelemetry:
    """Three task types with log-normal latencies; two live workers, one busy, and one dead."""

    def __init__(self, *, empty: bool = False) -> None:
        self.empty = empty

    def read(self) -> TelemetryView:
        if self.empty:
            return TelemetryView()
        types = tuple(self._task_type(name, i) for i, name in enumerate(TASK_TYPES))
        done = sum(t.done for t in types)
        failed = sum(t.failed for t in types)
        workers = (
            WorkerView("worker-a1", "resize_image", 1.2, "resize_image-0042", 812, 9, True),
            WorkerView("worker-b2", "emails", 2.8, None, 1304, 31, True),
            WorkerView("worker-c3", "reports", 94.0, "reports-0007", 77, 2, False),
        )
        return TelemetryView(60.0, round(done / 60.0, 1), failed / max(1, done + failed), types, workers)

    def _task_type(self, name: str, index: int) -> TaskTypeView:
        rnd = random.Random(f"{name}-{index}")
        waits = sorted(rnd.lognormvariate(-1.0 + index, 0.8) for _ in range(400))
        runs = sorted(rnd.lognormvariate(-2.0 + index * 0.7, 0.6) for _ in range(400))
        return TaskTypeView(name, 1200 - index * 300, 12 + index * 15, _latency(waits), _latency(runs))


def _latency(values: Sequence[float]) -> Latency:
    bounds = [0.01 * 2**k for k in range(14)]
    counts = [0] * len(bounds)
    for value in values:
        counts[next((i for i, b in enumerate(bounds) if value <= b), len(bounds) - 1)] += 1
    p50, p95, p99 = (values[min(len(values) - 1, int(f * len(values)))] for f in (0.5, 0.95, 0.99))
    return Latency(p50, p95, p99, tuple(zip(bounds, counts, strict=True)))


class FakeCron:
    """A leader with a fencing token and two schedules, one of them late."""

    def read(self) -> CronView:
        return CronView(
            leader="cron-a",
            fencing_token=42,
            schedules=(
                ScheduleView(
                    "nightly-report", "0 2 * * *", "reports", FROZEN_NOW + 20_000, FROZEN_NOW - 66_400
                ),
                ScheduleView(
                    "thumbnails", "*/5 * * * *", "resize_image", FROZEN_NOW + 140, FROZEN_NOW - 160, 3.5
                ),
            ),
        )
