"""The prefetch window is claimed in shared round trips, and completion marks ride along; every job is still
marked done before it is acked, a suspect runs alone, and what never ran is given back at stop.

The worker runs against the real Redis store and an in-memory consumer that hands over a burst of deliveries
at once and records what became of each.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

import pytest

from tqadmin.pipeline.job import new_job
from tqadmin.pipeline.tasks import TaskContext, TaskRegistry, TaskSpec
from tqadmin.pipeline.worker import Worker, WorkerSettings
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.capabilities import TransportCapabilities
from tqadmin.plugin.models import Message
from tqadmin.plugin.transport import BrokerTransport, Consumer, Outgoing, PublishResult
from tqadmin.store import open_store
from tqadmin.store.completion.base import Claim
from tqadmin.store.completion.redis import RedisStore

REDIS_URL = "redis://127.0.0.1:6379/0"


class RecordingStore(RedisStore):
    """The Redis store, counting round trips of marks and claims; ``fail_next_marks`` fails the next one
    that carries completion marks."""

    round_trips: list[tuple[int, int]]
    released: list[str]
    fail_next_marks = False

    def complete_and_claim(
        self, claims: Sequence[Claim], job_ids: Sequence[str], owner: str, lease_s: float
    ) -> tuple[list[bool], list[Claim]]:
        if self.fail_next_marks and claims:
            self.fail_next_marks = False
            raise ConnectionError("store connection lost")
        self.round_trips.append((len(claims), len(job_ids)))
        return super().complete_and_claim(claims, job_ids, owner, lease_s)

    def release(self, claim: Claim, *, forget_crashes: bool = False) -> bool:
        self.released.append(claim.job_id)
        return super().release(claim, forget_crashes=forget_crashes)


class BurstConsumer(Consumer):
    """Hands every delivery over at once; records acks (checking the store first), releases, retries."""

    def __init__(self, bodies: Sequence[bytes], done: Callable[[str], bool]) -> None:
        self.deliveries = [Delivery(Message(b), token=i) for i, b in enumerate(bodies)]
        self.done = done
        self.acked: list[int] = []
        self.acked_before_marked: list[int] = []
        self.released: list[int] = []
        self.retried: list[int] = []
        self.settled = threading.Condition()
        self._stopped = threading.Event()
        self._drained = threading.Event()

    def run(self, on_message: Callable[[Delivery], None]) -> None:
        for message in self.deliveries:
            on_message(message)
        self._drained.wait(30)

    def stop(self) -> None:
        self._stopped.set()

    def drained(self) -> None:
        self._drained.set()

    def alive(self, message: Delivery) -> bool:
        return True

    def _record(self, into: list[int], message: Delivery) -> bool:
        with self.settled:
            into.append(int(str(message.token)))
            self.settled.notify_all()
        return True

    def ack(self, message: Delivery) -> bool:
        job_id = new_job_id(int(str(message.token)))
        if not self.done(job_id):
            self.acked_before_marked.append(int(str(message.token)))
        return self._record(self.acked, message)

    def release(self, messages: Sequence[Delivery]) -> None:
        for message in messages:
            self._record(self.released, message)

    def retry_later(self, message: Delivery, delay_s: float, headers: Mapping[str, Any]) -> bool:
        return self._record(self.retried, message)

    def dead_letter(self, message: Delivery, headers: Mapping[str, Any]) -> bool:
        raise AssertionError("nothing here is dead-lettered")

    def wait_for(self, settled: Callable[[], bool]) -> None:
        with self.settled:
            assert self.settled.wait_for(settled, timeout=30)


class BurstTransport(BrokerTransport):
    capabilities: ClassVar[TransportCapabilities] = TransportCapabilities(max_delay_s=3600)

    def __init__(self, consumer: BurstConsumer) -> None:
        self._consumer = consumer

    def declare(self, queue: str) -> None:
        """Nothing to declare in memory."""

    def publish_now(
        self, messages: Sequence[Outgoing], *, window: int, options: Mapping[str, str] | None
    ) -> PublishResult:
        raise AssertionError("the worker under test publishes nothing")

    def consumer(self, queue: str, *, prefetch: int, lease_s: float) -> Consumer:
        return self._consumer

    def close(self) -> None:
        """Nothing to close."""


def new_job_id(index: int) -> str:
    return f"group-commit-{index}"


@pytest.fixture
def store(unique: str) -> Iterator[RecordingStore]:
    opened = open_store(f"{REDIS_URL}?prefix=test{unique}")
    assert isinstance(opened, RedisStore)
    recording = RecordingStore(opened._client, url=REDIS_URL, prefix=opened.prefix)
    recording.round_trips = []
    recording.released = []
    yield recording
    recording.delete_prefix()
    recording.close()


def run_burst(
    store: RecordingStore,
    jobs: int,
    settled: Callable[[BurstConsumer], bool],
    task: Callable[[TaskContext, dict[str, Any]], None] | None = None,
    concurrency: int = 1,
    prefetch: int = 0,
) -> BurstConsumer:
    def noop(ctx: TaskContext, job: dict[str, Any]) -> None:
        """Nothing: what is tested is how the worker commits."""

    registry = TaskRegistry()
    registry.register(TaskSpec("noop", task or noop))
    bodies = [new_job("noop", job_id=new_job_id(i)).encode() for i in range(jobs)]
    consumer = BurstConsumer(bodies, lambda job_id: job_id in store.done_among([job_id]))
    settings = WorkerSettings(queue="group-commit", concurrency=concurrency, prefetch=prefetch)
    worker = Worker(settings, BurstTransport(consumer), store, registry)
    runner = threading.Thread(target=worker.run)
    runner.start()
    try:
        consumer.wait_for(lambda: settled(consumer))
    finally:
        worker.request_stop()
        runner.join(30)
    assert not runner.is_alive()
    return consumer


def test_a_burst_is_claimed_and_marked_done_in_a_few_round_trips_and_every_job_is_marked_before_its_ack(
    store: RecordingStore,
) -> None:
    jobs = 20
    consumer = run_burst(store, jobs, lambda c: len(c.acked) == jobs, prefetch=2 * jobs)
    assert sorted(consumer.acked) == list(range(jobs))
    assert consumer.acked_before_marked == []
    assert store.done_among(new_job_id(i) for i in range(jobs)) == {new_job_id(i) for i in range(jobs)}
    assert sum(marks for marks, _ in store.round_trips) == jobs
    assert sum(claims for _, claims in store.round_trips) == jobs
    assert len(store.round_trips) <= 4  # marks go out a window's quarter at a time (10), claims all at once


def test_a_store_failure_on_a_round_trip_with_marks_fails_those_runs_and_gives_its_deliveries_back(
    store: RecordingStore,
) -> None:
    store.fail_next_marks = True
    jobs = 12

    def all_settled(c: BurstConsumer) -> bool:
        return len(c.acked) + len(c.retried) + len(c.released) >= jobs and bool(c.retried)

    consumer = run_burst(store, jobs, all_settled)
    assert consumer.retried  # the marks lost with the round trip: failed runs, retried later
    assert consumer.acked_before_marked == []
    settled = consumer.acked + consumer.retried + consumer.released
    assert sorted(set(settled)) == list(range(jobs))  # nothing lost
    assert not set(consumer.acked) & set(consumer.retried)
    done = store.done_among(new_job_id(i) for i in range(jobs))
    assert done == {new_job_id(i) for i in consumer.acked}


def test_a_suspect_runs_alone_with_a_claim_of_its_own_and_its_neighbours_run_beside_each_other(
    store: RecordingStore,
) -> None:
    suspect = new_job_id(0)
    # its run started, then its lease runs out: a crash on record
    assert store.start(store.claim(suspect, "a-worker-that-died", 0.05))
    time.sleep(0.2)
    store.round_trips.clear()
    running: set[str] = set()
    beside: dict[str, set[str]] = {}
    lock = threading.Lock()

    def watch(ctx: TaskContext, job: dict[str, Any]) -> None:
        with lock:
            running.add(ctx.job_id)
            beside.setdefault(ctx.job_id, set()).update(running - {ctx.job_id})
        time.sleep(0.05)
        with lock:
            beside[ctx.job_id].update(running - {ctx.job_id})
            running.discard(ctx.job_id)

    jobs = 8
    consumer = run_burst(store, jobs, lambda c: len(c.acked) == jobs, watch, concurrency=4)
    assert sorted(consumer.acked) == list(range(jobs))
    assert beside[suspect] == set()
    assert any(beside[new_job_id(i)] for i in range(1, jobs))  # the others do run side by side
    assert store.released == [suspect]  # it gave back the claim taken in the window, then claimed again
    assert sum(claims for _, claims in store.round_trips) == jobs + 1


def test_at_stop_the_claims_of_jobs_that_never_started_are_released_and_their_deliveries_given_back(
    store: RecordingStore,
) -> None:
    started = threading.Event()

    def slow(ctx: TaskContext, job: dict[str, Any]) -> None:
        started.set()
        time.sleep(0.3)

    jobs = 20
    consumer = run_burst(store, jobs, lambda c: started.is_set(), slow)
    assert consumer.acked and consumer.released  # the run under way at stop finished, the rest went back
    assert sorted(consumer.acked + consumer.released) == list(range(jobs))
    assert sorted(store.released) == sorted(new_job_id(i) for i in consumer.released)
    for i in consumer.released:  # released, not left to lapse: no crash counted against them
        assert store.claim(new_job_id(i), "next-worker", 5).crashes == 0


def test_a_bug_in_the_worker_gives_the_delivery_back_and_stops_it_instead_of_redelivering_forever(
    store: RecordingStore,
) -> None:
    class BuggyStore(RecordingStore):
        def complete_and_claim(
            self, claims: Sequence[Claim], job_ids: Sequence[str], owner: str, lease_s: float
        ) -> tuple[list[bool], list[Claim]]:
            raise TypeError("a bug in the worker's own code")

    buggy = BuggyStore(store._client, url=REDIS_URL, prefix=store.prefix)
    registry = TaskRegistry()
    registry.register(TaskSpec("noop", lambda ctx, job: None))
    consumer = BurstConsumer([new_job("noop", job_id=new_job_id(0)).encode()], lambda _id: False)
    worker = Worker(WorkerSettings(queue="bug", concurrency=1), BurstTransport(consumer), buggy, registry)
    failed: list[BaseException] = []

    def run() -> None:
        try:
            worker.run()
        except TypeError as exc:
            failed.append(exc)

    runner = threading.Thread(target=run)
    runner.start()
    runner.join(30)
    assert not runner.is_alive()  # it stopped by itself
    assert [str(e) for e in failed] == ["a bug in the worker's own code"]
    assert consumer.released == [0] and consumer.acked == []  # nothing lost, nothing retried forever
