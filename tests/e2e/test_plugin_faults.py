"""A fault a broker plugin did not expect, in a background thread of its consumer or in its I/O loop, ends the
worker process loudly (exit 1, a masked traceback) and its supervisor starts a new one, with backoff, counting
the restarts in the log and the heartbeat: a transient fault heals, a repeated one is restarted each time,
and nothing is acked that did not run (every job's effect exactly once).

Before, a dead SQS settler left every waiting delete hanging and its worker up consuming nothing, and a child
that exited 1 was never restarted. The faults are injected by ``fault_tasks.py`` (real Redis, moto's SQS
server, the SQLite file).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fault_tasks import __file__ as FAULT_TASKS
from redis_pipeline import RedisPipeline, redis_pipeline_fixture  # noqa: F401 - the fixture
from sqs_pipeline import SqsPipeline, sqs_pipeline_fixture  # noqa: F401 - the fixture
from worker_harness import Pipeline, SQLitePipeline, sqlite_pipeline_fixture  # noqa: F401 - the fixture

from tqadmin.store.factory import open_store

JOBS = 40


def heartbeat_restarts(pipeline: Pipeline) -> int | None:
    """The restarts the live worker of this queue counts in its heartbeat (None while none beats)."""
    store = open_store(pipeline.store_url)
    try:
        live = [
            r.snapshot.restarts for r in store.workers() if r.alive and pipeline.queue in r.snapshot.queues
        ]
    finally:
        store.close()
    return max(live) if live else None


def faulted_run(
    pipeline: Pipeline, where: str, times: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("E2E_FAULT", where)
    monkeypatch.setenv("E2E_FAULT_MARKER", str(tmp_path / "faults"))
    monkeypatch.setenv("E2E_FAULT_TIMES", str(times))
    ids = pipeline.publish([{"task_type": "count", "id": f"c-{i}"} for i in range(JOBS)])
    worker = pipeline.start_with_tasks(FAULT_TASKS, "--concurrency", "4", "--lease", "3", verbose=False)
    pipeline.wait_for(lambda: len(pipeline.effects()) == JOBS, 120, "every job's effect")
    pipeline.wait_for(
        lambda: heartbeat_restarts(pipeline) == times, 30, f"a heartbeat counting {times} restarts"
    )
    pipeline.wait_for(lambda: pipeline.pending() == 0, 60, "the queue to empty")

    assert (tmp_path / "faults").read_text().count("\n") == times  # each fault struck a process of its own
    assert worker.poll() is None, "the worker is up after the faults"
    assert set(pipeline.effects()) == set(ids)
    assert set(pipeline.effects().values()) == {1}  # nothing acked that did not run, nothing committed twice
    log = "".join(path.read_text(errors="replace") for path in sorted(pipeline.logs.glob("worker-*.log")))
    assert log.count("Traceback (most recent call last)") >= times  # loud, with the traceback
    assert "PluginFault" in log and "RuntimeError: injected fault near amqp://bob:***@broker.example/" in log
    assert "hunter2" not in log
    for n in range(1, times + 1):
        assert f"stopped after a fault (exit 1); restart {n} in" in log


@pytest.mark.sqs
@pytest.mark.redis
def test_a_dead_sqs_settler_ends_the_worker_process_and_a_fresh_one_heals(
    sqs_pipeline: SqsPipeline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sqs_pipeline.declare(sqs_pipeline.queue)
    faulted_run(sqs_pipeline, "sqs-settler", 1, tmp_path, monkeypatch)


@pytest.mark.redis
def test_a_redis_settler_that_dies_three_times_is_restarted_three_times_and_counted(
    redis_pipeline: RedisPipeline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    faulted_run(redis_pipeline, "redis-settler", 3, tmp_path, monkeypatch)


def test_a_fault_in_the_sqlite_consumers_loop_ends_the_worker_process_and_a_fresh_one_heals(
    sqlite_pipeline: SQLitePipeline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    faulted_run(sqlite_pipeline, "sqlite-loop", 1, tmp_path, monkeypatch)
