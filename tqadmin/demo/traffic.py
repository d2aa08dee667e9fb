"""A steady stream of jobs at a fixed rate, with a few duplicates and hostile messages mixed in.

Most messages are well-formed jobs of the demo's task types. Every ``MALFORMED_EVERY``-th message is one an
on-call engineer meets in real life (a truncated JSON body, bytes that are not UTF-8, a job without
``task_type``, a task type no worker knows) so the dead-letter queues show each reason; every
``DUPLICATE_EVERY``-th message republishes an earlier job byte for byte, as a producer retrying after a lost
confirm would, so the dashboard shows deduplication at work. The publisher keeps its own counts: they are the
"published" side of the summary's accounting.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from tqadmin.demo.layout import Layout
from tqadmin.errors import TqadminError
from tqadmin.pipeline.job import new_job

MALFORMED_EVERY = 25
DUPLICATE_EVERY = 30
RETRY_PAUSE_S = 1.0
BATCH_S = 1.0


class Sink(Protocol):
    """Where traffic goes: publish a batch spread over about a second at ``rate``, confirmed.

    Returns one flag per message (``True`` once the broker confirmed it) and the error that explains the
    others, if any; it does not raise for a message's fate.
    """

    def publish(self, messages: Sequence[TrafficMessage], rate: float) -> tuple[list[bool], str]: ...

    def close(self) -> None: ...


class Kind(StrEnum):
    JOB = "job"
    DUPLICATE = "duplicate"
    INVALID_JSON = "invalid_json"
    INVALID_UTF8 = "invalid_utf8"
    MISSING_TASK_TYPE = "missing_task_type"
    UNKNOWN_TASK = "unknown_task"


MALFORMED_KINDS = (Kind.INVALID_JSON, Kind.INVALID_UTF8, Kind.MISSING_TASK_TYPE, Kind.UNKNOWN_TASK)


@dataclass(frozen=True, slots=True)
class TrafficMessage:
    queue: str
    body: bytes
    kind: Kind
    job_id: str | None = None
    task_type: str | None = None


@dataclass(frozen=True, slots=True)
class TrafficCounts:
    """What the publisher got confirmed, by kind; ``jobs`` maps each distinct job id to its task type."""

    jobs: dict[str, str] = field(default_factory=dict)
    duplicates: int = 0
    malformed: dict[str, int] = field(default_factory=dict)
    failed: int = 0
    last_error: str = ""

    @property
    def published(self) -> int:
        """Every confirmed message: distinct jobs, duplicates and malformed ones."""
        return len(self.jobs) + self.duplicates + sum(self.malformed.values())

    def by_task_type(self) -> dict[str, int]:
        return dict(Counter(self.jobs.values()))


def job_fields(task_type: str, rng: random.Random) -> dict[str, Any]:
    """Plausible fields for each demo task type (the seed's image resize first)."""
    n = rng.randrange(1, 10_000)
    if task_type == "resize_image":
        width, height = rng.choice([(640, 480), (1280, 720), (320, 240), (1920, 1080)])
        return {"image_url": f"s3://demo-bucket/photos/IMG_{n:04d}.jpg", "width": width, "height": height}
    if task_type == "send_email":
        return {"to": f"user{n}@example.com", "template": rng.choice(["welcome", "receipt", "reset"])}
    if task_type == "generate_report":
        return {"report": rng.choice(["daily-sales", "churn", "inventory"]), "rows": rng.randrange(10, 5000)}
    if task_type == "charge_card":
        return {"customer": f"cus_{n:05d}", "amount_cents": rng.randrange(100, 20_000), "currency": "EUR"}
    return {}


def malformed_body(kind: Kind, rng: random.Random) -> bytes:
    """A body the worker must dead-letter without crashing: ``malformed`` or ``unknown_task``."""
    n = rng.randrange(10_000)
    if kind is Kind.INVALID_JSON:
        return b'{"task_type": "resize_image", "image_url": "s3://demo-bucket/photos/IMG_'
    if kind is Kind.INVALID_UTF8:
        return b'{"task_type": "send_email", "to": "\xff\xfe\xfd@example.com"}'
    if kind is Kind.MISSING_TASK_TYPE:
        return json.dumps({"id": f"no-type-{n}", "image_url": "s3://demo-bucket/x.jpg"}).encode()
    return new_job("transcode_video", {"video_url": f"s3://demo-bucket/videos/{n}.mp4"}).encode()


def kind_at(index: int) -> Kind:
    """The kind of the ``index``-th message: malformed and duplicates at fixed strides, jobs otherwise."""
    if index % MALFORMED_EVERY == 3:
        return MALFORMED_KINDS[(index // MALFORMED_EVERY) % len(MALFORMED_KINDS)]
    if index % DUPLICATE_EVERY == 17:
        return Kind.DUPLICATE
    return Kind.JOB


class Traffic:
    """Builds the messages and publishes them at ``rate`` per second until told to stop."""

    def __init__(
        self,
        layout: Layout,
        sink_factory: Callable[[], Sink],
        rate: float,
        seed: int,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if rate <= 0:
            raise ValueError("the publish rate must be positive")
        self._layout = layout
        self._sink_factory = sink_factory
        self._interval = 1.0 / rate
        self._batch = max(1, round(rate * BATCH_S))
        self._rng = random.Random(seed)
        self._clock = clock
        self._index = 0
        self._last_job: TrafficMessage | None = None
        self._lock = threading.Lock()
        self._jobs: dict[str, str] = {}
        self._duplicates = 0
        self._malformed: Counter[str] = Counter()
        self._failed = 0
        self._last_error = ""

    def next_message(self) -> TrafficMessage:
        """The next message of the stream (a duplicate only once some job was published before it)."""
        kind = kind_at(self._index)
        self._index += 1
        if kind is Kind.DUPLICATE and self._last_job is not None:
            last = self._last_job
            return TrafficMessage(last.queue, last.body, Kind.DUPLICATE, last.job_id, last.task_type)
        task_types = list(self._layout.queue_of)
        if kind in MALFORMED_KINDS:
            queue = self._layout.queues[self._index % len(self._layout.queues)]
            return TrafficMessage(queue, malformed_body(kind, self._rng), kind)
        task_type = self._rng.choice(task_types)
        job = new_job(task_type, job_fields(task_type, self._rng))
        outgoing = TrafficMessage(self._layout.queue_of[task_type], job.encode(), Kind.JOB, job.id, task_type)
        self._last_job = outgoing
        return outgoing

    def counts(self) -> TrafficCounts:
        """A consistent copy of the counts so far (safe to call from another thread)."""
        with self._lock:
            return TrafficCounts(
                dict(self._jobs), self._duplicates, dict(self._malformed), self._failed, self._last_error
            )

    def run(self, stop: threading.Event, limit: int | None = None) -> None:
        """Publish until ``stop`` is set (or ``limit`` messages were attempted), about one batch a second.

        Batches keep broker round trips few while the sink spreads each over its second, so the dashboard
        sees a steady rate. A batch that fails is counted and the stream goes on after a pause, so a broker
        restart in the middle of a demo shows up as a gap, not as a dead publisher.
        """
        sink = self._sink_factory()
        next_at = self._clock()
        attempted = 0
        try:
            while not stop.is_set() and (limit is None or attempted < limit):
                now = self._clock()
                if next_at > now:
                    stop.wait(next_at - now)
                    continue
                # Never burst more than one batch's worth to catch up after a stall.
                next_at = max(next_at, now - BATCH_S)
                size = self._batch if limit is None else min(self._batch, limit - attempted)
                batch = [self.next_message() for _ in range(size)]
                attempted += size
                try:
                    confirmed, error = sink.publish(batch, 1.0 / self._interval)
                except TqadminError as exc:  # the sink could not even try: the whole batch failed
                    confirmed, error = [False] * len(batch), str(exc)
                self._record(batch, confirmed, error)
                next_at += size * self._interval
                if error:
                    stop.wait(RETRY_PAUSE_S)
        finally:
            sink.close()

    def _record(self, batch: Sequence[TrafficMessage], confirmed: Sequence[bool], error: str) -> None:
        with self._lock:
            for message, ok in zip(batch, confirmed, strict=True):
                if not ok:
                    self._failed += 1
                elif message.kind is Kind.JOB and message.job_id and message.task_type:
                    self._jobs[message.job_id] = message.task_type
                elif message.kind is Kind.DUPLICATE:
                    self._duplicates += 1
                else:
                    self._malformed[message.kind.value] += 1
            if error:
                self._last_error = error
