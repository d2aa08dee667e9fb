"""Worker processes on the embedded broker, store on the same file, while one of them is SIGKILLed every
second: nothing lost, every effect committed exactly once (the RabbitMQ run is test_worker_chaos.py)."""

from __future__ import annotations

import time

import pytest
from worker_harness import SQLitePipeline, sqlite_pipeline_fixture  # noqa: F401 - the fixture

pytestmark = [pytest.mark.slow]

JOBS = 2000
WORKER = ("--concurrency", "4", "--prefetch", "16", "--lease", "2", "--crash-limit", "20")


@pytest.mark.parametrize("processes", [2, 4])
def test_sigkilling_a_worker_every_second_loses_no_job_and_commits_every_effect_exactly_once(
    sqlite_pipeline: SQLitePipeline, processes: int, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = sqlite_pipeline
    ids = pipeline.publish([{"task_type": "count", "id": f"c-{i}", "work_s": 0.02} for i in range(JOBS)])
    workers = [pipeline.start(*WORKER, verbose=False) for _ in range(processes)]
    kills = 0
    deadline = time.monotonic() + 90
    while len(pipeline.effects()) < JOBS and time.monotonic() < deadline:
        time.sleep(1)
        victim = kills % len(workers)
        pipeline.kill(workers[victim])
        workers[victim] = pipeline.start(*WORKER, verbose=False)
        kills += 1
    pipeline.wait_for(lambda: len(pipeline.effects()) == JOBS, 60, "every job's effect")
    pipeline.wait_for(lambda: pipeline.depth() == 0, 30, "the queue to drain")

    effects, runs = pipeline.effects(), pipeline.runs()
    assert set(effects) == set(ids)  # 0 lost
    assert set(effects.values()) == {1}  # every effect committed exactly once
    assert pipeline.depth(f"{pipeline.queue}.dlq") == 0
    executions = sum(runs.values())
    assert executions >= JOBS and kills >= 3
    with capsys.disabled():
        print(
            f"\nsqlite chaos, {processes} processes: {JOBS} jobs, {kills} SIGKILLs, {executions} executions "
            f"({executions - JOBS} re-run after a kill), {sum(effects.values())} effects, 0 lost"
        )
