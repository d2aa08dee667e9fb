"""``x-tq-attempts`` counts the runs that started, never the claims: a worker's death charges a crash only
to the job that was running when it died.

A worker claims its whole prefetch window in one store round trip, so when a task kills the process, the jobs
claimed with it and waiting for a job thread die claimed too. Their runs never started: the store is told of a
run's start before the task runs (``CompletionStore.start``), and a claim that expires unstarted counts no
crash. So each poison job below reaches ``--crash-limit`` through runs of its own, and the dead letter's
``x-tq-attempts`` equals the runs its task recorded (before, a job that only waited in a dying worker's window
was charged as if it had run: ``x-tq-attempts: 2`` after one run).
"""

from __future__ import annotations

import json

import pytest
from worker_harness import Pipeline, SQLitePipeline, pipeline_fixture, sqlite_pipeline_fixture  # noqa: F401

from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.registry import plugin_for_url

POISON = [f"poison-{i}" for i in range(3)]
CRASH_LIMIT = 2


def dead_letters(pipeline: Pipeline) -> dict[str, dict[str, object]]:
    """The headers of each dead letter in the pipeline's DLQ, by the short id of its job."""
    if isinstance(pipeline, SQLitePipeline):
        url = pipeline.broker_url or ""
        with plugin_for_url(url).admin(BrokerConfig(url=url)) as admin:
            messages = [m for m in admin.peek(pipeline.dlq, 100).messages]
        return {pipeline.short(json.loads(m.body)["id"]): dict(m.headers) for m in messages}
    return {
        pipeline.short(json.loads(body)["id"]): dict(properties.headers)
        for properties, body in pipeline.dead_letters()
    }


@pytest.mark.parametrize(
    "store",
    [
        pytest.param("redis", marks=[pytest.mark.rabbitmq, pytest.mark.redis]),
        pytest.param("sqlite"),
    ],
)
def test_jobs_killed_while_waiting_in_a_dying_workers_window_are_charged_no_crash(
    request: pytest.FixtureRequest, store: str
) -> None:
    pipeline: Pipeline = request.getfixturevalue("pipeline" if store == "redis" else "sqlite_pipeline")
    pipeline.publish([{"task_type": "poison", "id": job_id} for job_id in POISON])
    # one job thread: each poison job runs (and kills the worker) while the others wait in its window, claimed
    worker = pipeline.start(
        "--concurrency", "1", "--prefetch", "8", "--lease", "1", "--crash-limit", str(CRASH_LIMIT)
    )
    pipeline.wait_for(
        lambda: pipeline.depth(pipeline.dlq) == len(POISON), 120, "every poison job's quarantine"
    )
    dead = dead_letters(pipeline)
    runs = pipeline.runs()
    assert {j: h["x-tq-reason"] for j, h in dead.items()} == dict.fromkeys(POISON, "crash_loop")
    assert {j: h["x-tq-attempts"] for j, h in dead.items()} == {j: runs[j] for j in POISON}
    assert set(runs.values()) == {CRASH_LIMIT}
    assert worker.poll() is None  # the supervisor restarted the worker after every kill
