"""What a scrape serves of the last readings: bounded labels, queues past the cap folded in name order,
absent figures absent, counters that never go down while workers come and go."""

from __future__ import annotations

import dataclasses
from collections import Counter

from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from tqadmin.exporter.polling import Served
from tqadmin.exporter.series import fold, health_families, reading_families
from tqadmin.plugin.models import QueueStats
from tqadmin.telemetry import metric_names as names
from tqadmin.telemetry.counters import TaskStats, Telemetry
from tqadmin.telemetry.ledger import WorkerLedger
from tqadmin.telemetry.snapshot import WorkerSnapshot
from tqadmin.telemetry.task_names import MAX_TASK_TYPES, OTHER_TASKS, UNKNOWN_TASK

Samples = list[tuple[str, dict[str, str], float]]


class _Served(Collector):
    def __init__(self, readings: list[Served], max_queues: int) -> None:
        self.readings, self.max_queues = readings, max_queues

    def collect(self):  # type: ignore[no-untyped-def]
        return iter(
            [
                *health_families(self.readings, 1000.0),
                *reading_families(self.readings, fold(self.readings, self.max_queues)),
            ]
        )


def scrape(readings: list[Served], max_queues: int = 2000) -> Samples:
    text = generate_latest(_Served(readings, max_queues)).decode()
    return [(s.name, s.labels, s.value) for f in text_string_to_metric_families(text) for s in f.samples]


def queue(name: str, messages: int = 1, **figures: object) -> QueueStats:
    return QueueStats(name=name, messages=messages, ready=messages, unacked=0, consumers=1, **figures)  # type: ignore[arg-type]


def tasks(count: int) -> dict[str, TaskStats]:
    telemetry = Telemetry()
    for i in range(count):
        telemetry.started("q", f"task-{i:03d}", 0.01)
        telemetry.finished("q", f"task-{i:03d}", 0.2, ok=i % 3 != 0)
        telemetry.dead_lettered("q", f"task-{i:03d}", "exhausted")
    return {t: s for (_, t), s in telemetry.read().items()}


def test_a_thousand_queues_and_a_hundred_task_types_stay_within_bounded_label_sets() -> None:
    reading = Served(
        "prod",
        queues=tuple(queue(f"q{i:04d}") for i in range(1000)),
        tasks=tasks(100),
        workers=Counter(live=3, dead=1),
        up=True,
        last_success_s=995.0,
        duration_s=0.2,
    )
    samples = scrape([reading])
    allowed = {"profile", "queue", "task_type", "reason", "framework", "state", "le"}
    assert {key for _, labels, _ in samples for key in labels} <= allowed
    queue_labels = {labels["queue"] for _, labels, _ in samples if "queue" in labels}
    assert len(queue_labels) == 1000
    task_labels = {labels["task_type"] for _, labels, _ in samples if "task_type" in labels}
    assert len(task_labels) == 100
    # 13 queue gauges a queue at most; per task type 5 counters, 1 reason, 2 histograms of 17 buckets + 2
    assert len(samples) <= 1000 * 13 + 100 * (5 + 1 + 2 * (len(names.LE_EDGES) + 3)) + 50
    assert ("tqadmin_poll_age_seconds", {"profile": "prod"}, 5.0) in samples


def test_queues_past_the_cap_are_summed_as_other_in_name_order_and_counted() -> None:
    reading = Served(
        "prod", queues=(queue("c", 3, oldest_age_s=9.0), queue("a", 1), queue("b", 2, oldest_age_s=4.0))
    )
    samples = scrape([reading], max_queues=1)
    depth = {labels["queue"]: value for name, labels, value in samples if name == names.QUEUE_MESSAGES}
    assert depth == {"a": 1, names.OTHER_QUEUES: 5}
    oldest = {labels["queue"]: value for name, labels, value in samples if name == names.QUEUE_OLDEST_AGE}
    assert oldest == {names.OTHER_QUEUES: 9.0}, "the oldest of the folded, and none for a queue without one"
    assert (names.QUEUES_FOLDED, {"profile": "prod"}, 2) in samples


