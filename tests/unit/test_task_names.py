"""Names from messages are bounded before anything keeps them: a task type past its limit is no job's, jobs of
no task count under one label, and past the cap task types fold into ``(other)``, counted."""

from __future__ import annotations

import json

import pytest

from tqadmin.errors import UsageError
from tqadmin.frameworks.celery_events import CeleryEvents
from tqadmin.pipeline.job import MalformedJob, decode_job
from tqadmin.pipeline.tasks import TaskRegistry, TaskSpec
from tqadmin.telemetry.counters import TaskStats, Telemetry, fold_task_types
from tqadmin.telemetry.snapshot import WorkerSnapshot
from tqadmin.telemetry.task_names import (
    MAX_FOLDED_COUNTED,
    MAX_JOB_ID_CHARS,
    MAX_TASK_TYPE_CHARS,
    MAX_TASK_TYPES,
    OTHER_TASKS,
    UNKNOWN_TASK,
)


def body(task_type: str) -> bytes:
    return json.dumps({"task_type": task_type, "id": "j1"}).encode()


def test_a_task_type_up_to_the_limit_is_a_job_and_one_past_it_is_malformed() -> None:
    assert decode_job(body("t" * MAX_TASK_TYPE_CHARS)).task_type == "t" * MAX_TASK_TYPE_CHARS
    with pytest.raises(MalformedJob) as refused:
        decode_job(body("t" * (MAX_TASK_TYPE_CHARS + 1)))
    assert refused.value.reason == "malformed"
    assert f"{MAX_TASK_TYPE_CHARS + 1} characters" in str(refused.value) and len(str(refused.value)) < 100


def test_a_job_id_up_to_its_limit_is_a_job_and_one_past_it_is_malformed() -> None:
    def with_id(job_id: object) -> bytes:
        return json.dumps({"task_type": "t", "id": job_id}).encode()

    assert decode_job(with_id("i" * MAX_JOB_ID_CHARS)).id == "i" * MAX_JOB_ID_CHARS
    for hostile in ("i" * (MAX_JOB_ID_CHARS + 1), int("9" * 401)):
        with pytest.raises(MalformedJob) as refused:
            decode_job(with_id(hostile))
        assert refused.value.reason == "malformed" and len(str(refused.value)) < 100


def test_a_task_named_past_the_limit_or_like_a_label_cannot_be_registered() -> None:
    registry = TaskRegistry()
    registry.register(TaskSpec("t" * MAX_TASK_TYPE_CHARS, lambda ctx, job: None))
    for name in ("t" * (MAX_TASK_TYPE_CHARS + 1), UNKNOWN_TASK, OTHER_TASKS):
        with pytest.raises(UsageError):
            registry.register(TaskSpec(name, lambda ctx, job: None))


def test_past_the_cap_a_queues_new_task_types_are_recorded_under_other_and_counted() -> None:
    telemetry = Telemetry(max_task_types=3)
    for n in range(5):
        for _ in range(2):
            telemetry.finished("q", f"t{n}", 0.1, ok=True)
    telemetry.dead_lettered("q", UNKNOWN_TASK, "unknown_task")  # a label: never folded, never counted
    telemetry.finished("other-queue", "t4", 0.1, ok=True)  # another queue has room of its own
    stats = telemetry.read()
    assert sorted(stats) == [
        ("other-queue", "t4"),
        ("q", OTHER_TASKS),
        ("q", UNKNOWN_TASK),
        ("q", "t0"),
        ("q", "t1"),
        ("q", "t2"),
    ]
    assert stats[("q", OTHER_TASKS)].done == 4  # t3 and t4, twice each
    assert telemetry.folded == 2


def test_ten_thousand_made_up_names_leave_a_snapshot_of_the_cap() -> None:
    telemetry = Telemetry()
    for n in range(MAX_FOLDED_COUNTED + 500):
        telemetry.finished("q", f"made-up-{n:05d}-" + "x" * 60, 0.01, ok=False)
    snapshot = WorkerSnapshot("w", "h", 1, ("q",), 0.0, 1.0, stats=telemetry.read())
    assert len(snapshot.stats) == MAX_TASK_TYPES + 1
    assert telemetry.folded == MAX_FOLDED_COUNTED, "counted one by one up to the figure, then held there"
    assert sum(stats.failed for stats in snapshot.stats.values()) == MAX_FOLDED_COUNTED + 500
    assert len(snapshot.encode()) < 200 * (MAX_TASK_TYPES + 1)


def test_the_count_of_folded_task_types_travels_with_the_snapshot() -> None:
    snapshot = WorkerSnapshot("w", "h", 1, ("q",), 0.0, 1.0, folded_task_types=7)
    assert WorkerSnapshot.decode(snapshot.encode()).folded_task_types == 7
    older = {k: v for k, v in snapshot.to_json().items() if k != "folded"}
    assert WorkerSnapshot.from_json(older).folded_task_types == 0


def test_folding_keeps_the_first_names_in_name_order_and_the_labels_and_adds_up_the_rest() -> None:
    figures = {name: TaskStats(done=1) for name in ("d", "b", "a", "c", UNKNOWN_TASK)}
    figures[OTHER_TASKS] = TaskStats(done=10)  # folded already by a worker
    kept, folded = fold_task_types(figures, 2)
    assert sorted(kept) == sorted(["a", "b", UNKNOWN_TASK, OTHER_TASKS])
    assert kept[OTHER_TASKS].done == 12 and folded == 2
    assert fold_task_types(figures, 10) == (dict(sorted(figures.items())), 0)


def test_the_celery_listener_keeps_figures_for_the_capped_number_of_names_cut_to_the_limit() -> None:
    events = CeleryEvents()
    for n in range(1000):
        name = f"app.task{n:04d}" + "x" * 1000
        started = {"type": "task-started", "uuid": f"u{n}", "timestamp": 1.0, "hostname": "c@h", "name": name}
        events.apply(started)
        events.apply({**started, "type": "task-succeeded", "timestamp": 2.0})
    stats = events.task_stats()
    assert len(stats) == MAX_TASK_TYPES + 1 and stats[OTHER_TASKS].done == 1000 - MAX_TASK_TYPES
    assert max(len(name) for name in stats) == MAX_TASK_TYPE_CHARS
    assert events.folded == 1000 - MAX_TASK_TYPES
