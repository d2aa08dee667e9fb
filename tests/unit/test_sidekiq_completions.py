"""Sidekiq's counters as the stall verdict's completions (tqadmin.frameworks.sidekiq_workers.finished,
tqadmin.frameworks.progress): every live Sidekiq process serving a queue carries the global total of
``stat:processed`` + ``stat:failed``; the total proves a completion on a queue only when every Sidekiq process
serves that queue alone, and says what else it counts otherwise; one that stood proves the stall."""

from __future__ import annotations

import pytest

from tqadmin.frameworks import sidekiq_workers
from tqadmin.frameworks.progress import foreign_views
from tqadmin.plugin.models import QueueListing, QueueStats
from tqadmin.plugin.workers import CurrentJob, ForeignWorker, MalformedEntry, WorkerReading
from tqadmin.reading.reading import ProfileReading
from tqadmin.reading.verdicts import VerdictJudge, verdicts_of
from tqadmin.telemetry.verdict import VerdictPolicy

T0 = 1_780_000_000.0
TOTAL = "Sidekiq's stat:processed + stat:failed"


def process(name: str, *queues: str, alive: bool = True, jobs: tuple[CurrentJob, ...] = ()) -> ForeignWorker:
    return ForeignWorker("sidekiq", name, alive, 2.0, None, queues=queues, current_jobs=jobs, concurrency=5)


def test_the_total_is_processed_plus_failed_as_sidekiq_writes_them() -> None:
    assert sidekiq_workers.finished(b"120", b"7") == 127
    assert sidekiq_workers.finished(None, None) == 0  # no job ever ended: Sidekiq's own Stats read 0
    with pytest.raises(MalformedEntry, match="stat:processed is not a count"):
        sidekiq_workers.finished(b"-Infinity", b"7")


def test_a_process_serving_only_this_queue_carries_the_total_unshared() -> None:
    reading = WorkerReading(
        (process("web-1:1:a", "mail"), process("web-2:2:b", "mail")), totals={"sidekiq": 9}
    )
    views = foreign_views(reading, "sidekiq:mail")
    assert [(v.name, v.completed, v.counted_by, v.shared, v.flush_s) for v in views] == [
        ("sidekiq:web-1:1:a", 9, TOTAL, None, 10.0),
        ("sidekiq:web-2:2:b", 9, TOTAL, None, 10.0),
    ]


def test_a_total_shared_with_other_queues_says_which_bounded() -> None:
    others = [process(f"web-{i}:1:a", "mail", f"q{i}") for i in range(5)]
    reading = WorkerReading((*others, process("gone:1:x", alive=False)), totals={"sidekiq": 9})
    (first, *_) = foreign_views(reading, "sidekiq:mail")
    assert first.shared == (
        "it counts every Sidekiq process on this Redis, and they also serve sidekiq:q0, sidekiq:q1,"
        " sidekiq:q2 and 2 more"
    )
    blind = WorkerReading((process("web-1:1:a", "mail"), process("web-9:9:z")), totals={"sidekiq": 9})
    assert foreign_views(blind, "sidekiq:mail")[0].shared == (
        "it counts every Sidekiq process on this Redis, and one of them names no queues"
    )


def test_a_process_of_another_queue_makes_the_total_shared_though_it_does_not_serve_this_one() -> None:
    reading = WorkerReading(
        (process("web-1:1:a", "mail"), process("web-2:2:b", "billing")), totals={"sidekiq": 9}
    )
    (view,) = foreign_views(reading, "sidekiq:mail")
    assert view.shared is not None and view.shared.endswith("they also serve sidekiq:billing")


def test_without_the_total_a_process_counts_nothing_and_other_frameworks_are_untouched() -> None:
    assert foreign_views(WorkerReading((process("web-1:1:a", "mail"),)), "sidekiq:mail")[0].completed is None
    rq = ForeignWorker("rq", "w1", True, 1.0, None, queues=("mail",), ended=4)
    (view,) = foreign_views(WorkerReading((rq,), totals={"sidekiq": 9}), "rq:mail")
    assert (view.completed, view.counted_by, view.shared) == (4, None, None)


def judged(totals: list[int], *workers: ForeignWorker, window_s: float = 30) -> tuple[str, str]:
    judge = VerdictJudge(VerdictPolicy(window_s=window_s))
    listing = QueueListing((QueueStats("sidekiq:mail", 12, 12, 0, consumers=None, kind="sidekiq"),))
    found = {}
    for step, done in enumerate(totals):
        at = T0 + 10 * step
        judge.judge(ProfileReading("p", at, frameworks=WorkerReading(workers, totals={"sidekiq": done})))
        found = verdicts_of(judge.judge(ProfileReading("p", at + 1, listing=listing)))
    return found["sidekiq:mail"].verdict, found["sidekiq:mail"].reason


def test_the_judge_finds_a_sidekiq_queue_stalled_when_the_total_stood_and_ok_when_it_rose() -> None:
    mail = process("web-1:1:a", "mail")
    verdict, reason = judged([50, 50, 50, 50, 50], mail)
    assert verdict == "stalled", reason
    assert reason == f"ready 12 for 40s, 1 worker, no completion in 40s ({TOTAL} did not move)"
    assert judged([50, 50, 51, 53, 53], mail)[0] == "ok"
    verdict, reason = judged([50, 50, 51, 53, 53], mail, process("web-2:2:b", "mail", "billing"))
    assert verdict == "unknown", reason
    assert reason.endswith(
        f"{TOTAL} rose, but it counts every Sidekiq process on this Redis, and they also"
        " serve sidekiq:billing"
    )