def test_the_cap_is_shared_by_every_profile_in_the_order_they_were_named() -> None:
    first = Served("a", queues=(queue("x"), queue("y")))
    second = Served("b", queues=(queue("z"),))
    samples = scrape([first, second], max_queues=2)
    shown = {
        (labels["profile"], labels["queue"]) for name, labels, _ in samples if name == names.QUEUE_MESSAGES
    }
    assert shown == {("a", "x"), ("a", "y"), ("b", names.OTHER_QUEUES)}


def test_a_figure_the_broker_does_not_give_is_absent_not_zero() -> None:
    sqs_like = QueueStats(name="q", messages=2, ready=2, unacked=0, consumers=None, oldest_age_s=None)
    samples = scrape([Served("aws", queues=(sqs_like,))])
    present = {name for name, labels, _ in samples if labels.get("queue") == "q"}
    assert names.QUEUE_MESSAGES in present
    assert names.QUEUE_CONSUMERS not in present and names.QUEUE_OLDEST_AGE not in present


def test_a_profile_never_read_is_down_with_no_age_and_no_queue_series() -> None:
    samples = scrape([Served("down", errors=3)])
    assert (names.UP, {"profile": "down"}, 0) in samples
    assert (names.POLL_ERRORS, {"profile": "down"}, 3) in samples
    assert not [s for s in samples if s[0] == names.POLL_AGE or "queue" in s[1]]


def _worker(worker_id: str, started_at: float, done: int) -> WorkerSnapshot:
    return WorkerSnapshot(
        worker_id, "h", 1, ("q",), started_at, started_at + 1, stats={("q", "t"): TaskStats(done=done)}
    )


def test_counters_never_go_down_when_workers_leave_restart_or_reuse_an_id() -> None:
    ledger = WorkerLedger()
    seen = []
    for listed in (
        [_worker("a", 1.0, 5), _worker("b", 1.0, 7)],
        [_worker("a", 1.0, 6)],  # b's heartbeat aged out of the store
        [_worker("a", 50.0, 1)],  # a restarted under the same id, its counts from zero
        [],
        [_worker("c", 60.0, 2)],
    ):
        ledger.update(listed)
        seen.append(ledger.totals().get("t", TaskStats()).done)
    assert seen == [12, 13, 14, 14, 16]


def test_a_worker_that_vanishes_from_the_store_for_a_poll_and_returns_is_counted_once() -> None:
    ledger = WorkerLedger()
    seen = []
    for listed in (
        [_worker("a", 1.0, 50_000), _worker("b", 1.0, 10)],
        [_worker("b", 1.0, 10)],  # a's keys lost (FLUSHDB, a failover): not listed for one poll
        [_worker("a", 1.0, 50_003), _worker("b", 1.0, 10)],  # its next heartbeat: the same process
        [_worker("a", 1.0, 50_004), _worker("b", 1.0, 11)],
    ):
        ledger.update(listed)
        seen.append(ledger.totals()["t"].done)
    assert seen == [50_010, 50_010, 50_013, 50_015]  # never 100,010: monotonic and true


def test_departed_workers_fold_into_the_totals_after_the_return_window_or_past_the_count_remembered() -> None:
    now = [0.0]
    ledger = WorkerLedger(clock=lambda: now[0], return_window_s=60, remember=2)
    ledger.update([_worker(f"w{i}", 1.0, 1) for i in range(4)])
    ledger.update([])  # all four leave: two are remembered by themselves, two fold
    assert ledger.totals()["t"].done == 4
    now[0] = 61.0
    ledger.update([_worker("w3", 1.0, 2)])  # too late to be taken back: folded, and counted anew
    assert ledger.totals()["t"].done == 6
    assert [w.worker_id for w in ledger.workers()] == ["w3"]


