"""The dashboard's telemetry during a demo: only this run's workers."""

from typing import Any

from tqadmin.demo.layout import plan
from tqadmin.demo.live import DemoTelemetry
from tqadmin.store.completion.base import WorkerRecord
from tqadmin.telemetry.counters import TaskStats
from tqadmin.telemetry.snapshot import Reading, WorkerHistory, WorkerSnapshot

STARTED = 1000.0


def snapshot(worker_id: str, queue: str, started_at: float, done: int) -> WorkerSnapshot:
    stats = TaskStats(done=done, failed=1)
    stats.run.record(0.003)
    stats.wait.record(0.4)
    return WorkerSnapshot(
        worker_id, "host", 1, (queue,), started_at, started_at + 5, stats={(queue, "resize_image"): stats}
    )


class FakeStore:
    def __init__(self, snapshots: list[WorkerSnapshot]) -> None:
        self.snapshots = snapshots

    def history(self, window_s: float) -> tuple[float, list[WorkerHistory]]:
        return STARTED + 10, [WorkerHistory(Reading(STARTED + 5, s), None) for s in self.snapshots]

    def workers(self) -> list[WorkerRecord]:
        return [WorkerRecord(s, 1.0, True) for s in self.snapshots]


def test_the_panel_shows_this_demos_workers_only() -> None:
    store: Any = FakeStore(
        [
            snapshot("mine", "demo.images", STARTED + 1, 7),
            snapshot("earlier-demo", "demo.images", STARTED - 600, 100),
            snapshot("other-app", "orders", STARTED + 1, 50),
        ]
    )
    view = DemoTelemetry(store, plan("demo", 4), STARTED).read()
    assert [w.id for w in view.workers] == ["mine"]
    (task_type,) = view.task_types
    assert (task_type.name, task_type.done, task_type.failed) == ("resize_image", 7, 1)
    assert task_type.run.p50 is not None and task_type.run.buckets
    assert 0 < view.failure_rate < 1
