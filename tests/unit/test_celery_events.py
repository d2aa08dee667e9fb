"""Celery's events folded into workers and latencies: what each event does, a hostile one skipped, and the
memory bound whatever the rate (tasks that never finish, workers that come and go with every pod)."""

from __future__ import annotations

import json
from base64 import b64encode

from tqadmin.frameworks import celery_events
from tqadmin.frameworks.celery_events import CeleryEvents, events_in, events_in_envelope

NOW = 1_780_000_000.0


def task(kind: str, uuid: str, at: float, host: str = "celery@w1", **extra: object) -> dict[str, object]:
    return {"type": kind, "uuid": uuid, "timestamp": at, "hostname": host, **extra}


def test_without_sent_events_the_wait_is_measured_from_receipt_and_named_so() -> None:
    events = CeleryEvents()
    events.apply(task("task-received", "u1", NOW, name="shop.charge"))
    events.apply(task("task-started", "u1", NOW + 0.5))
    events.apply(task("task-succeeded", "u1", NOW + 0.7, runtime=0.2))
    stats = events.task_stats()["shop.charge"]
    assert events.wait_from == "received" and (stats.done, stats.wait.count, stats.run.count) == (1, 1, 1)
    assert (
        abs(stats.wait.percentiles()["p50"] - 0.5) < 0.01 and abs(stats.run.percentiles()["p50"] - 0.2) < 0.01
    )


def test_a_failed_task_without_runtime_runs_until_its_failure_and_counts_failed() -> None:
    events = CeleryEvents()
    events.apply(task("task-received", "u1", NOW, name="shop.charge"))
    events.apply(task("task-started", "u1", NOW + 0.1))
    events.apply(task("task-failed", "u1", NOW + 1.1))
    stats = events.task_stats()["shop.charge"]
    assert (stats.done, stats.failed) == (0, 1) and abs(stats.run.percentiles()["p50"] - 1.0) < 0.02


def test_a_worker_lives_two_heartbeat_intervals_and_says_goodbye_with_worker_offline() -> None:
    events = CeleryEvents()
    events.apply({"type": "worker-heartbeat", "hostname": "celery@a", "timestamp": NOW, "freq": 5.0})
    events.apply({"type": "worker-online", "hostname": "celery@b", "timestamp": NOW})
    events.apply({"type": "worker-offline", "hostname": "celery@b", "timestamp": NOW + 1})
    shown = {w.name: w for w in events.workers(NOW + 9.0)}
    assert shown["celery@a"].alive and shown["celery@a"].host == "a"
    assert (shown["celery@b"].alive, shown["celery@b"].dead_reason) == (False, "it sent worker-offline")
    late = {w.name: w for w in events.workers(NOW + 10.5)}["celery@a"]
    assert (late.alive, late.dead_reason) == (False, "no worker-heartbeat in 2 x its 5 s interval")


def test_hostile_events_are_counted_and_skipped() -> None:
    events = CeleryEvents()
    for hostile in ({"type": "task-started"}, {"type": "task-started", "timestamp": "x", "hostname": "h"},
                    {"type": "task-started", "timestamp": NOW, "hostname": "h"},
                    {"type": "worker-heartbeat", "timestamp": float("nan"), "hostname": "h"}):  # fmt: skip
        events.apply(hostile)
    assert (events.events, events.skipped, events.workers(NOW), events.task_stats()) == (0, 4, (), {})
    assert events_in(b"\xff") == [] and events_in(b'[1, {"type": 2}, {"type": "x"}]') == [{"type": "x"}]
    assert events_in_envelope(b'{"body": "!!", "properties": {"body_encoding": "base64"}}') == []


def test_kombus_redis_envelope_is_opened_with_its_body_encoding() -> None:
    body = json.dumps([{"type": "task-sent", "uuid": "u"}]).encode()
    envelope = {"body": b64encode(body).decode(), "properties": {"body_encoding": "base64"}}
    assert events_in_envelope(json.dumps(envelope).encode()) == [{"type": "task-sent", "uuid": "u"}]


def test_memory_is_bounded_by_the_open_tasks_and_the_workers_kept_whatever_the_rate() -> None:
    events = CeleryEvents()
    for n in range(60_000):  # tasks that started and never finished, each on a worker of its own pod
        events.apply(task("task-received", f"t{n}", NOW + n, host=f"celery@pod-{n}", name=f"job{n % 7}"))
        events.apply(task("task-started", f"t{n}", NOW + n, host=f"celery@pod-{n}"))
        events.apply({"type": "worker-heartbeat", "hostname": f"celery@pod-{n}", "timestamp": NOW + n})
    assert (
        len(events._tasks) == celery_events.MAX_TASKS and events.forgotten == 60_000 - celery_events.MAX_TASKS
    )
    assert len(events.workers(NOW + 60_000)) == celery_events.MAX_WORKERS
    assert len(events.task_stats()) == 7  # one histogram pair per task name


def test_a_sent_event_that_arrives_after_the_start_still_gives_the_wait() -> None:
    events = CeleryEvents()
    events.apply(task("task-sent", "u0", NOW, host="web", name="shop.charge"))  # sent events are on
    events.apply(task("task-received", "u1", NOW + 0.1, name="shop.charge"))
    events.apply(task("task-started", "u1", NOW + 0.3))
    events.apply(task("task-sent", "u1", NOW, host="web", name="shop.charge"))  # the producer's, late
    wait = events.task_stats()["shop.charge"].wait
    assert wait.count == 1 and abs((wait.percentiles()["p50"] or 0) - 0.3) < 0.01


def test_tasks_that_started_before_the_listener_are_counted_from_the_heartbeat() -> None:
    events = CeleryEvents()
    events.apply({"type": "worker-heartbeat", "hostname": "celery@a", "timestamp": NOW, "active": 2})
    (worker,) = events.workers(NOW + 1)
    assert (worker.state, worker.current_jobs) == ("busy (2 running)", ())


def test_a_dead_worker_is_forgotten_after_the_hour_tqadmins_own_dead_workers_are_kept() -> None:
    from tqadmin.store.completion.base import Retention
    from tqadmin.telemetry.snapshot import DEAD_WORKER_KEEP_S

    events, hour_later = CeleryEvents(), NOW + DEAD_WORKER_KEEP_S
    events.apply({"type": "worker-heartbeat", "hostname": "celery@gone", "timestamp": NOW})
    events.apply({"type": "worker-heartbeat", "hostname": "celery@here", "timestamp": hour_later})
    dead = {w.name: w.alive for w in events.workers(NOW + DEAD_WORKER_KEEP_S)}
    assert dead == {"celery@gone": False, "celery@here": True}
    later = events.workers(NOW + DEAD_WORKER_KEEP_S + 1.0)
    assert [w.name for w in later] == ["celery@here"]
    assert [w.name for w in events.workers(NOW + DEAD_WORKER_KEEP_S + 1.0, ["celery@gone"])] == [
        "celery@gone",  # its control queue is still there: listed by it, without a heartbeat
        "celery@here",
    ]
    assert Retention().dead_worker_s == DEAD_WORKER_KEEP_S == 3600.0
