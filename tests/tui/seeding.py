"""The seeded broker, telemetry and cron of the dashboard's tests, screenshots and benchmark.

The broker is the memory plugin's own (``tqadmin_memory``), filled the way its queues fill in use: jobs are
published, workers lease some (in flight) and dead-letter others with the pipeline's own ``x-tq-*`` headers,
retries wait out their delay in the queue itself. Nothing here models another broker or parses its headers;
the admin face is the memory plugin's, watched: it records each call and write so that a test can prove a
read-only profile sent none, and a test can make its listing fail or carry alarms. The workers' telemetry is
heartbeats in an SQLite state store, read by the dashboard's own source. The same seed always yields the
same screen: the clocks are set while seeding and frozen at :data:`FROZEN_NOW` after.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import tempfile
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar

from tqadmin_memory import MemoryPlugin
from tqadmin_memory.admin import MemoryAdmin
from tqadmin_memory.broker import MemoryBroker, Rates
from tqadmin_memory.capabilities import CAPABILITIES

from tqadmin.config import Settings
from tqadmin.errors import TqadminError
from tqadmin.frameworks import dramatiq_workers, rq_workers, sidekiq_workers
from tqadmin.frameworks.celery_events import CeleryEvents
from tqadmin.pipeline.deadletter import dead_letter_headers, iso_utc
from tqadmin.plugin.base import Delivery, TransferSession
from tqadmin.plugin.capabilities import Capabilities
from tqadmin.plugin.kit.delays import work_queues
from tqadmin.plugin.models import HEADER_FIRST_SEEN, ActionReport, Alarm, Message, PeekResult, QueueListing
from tqadmin.plugin.workers import WorkerReading
from tqadmin.reading.reading import Part
from tqadmin.reading.recording import HistoryReader, HistoryRecorder
from tqadmin.store.completion.sqlite import SQLiteStore
from tqadmin.telemetry.counters import COUNTERS, StatsKey, TaskStats
from tqadmin.telemetry.ledger import WorkerFigures
from tqadmin.telemetry.progress import BusyThread, Progress
from tqadmin.telemetry.snapshot import WorkerSnapshot
from tqadmin.tui.sources import StoreTelemetry
from tqadmin.tui.views import CronView, ScheduleView

URL = "memory://seeded"
FROZEN_NOW = 1_780_000_000.0  # 2026-05-28T20:26:40Z: the clock of every seeded screen
LEASE_S = 86_400.0  # a seeded worker's lease: on the frozen clock it never runs out
# The seeded queues are given rates; the seeded broker also holds other frameworks' worker registries.
SEEDED_CAPABILITIES = replace(CAPABILITIES, unavailable=(), worker_registries=("rq", "sidekiq", "dramatiq"))
TASK_TYPES = ("resize_image", "send_email", "generate_report")
ERRORS = (
    ("max_retries", "TimeoutError: upstream image store did not answer in 30s"),
    ("fatal", "ValueError: image has zero width"),
    ("malformed", "body is not a JSON object"),
)
# Jobs of the default seed waiting out a retry delay: (work queue, delay in seconds, how many).
RETRIES = (("resize_image", 2.0, 4), ("resize_image", 8.0, 2), ("resize_image", 30.0, 1), ("emails", 1.0, 3))


class SeedClock:
    """The seeded broker's clock: set back while a scene is seeded (a job published then is that old)."""

    def __init__(self) -> None:
        self.now = FROZEN_NOW

    def __call__(self) -> float:
        return self.now


class Queues(Mapping[str, list[Message]]):
    """Each queue's ready messages, oldest first, as a look sees them (what a move, purge or export takes)."""

    def __init__(self, broker: MemoryBroker) -> None:
        self._broker = broker

    def __getitem__(self, queue: str) -> list[Message]:
        if not self._broker.exists(queue):
            raise KeyError(queue)
        return self._broker.peek(queue, self._broker.figures(queue).messages)

    def __iter__(self) -> Iterator[str]:
        return iter(self._broker.queue_names())

    def __len__(self) -> int:
        return len(self._broker.queue_names())


