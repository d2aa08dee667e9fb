"""The verdict computed once in the read service (tqadmin.reading.verdicts.VerdictJudge): each reading with a
listing is judged with the workers, other frameworks' workers and pauses last read, even when they came in
another reading (the dashboard reads the broker and the store in two threads); dead-letter and retry delay
queues are not judged; a reading without a listing is passed on as it is."""

from __future__ import annotations

from tqadmin.frameworks import rq_workers
from tqadmin.frameworks.progress import foreign_view
from tqadmin.plugin.models import QueueListing, QueueStats
from tqadmin.reading.reading import Pauses, ProfileReading
from tqadmin.reading.verdicts import VerdictJudge, verdicts_of
from tqadmin.store.completion.base import WorkerRecord
from tqadmin.store.pauses.base import Pause, Target
from tqadmin.telemetry.counters import TaskStats
from tqadmin.telemetry.snapshot import WorkerSnapshot
from tqadmin.telemetry.verdict import VerdictPolicy

T0 = 1_780_000_000.0
ORDERS = QueueStats("orders", 5, 5, 0, consumers=None, dlq="orders.dlq", dlq_messages=1)
LISTING = QueueListing(
    (
        ORDERS,
        QueueStats("orders.dlq", 1, 1, 0, consumers=0),
        QueueStats("orders.retry.5s", 2, 2, 0, consumers=0, delay_for="orders"),
    )
)


def worker(done: int) -> WorkerRecord:
    stats = {("orders", "charge"): TaskStats(done=done)}
    return WorkerRecord(WorkerSnapshot("w1", "h", 1, ("orders",), T0 - 60, T0, stats=stats), 0.5, True)


def test_the_workers_read_in_another_reading_serve_the_verdict_of_the_listing() -> None:
    judge = VerdictJudge(VerdictPolicy(window_s=10))
    found = {}
    for step in range(3):  # the store's reading, then the broker's, every 6 s
        judge.judge(ProfileReading("p", T0 + 6 * step, workers=(worker(7),)))
        found = verdicts_of(judge.judge(ProfileReading("p", T0 + 6 * step + 1, listing=LISTING)))
    assert set(found) == {"orders"}, "the DLQ and the retry tier are not judged"
    assert found["orders"].verdict == "stalled", found
    assert found["orders"].reason.endswith(", 1 worker, no completion in 12s")


def test_a_reading_without_a_listing_is_passed_on_unjudged() -> None:
    reading = ProfileReading("p", T0, workers=(worker(7),))
    assert VerdictJudge(VerdictPolicy()).judge(reading) is reading
    assert verdicts_of(reading) == {}


def test_a_queue_paused_whole_is_paused_with_the_pauses_words() -> None:
    judge = VerdictJudge(VerdictPolicy(window_s=10))
    pause = Pause(Target("orders"), "vendor 503", "ops", T0 - 5, T0 + 595)
    judge.judge(ProfileReading("p", T0, pauses=Pauses(T0, (pause,))))
    found = verdicts_of(judge.judge(ProfileReading("p", T0 + 1, listing=LISTING)))
    assert found["orders"].verdict == "paused" and found["orders"].reason.endswith(": vendor 503")


def test_an_rq_worker_s_finished_jobs_count_as_its_completions() -> None:
    """RQ's registry hash counts the jobs a worker finished: a count that moved is progress, one that stood
    through the window with work waiting proves the stall (the queue's consumer count is its workers)."""
    fields = {"successful_job_count": "5", "failed_job_count": "1", "birth": T0, "queues": "orders"}
    rq = rq_workers.worker("rq:worker:w1", fields, 400.0, {}, T0)
    assert rq.ended == 6 and foreign_view(rq).completed == 6
    assert rq_workers.worker("rq:worker:w1", {"birth": T0}, 400.0, {}, T0).ended is None
