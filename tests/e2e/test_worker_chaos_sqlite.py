"""Worker processes on the embedded broker, store on the same file, while one of them is SIGKILLed every
second: nothing lost, every effect committed exactly once (the RabbitMQ run is test_worker_chaos.py)."""

from __future__ import annotations

import pytest
from worker_harness import SQLitePipeline, sqlite_pipeline_fixture  # noqa: F401 - the fixture

pytestmark = [pytest.mark.slow]

JOBS = 2000
WORKER = ("--concurrency", "4", "--prefetch", "16", "--lease", "2", "--crash-limit", "20")


@pytest.mark.parametrize("processes", [2, 4])
def test_sigkilling_a_worker_every_second_loses_no_job_and_commits_every_effect_exactly_once(
    sqlite_pipeline: SQLitePipeline, processes: int, capsys: pytest.CaptureFixture[str]
) -> None:
    line = sqlite_pipeline.chaos(jobs=JOBS, processes=processes, kill_every_s=1, work_s=0.02, worker=WORKER)
    with capsys.disabled():
        print(f"\nsqlite chaos: {line}")