class SeededAdmin(MemoryAdmin):
    """The admin face of a seeded memory broker, recording what it is asked (``calls``) and every write
    (``writes``); ``failure`` makes the listing raise, ``alarms`` are added to it."""

    capabilities: ClassVar[Capabilities] = SEEDED_CAPABILITIES

    def __init__(self, seed: int = 7, *, queues: Sequence[str] | None = None, extra: int = 0) -> None:
        self.clock = SeedClock()
        super().__init__(MemoryBroker(self.clock, self.capabilities), URL)
        self.calls: list[str] = []
        self.writes: list[tuple[str, str]] = []
        self.failure: TqadminError | None = None
        self.alarms: tuple[Alarm, ...] = ()
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._jobs: dict[str, int] = {}  # jobs made per queue, to number the next
        self._ages: dict[str, float] = {}  # how old each work queue's jobs are
        names = list(queues) if queues is not None else ["orders", "resize_image", "emails", "reports"]
        names += [f"bulk-{i:05d}" for i in range(extra)]
        for index, name in enumerate(names):
            self._seed_queue(name, index, first=index < 4)
        for work, delay_s, waiting in RETRIES if queues is None else ():
            self._retry(work, delay_s, waiting)
        self._start = {name: self.broker.figures(name).ready for name in names}  # where the drift pulls back
        self.clock.now = FROZEN_NOW

    @property
    def messages(self) -> Queues:
        return Queues(self.broker)

    # -- seeding ----------------------------------------------------------------------------------------

    def _seed_queue(self, name: str, index: int, first: bool) -> None:
        """Dead letters (the first four queues' only, among the benchmark's thousands), then jobs of one age,
        some in flight with the queue's consumers, and made-up rates."""
        rnd = self._random
        backlog = (rnd.randint(0, 400) if index % 3 == 0 else rnd.randint(0, 20)) if first else 0
        self.broker.declare(name)
        if first:
            dlq = MemoryPlugin().dlq_name(name)
            self.broker.declare(dlq)
            self.broker.set_rates(dlq, Rates(0.0, 0.0, 0.0))
            for n in range(2 + index % 3):
                self._dead_letter(name, dlq, *ERRORS[(index + n) % len(ERRORS)])
        self._ages[name] = float(rnd.randint(0, 900))
        self._publish(name, 3 + index % 4 + backlog)
        self.clock.now = FROZEN_NOW
        self.broker.take(name, rnd.randint(0, 4), LEASE_S)
        for _ in range(1 + len(name) % 3):
            self.broker.attach(name, +1)
        rate = rnd.uniform(0, 40)
        self.broker.set_rates(name, Rates(round(rate, 1), round(rate * 0.9, 1), round(rate * 0.85, 1)))

    def _job(self, queue: str) -> Message:
        n = self._jobs[queue] = self._jobs.get(queue, -1) + 1
        job_id = f"{queue}-{n:04d}"
        job = {
            "task_type": TASK_TYPES[n % len(TASK_TYPES)],
            "id": job_id,
            "timestamp": iso_utc(self.clock()),
            "retry_count": n % 2,
            "image_url": f"https://img.example/{queue}/{n}.png",
        }
        return Message(body=json.dumps(job).encode(), id=job_id)

    def _publish(self, queue: str, count: int) -> None:
        """``count`` more jobs, published when the queue's first job was, so its oldest age stays put."""
        self.clock.now = FROZEN_NOW - self._ages[queue]
        self.broker.publish([(queue, self._job(queue)) for _ in range(count)])

    def _dead_letter(self, queue: str, dlq: str, reason: str, error: str) -> None:
        """A job a worker gave up on: published, leased, then forwarded to ``dlq`` with the worker's
        headers, as the memory broker dead-letters (the body byte for byte)."""
        failed_at = FROZEN_NOW - self._random.randint(60, 1500)
        attempts = 6 if reason == "max_retries" else 1
        first_seen = failed_at - 180.0 * (attempts - 1)
        self.clock.now = first_seen
        job = self._job(queue)
        self.broker.publish([(queue, replace(job, body=b"\x00not json") if reason == "malformed" else job)])
        (delivery,) = self.broker.take(queue, 1, LEASE_S)
        self.clock.now = failed_at
        seen = {HEADER_FIRST_SEEN: iso_utc(first_seen)}
        headers = dead_letter_headers(
            reason=reason, error=error, attempts=attempts, queue=queue, headers=seen, now_s=failed_at
        )
        dead = replace(delivery.message, headers={**delivery.message.headers, **headers})
        self.broker.forward(delivery, dlq, dead, 0.0)

    def _retry(self, queue: str, delay_s: float, count: int) -> None:
        """``count`` jobs a worker sent back to wait out ``delay_s`` in their queue (a retry, in one step)."""
        self.clock.now = FROZEN_NOW
        for delivery in self.broker.take(queue, count, LEASE_S):
            self.broker.forward(delivery, queue, delivery.message, delay_s)

    def step(self) -> None:
        """Let each work queue's backlog drift, as a live broker's would between two polls, pulled back
        toward where it began (the benchmark's long runs must not measure a growing broker)."""
        with self._lock:
            for name, start in self._start.items():
                change = self._random.randint(-8, 10) - (self.broker.figures(name).ready - start) // 8
                if change > 0:
                    self._publish(name, change)
                elif change < 0:
                    self.clock.now = FROZEN_NOW
                    self.broker.ack(self.broker.take(name, -change, LEASE_S))
            self.clock.now = FROZEN_NOW

    # -- the admin face, watched ------------------------------------------------------------------------

    def framework_workers(self) -> WorkerReading:
        return seeded_framework_workers()

    def list_queues(self) -> QueueListing:
        self.calls.append("list_queues")
        if self.failure is not None:
            raise self.failure
        with self._lock:
            return replace(super().list_queues(), alarms=self.alarms)

    def peek(self, queue: str, count: int) -> PeekResult:
        self.calls.append(f"peek {queue}")
        return super().peek(queue, count)

    def purge(self, queue: str) -> int:
        self.writes.append(("purge", queue))
        return super().purge(queue)

    def server_side_move(self, source: str, target: str, limit: int | None) -> ActionReport | None:
        self.writes.append(("move", source))
        return super().server_side_move(source, target, limit)

    def open_transfer(self, queue: str) -> TransferSession:
        self.calls.append(f"open_transfer {queue}")
        return RecordingTransfer(self, queue, super().open_transfer(queue))


