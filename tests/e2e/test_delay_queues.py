"""On the real RabbitMQ, the retry tiers a worker fills fold into its work queue in `tqadmin queues`."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from worker_harness import Pipeline, pipeline_fixture  # noqa: F401 - the fixture

from tqadmin.cli import main

pytestmark = [pytest.mark.rabbitmq, pytest.mark.redis]
STATS_DEADLINE_S = 60  # the management API refreshes its figures every 5 s


def listing(capsys: pytest.CaptureFixture[str], queue: str, *extra: str) -> dict[str, Any]:
    assert main(["queues", "--json", "--filter", queue, *extra]) == 0
    return {q["name"]: q for q in json.loads(capsys.readouterr().out)["queues"]}


def test_jobs_waiting_out_a_retry_delay_show_as_delayed_on_their_queue_not_as_queues_of_their_own(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline.start("--backoff-base", "20", "--backoff-cap", "60")
    pipeline.publish([{"task_type": "flaky", "id": f"f{i}", "succeed_on": 99} for i in range(6)])
    capsys.readouterr()
    deadline = time.monotonic() + STATS_DEADLINE_S
    while True:
        every = listing(capsys, pipeline.queue, "--all")
        tiers = {n: q for n, q in every.items() if q["delay_for"] == pipeline.queue}
        if tiers and every[pipeline.queue]["delayed"] > 0:
            break
        assert time.monotonic() < deadline, f"no job ever waited in a retry tier: {every}"
        time.sleep(1)
    assert all(".retry." in name for name in tiers)
    assert every[pipeline.queue]["delayed"] == sum(q["messages"] for q in tiers.values())
    assert every[pipeline.queue]["dlq"] == f"{pipeline.queue}.dlq"
    folded = listing(capsys, pipeline.queue)
    assert not [name for name in folded if ".retry." in name]
    assert folded[pipeline.queue]["delayed"] is not None
