"""5,000 jobs through 4 worker processes while one of them is SIGKILLed every 2 s; and a long job."""

from __future__ import annotations

import time

import pytest
from worker_harness import Pipeline, pipeline_fixture  # noqa: F401 - the fixture

pytestmark = [pytest.mark.rabbitmq, pytest.mark.redis, pytest.mark.slow]

JOBS = 5000
WORKER = ("--concurrency", "4", "--prefetch", "16", "--lease", "2", "--crash-limit", "10")


def test_sigkilling_a_worker_every_2_s_loses_no_job_and_commits_every_effect_exactly_once(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    line = pipeline.chaos(jobs=JOBS, processes=4, kill_every_s=2, work_s=0.04, worker=WORKER)
    with capsys.disabled():
        print(f"\nchaos: {line}")


def test_a_30_s_job_with_a_5_s_amqp_heartbeat_runs_once(pipeline: Pipeline) -> None:
    pipeline.publish([{"task_type": "sleep", "id": "long", "seconds": 30}])
    pipeline.start("--concurrency", "1", broker="amqp://guest:guest@127.0.0.1:5672/%2F?heartbeat=5")
    pipeline.wait_for(lambda: pipeline.effects() == {"long": 1}, 60, "the long job")
    pipeline.wait_for(lambda: pipeline.depth() == 0, 60, "the ack")
    time.sleep(1)
    assert pipeline.runs() == {"long": 1}
    assert "connection lost" not in pipeline.log_text()