def test_other_frameworks_workers_are_counted_by_framework_and_state_beside_tqadmins() -> None:
    reading = Served(
        "redis",
        queues=(),
        workers=Counter(live=2),
        framework_workers=Counter({("rq", "live"): 3, ("rq", "dead"): 1, ("sidekiq", "live"): 2}),
        up=True,
    )
    served = {
        (labels["framework"], labels["state"]): value
        for name, labels, value in scrape([reading])
        if name == names.WORKERS
    }
    assert served == {
        ("tqadmin", "live"): 2,
        ("tqadmin", "dead"): 0,
        ("rq", "live"): 3,
        ("rq", "dead"): 1,
        ("sidekiq", "live"): 2,
        ("sidekiq", "dead"): 0,
    }


def test_other_frameworks_task_figures_are_served_under_their_framework_label() -> None:
    own = tasks(1)
    celery = {"events.nap": TaskStats(done=4, failed=1, retried=1)}
    celery["events.nap"].run.record(0.25)
    reading = Served("rabbit", queues=(), tasks=own, framework_tasks={"celery": celery}, up=True)
    runs = {
        (labels["framework"], labels["task_type"]): value
        for name, labels, value in scrape([reading])
        if name == names.TASK_RUNS
    }
    assert runs == {("tqadmin", "task-000"): 1, ("celery", "events.nap"): 5}


def test_task_types_past_the_cap_are_summed_as_other_and_the_folded_ones_counted_with_the_workers() -> None:
    reading = Served("prod", queues=(), tasks={**tasks(5), UNKNOWN_TASK: TaskStats(dead_lettered=9)})
    reading = dataclasses.replace(reading, folded_task_types=4)  # what the workers folded themselves
    samples = scrape([reading], max_queues=3)
    runs = {labels["task_type"]: value for name, labels, value in samples if name == names.TASK_RUNS}
    assert runs == {"task-000": 1, "task-001": 1, "task-002": 1, OTHER_TASKS: 2, UNKNOWN_TASK: 0}
    folded = {labels["framework"]: v for name, labels, v in samples if name == names.TASK_TYPES_FOLDED}
    assert folded == {"tqadmin": 4 + 2}


def test_another_frameworks_task_names_past_its_listeners_cap_are_summed_as_other() -> None:
    celery = {f"app.t{n:03d}": TaskStats(done=1) for n in range(MAX_TASK_TYPES + 20)}
    reading = Served("rabbit", queues=(), framework_tasks={"celery": celery}, framework_folded={"celery": 7})
    samples = scrape([reading])
    served = {labels["task_type"] for name, labels, _ in samples if name == names.TASK_RUNS}
    assert len(served) == MAX_TASK_TYPES + 1 and OTHER_TASKS in served
    assert (names.TASK_TYPES_FOLDED, {"profile": "rabbit", "framework": "celery"}, 27) in samples


def test_drain_growth_and_the_dlq_age_are_served_where_known_and_folded_to_the_worst() -> None:
    reading = Served(
        "prod",
        queues=(
            queue("a", drain_s=30.0, growing=False, dlq_oldest_age_s=600.0),
            queue("b", growing=True),
            queue("c"),
        ),
    )
    samples = scrape([reading])

    def served(name: str) -> dict[str, float]:
        return {labels["queue"]: value for metric, labels, value in samples if metric == name}

    assert served(names.QUEUE_DRAIN) == {"a": 30.0}
    assert served(names.QUEUE_GROWING) == {"a": 0.0, "b": 1.0}
    assert served(names.QUEUE_DLQ_OLDEST_AGE) == {"a": 600.0}
    folded = scrape([reading], max_queues=1)
    assert {labels["queue"]: value for metric, labels, value in folded if metric == names.QUEUE_GROWING} == {
        "a": 0.0,
        names.OTHER_QUEUES: 1.0,
    }


def test_wedged_workers_are_counted_by_framework_with_no_per_worker_label() -> None:
    reading = Served(
        "redis",
        queues=(),
        workers=Counter(live=3),
        framework_workers=Counter({("rq", "live"): 2}),
        wedged=Counter({"tqadmin": 1}),
        up=True,
    )
    served = [(labels, value) for name, labels, value in scrape([reading]) if name == names.WORKERS_WEDGED]
    assert served == [
        ({"profile": "redis", "framework": "rq"}, 0),
        ({"profile": "redis", "framework": "tqadmin"}, 1),
    ]