class RecordingTransfer(TransferSession):
    """The memory broker's transfer session, its writes recorded on the admin that opened it."""

    def __init__(self, admin: SeededAdmin, queue: str, session: TransferSession) -> None:
        self.admin = admin
        self.queue = queue
        self.session = session

    def count_at_start(self) -> int:
        return self.session.count_at_start()

    def fetch(self, limit: int) -> Sequence[Delivery]:
        return self.session.fetch(limit)

    def publish_confirmed(self, items: Sequence[tuple[str, Message]]) -> None:
        self.admin.writes.extend(("publish", target) for target, _ in items)
        self.session.publish_confirmed(items)

    def ack(self, deliveries: Sequence[Delivery]) -> None:
        self.admin.writes.extend(("ack", self.queue) for _ in deliveries)
        self.session.ack(deliveries)

    def release(self, deliveries: Sequence[Delivery]) -> None:
        self.session.release(deliveries)

    def close(self) -> None:
        self.session.close()


def _rq_time(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def seeded_framework_workers() -> WorkerReading:
    """Other frameworks' workers beside the seeded tqadmin ones, decoded from registries as RQ, Sidekiq and
    Dramatiq write them: an RQ worker busy and one killed, a busy Sidekiq process, one whose hash expired,
    and an idle Dramatiq worker."""
    now = FROZEN_NOW
    rq_busy = {"birth": _rq_time(now - 7200), "last_heartbeat": _rq_time(now - 4.0), "queues": "invoices",
               "pid": "3121", "hostname": "rq-host", "state": "busy"}  # fmt: skip
    rq_killed = {**rq_busy, "last_heartbeat": _rq_time(now - 440.0), "state": "idle", "pid": "3122"}
    job = {"description": "billing.render_invoice('inv-2291')", "origin": "invoices",
           "started_at": _rq_time(now - 3.5)}  # fmt: skip
    identity = "web-7f9c:12:8d1e2a"
    info = {"hostname": "web-7f9c", "started_at": now - 5400, "pid": 12, "concurrency": 10,
            "queues": ["default", "mailers"]}  # fmt: skip
    work = {
        f"tid-{n}": json.dumps({"queue": queue, "run_at": int(now) - 2, "payload": json.dumps(
            {"class": job_class, "jid": jid, "args": [], "queue": queue})})
        for n, (queue, job_class, jid) in enumerate(
            (("mailers", "WelcomeMailer", "b1c9e0f3a2d4"), ("default", "SyncCrmContact", "77aa01c2e9f0")))
    }  # fmt: skip
    sidekiq = {"info": json.dumps(info), "busy": "2", "beat": str(now - 3.1), "quiet": "false"}
    return WorkerReading(
        (
            rq_workers.worker("rq:worker:rq-host.3121", rq_busy, 95.0, {"4f3a9c": job}, now),
            rq_workers.worker("rq:worker:rq-host.3122", rq_killed, 40.0, {}, now),
            sidekiq_workers.process(identity, sidekiq, work, now),
            sidekiq_workers.process("web-0a11:12:c0ffee", None, {}, now),
            dramatiq_workers.worker("dramatiq", "5b0e-83d1", (now - 1.5) * 1000, {}, now),
        )
    )


def seeded_celery_events() -> WorkerReading:
    """The seeded frameworks' workers and a Celery worker seen through its task events: a minute of tasks
    folded by the dashboard's own reader, their run times spread as real ones are."""
    events = CeleryEvents()
    rng = random.Random(11)
    node = "celery@billing-5c7d"
    for i, (task, run_s, ok) in enumerate(
        [("billing.charge_card", rng.lognormvariate(-2.3, 0.4), rng.random() > 0.04) for _ in range(180)]
        + [("billing.send_receipt", rng.lognormvariate(-4.0, 0.3), True) for _ in range(240)]
    ):
        sent = FROZEN_NOW - 58 + i * 0.13
        common = {"uuid": f"c-{i:04d}", "hostname": node}
        events.apply({"type": "task-sent", "timestamp": sent, "name": task, **common, "hostname": "web-1"})
        events.apply({"type": "task-received", "timestamp": sent + 0.002, "name": task, **common})
        events.apply({"type": "task-started", "timestamp": sent + 0.01 + rng.random() * 0.02, **common})
        ended = {"timestamp": sent + 0.05 + run_s, **common}
        events.apply(
            {"type": "task-succeeded", "runtime": run_s, **ended} if ok else {"type": "task-failed", **ended}
        )
    events.apply({"type": "worker-heartbeat", "timestamp": FROZEN_NOW - 1.2, "hostname": node, "freq": 2.0})
    others = seeded_framework_workers()
    return replace(
        others,
        workers=(*others.workers, *events.workers(FROZEN_NOW)),
        tasks={"celery": events.task_stats()},
        wait_from={"celery": events.wait_from},
    )


@dataclass(frozen=True, slots=True)
class SeededWorker:
    """A worker of the seeded telemetry: what it ran in the last minute per (queue, task type) as
    (done, failed), and how long ago it last beat."""

    id: str
    queues: tuple[str, ...]
    ran: Mapping[StatsKey, tuple[int, int]]
    beat_age_s: float
    current_job: str | None = None
    running_s: float = 2.0  # how long its current job has been running at its last beat


# Two live workers, one busy and wedged (its one job thread in a run for 14 minutes), and one dead (its last
# beat older than its TTL, so outside the window too).
WORKERS = (
    SeededWorker(
        "worker-a1",
        ("resize_image",),
        {("resize_image", "resize_image"): (1200, 12)},
        1.2,
        "resize_image-0042",
        running_s=842.0,
    ),
    SeededWorker(
        "worker-b2",
        ("emails", "reports"),
        {("emails", "send_email"): (900, 27), ("reports", "generate_report"): (600, 42)},
        2.8,
    ),
    SeededWorker("worker-c3", ("reports",), {("reports", "generate_report"): (77, 2)}, 94.0, "reports-0007"),
)
TTL_S = 15.0
STARTED_AT = FROZEN_NOW - 3600.0


def seeded_telemetry() -> StoreTelemetry:
    """The workers' heartbeats in an SQLite state store on the frozen clock, read by the dashboard's own
    :class:`StoreTelemetry`: each worker beat a minute before its last beat, so the window's rates and
    latencies are the difference of two readings, as a live dashboard computes them."""
    clock = SeedClock()
    directory = tempfile.mkdtemp(prefix="tq-seeded-")
    store = SQLiteStore(Path(directory) / "state.db", clock=clock)
    for pid, worker in enumerate(WORKERS, start=4100):
        earlier: dict[StatsKey, TaskStats] = {
            key: TaskStats(done=done * 3) for key, (done, _) in worker.ran.items()
        }
        latest = {key: _ran(key[1], done, failed, earlier[key]) for key, (done, failed) in worker.ran.items()}
        dead_for_s = worker.beat_age_s if worker.beat_age_s > TTL_S else 0.0  # both its readings are older
        for age_s, stats in ((60.0 + dead_for_s, earlier), (worker.beat_age_s, latest)):
            clock.now = FROZEN_NOW - age_s
            current = (worker.current_job,) if worker.current_job else ()
            task_type = next(iter(worker.ran))[1]
            busy = tuple(BusyThread(job, task_type, clock.now - worker.running_s) for job in current)
            progress = Progress(1 if busy else 4, busy, clock.now - 0.5, clock.now - worker.running_s)
            snapshot = WorkerSnapshot(
                worker.id,
                "seeded",
                pid,
                worker.queues,
                STARTED_AT,
                clock.now,
                current,
                stats,
                progress=progress,
            )
            store.beat(snapshot, TTL_S)
    clock.now = FROZEN_NOW
    telemetry = StoreTelemetry(Settings(store_url=store.url), connect=lambda: store)
    weakref.finalize(telemetry, shutil.rmtree, directory, ignore_errors=True)  # gone with the app, or at exit
    return telemetry


def _ran(task_type: str, done: int, failed: int, before: TaskStats) -> TaskStats:
    """``before`` and then ``done`` + ``failed`` more runs, their waits and run times log-normal (slower
    for each task type after the first)."""
    index = TASK_TYPES.index(task_type)
    rnd = random.Random(f"{task_type}-{index}")
    stats = TaskStats(done=before.done + done, failed=before.failed + failed)
    for _ in range(done + failed):
        stats.wait.record(rnd.lognormvariate(-1.0 + index, 0.8))
        stats.run.record(rnd.lognormvariate(-2.0 + index * 0.7, 0.6))
    return stats


class SeededCron:
    """A leader with a fencing token and two schedules, one of them late: a
    :class:`~tqadmin.tui.views.CronSource` of its own rather than a seeded cron store, whose status reads the
    schedules' next fire times off the wall clock."""

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


def seeded_history(admin: SeededAdmin, telemetry: StoreTelemetry) -> HistoryReader:
    """A day of history as dashboards would have recorded it on the frozen clock: every 5 minutes for 23
    hours, then every 10 s for the last hour but for eight minutes when nothing polled (a gap). Depths swing
    around the seeded queues' own; the task types' totals grow by the seeded workers' totals every hour."""
    final = dict(telemetry.reader.read({Part.WORKERS}).tasks)  # what the seeded workers did, by task type
    directory = tempfile.mkdtemp(prefix="tq-history-")
    url = f"sqlite:///{Path(directory) / 'state.db'}"
    SQLiteStore(Path(directory) / "state.db").close()
    clock = SeedClock()
    recorder = HistoryRecorder(url, "seeded", clock=clock)
    queues = work_queues(admin.list_queues().queues)
    start = FROZEN_NOW - 86_400
    moments = [*range(0, 82_800, 300), *(t for t in range(82_800, 86_400, 10) if not 84_600 <= t < 85_080)]
    for offset in moments:
        clock.now = start + offset
        swing = 1 + 0.6 * math.sin(offset / 2400) + (1.5 if 83_400 <= offset < 84_000 else 0.0)
        recorder.record_queues([replace(q, messages=int(q.messages * swing)) for q in queues])
        grown = {name: _grown(stats, 24 * offset / 86_400) for name, stats in final.items()}
        recorder.record_tasks([WorkerFigures("seeded", start - 1, grown)])  # one process, all along
    recorder.close()
    reader = HistoryReader(url, "seeded", clock=lambda: FROZEN_NOW)
    weakref.finalize(reader, shutil.rmtree, directory, ignore_errors=True)
    return reader


def _grown(total: TaskStats, times: float) -> TaskStats:
    """``total`` ``times`` over: every count and bucket scaled alike."""
    grown = TaskStats(**{name: round(getattr(total, name) * times) for name in COUNTERS})
    for mine, theirs in ((grown.wait, total.wait), (grown.run, total.run)):
        mine.buckets = {index: round(n * times) for index, n in theirs.buckets.items()}
        mine.count = sum(mine.buckets.values())
        mine.sum = theirs.sum * times
    return grown
