"""`tqadmin worker` on SQS (moto's server): 2,000 jobs while a worker is SIGKILLed every 3 s, and jobs
longer than the queue's visibility timeout, kept invisible by the worker's heartbeats.

moto's calls slow down with the number of messages a queue holds (a send or receive scans them), so the
jobs are fed in chunks that keep a few hundred queued, as a steady producer would.
"""

from __future__ import annotations

import time

import pytest
from sqs_pipeline import SqsPipeline, sqs_pipeline_fixture  # noqa: F401 - the fixture

pytestmark = [pytest.mark.sqs, pytest.mark.redis, pytest.mark.slow]

JOBS = 2000
CHUNK = 50
BACKLOG = 50  # fed while fewer are queued (moto slows down with a longer queue)
WORKER = ("--concurrency", "4", "--prefetch", "16", "--lease", "3", "--crash-limit", "10")


def test_sigkilling_a_worker_every_3_s_loses_no_job_and_commits_every_effect_exactly_once(
    sqs_pipeline: SqsPipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = sqs_pipeline
    jobs = [{"task_type": "count", "id": f"c-{i}", "work_s": 0.04} for i in range(JOBS)]
    ids: list[str] = []
    pipeline.declare(pipeline.queue)
    workers = [pipeline.start(*WORKER) for _ in range(3)]
    kills = 0
    deadline = time.monotonic() + 240
    next_kill = time.monotonic() + 3
    while len(pipeline.effects()) < JOBS and time.monotonic() < deadline:
        if len(ids) < JOBS and pipeline.depth() < BACKLOG:
            ids += pipeline.publish(jobs[len(ids) : len(ids) + CHUNK])
        time.sleep(0.5)
        if time.monotonic() >= next_kill:
            next_kill += 3
            victim = kills % len(workers)
            pipeline.kill(workers[victim])
            workers[victim] = pipeline.start(*WORKER)
            kills += 1
    assert len(ids) == JOBS
    outcome = pipeline.chaos_outcome(ids, kills, pipeline.dlq, wait_s=60)
    with capsys.disabled():
        print(f"\nsqs chaos: {outcome}")


def test_35_s_jobs_on_a_10_s_visibility_timeout_run_once(sqs_pipeline: SqsPipeline) -> None:
    pipeline = sqs_pipeline
    pipeline.queues.client.create_queue(QueueName=pipeline.queue, Attributes={"VisibilityTimeout": "10"})
    pipeline.publish([{"task_type": "sleep", "id": f"long-{i}", "seconds": 35} for i in range(3)])
    for _ in range(2):  # a second worker would get any job whose visibility ran out
        pipeline.start("--concurrency", "2", "--prefetch", "2", "--lease", "10")
    expected = {f"long-{i}": 1 for i in range(3)}
    pipeline.wait_for(lambda: pipeline.effects() == expected, 90, "the long jobs")
    pipeline.wait_for(lambda: pipeline.depth() == 0, 60, "the acks")
    time.sleep(1)
    assert pipeline.runs() == expected
