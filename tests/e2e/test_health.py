"""``tqadmin health`` with real workers on real brokers: a worker whose task blocks on every job makes its
queue ``stalled`` (exit 7) within the window and a poll, on each of the four brokers; and no false alarm: an
idle queue, a queue without consumers (``no consumer``), a queue holding only delayed retries, a slow queue
that progresses and a burst that drains all exit 0. Each stall test prints how long detection took: from the
moment the worker's job slots were all blocked to the verdict (the window plus one poll at most)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from redis_pipeline import redis_pipeline_fixture  # noqa: F401 - the fixture
from sqs_pipeline import sqs_pipeline_fixture  # noqa: F401 - the fixture
from worker_harness import (  # noqa: F401 - the fixtures
    Pipeline,
    pipeline_fixture,
    sqlite_pipeline_fixture,
)

TASKS = str(Path(__file__).with_name("health_tasks.py"))
WINDOW_S = 4.0
HEARTBEAT = ("--heartbeat", "0.5")
Tq = Callable[..., tuple[int, Any, str]]
BROKERS = [
    pytest.param("pipeline", marks=[pytest.mark.rabbitmq, pytest.mark.redis], id="rabbitmq"),
    pytest.param("redis_pipeline", marks=[pytest.mark.redis], id="redis"),
    pytest.param("sqlite_pipeline", id="sqlite"),
    pytest.param("sqs_pipeline", marks=[pytest.mark.redis], id="sqs"),
]
COUNTED = BROKERS[:3]  # brokers that count consumers (SQS does not: its queue without one is unknown)


def health(tq_json: Tq, pipeline: Pipeline, window_s: float = WINDOW_S) -> tuple[int, dict[str, Any], str]:
    """``tqadmin health --window S --json`` on ``pipeline``'s broker and store."""
    broker = ("--broker", pipeline.broker_url) if pipeline.broker_url else ()
    code, document, err = tq_json(*broker, "--store", pipeline.store_url, "health", "--window", str(window_s))
    return code, document, err


def shown(tq_json: Tq, pipeline: Pipeline) -> dict[str, Any] | None:
    """The queue as ``tqadmin queues --json`` shows it now (RabbitMQ's figures lag up to its statistics
    interval, 5 s)."""
    broker = ("--broker", pipeline.broker_url) if pipeline.broker_url else ()
    code, document, _ = tq_json(*broker, "queues")
    if code != 0:
        return None
    return next((q for q in document["queues"] if q["name"] == pipeline.queue), None)


def served_and_waiting(tq_json: Tq, pipeline: Pipeline) -> bool:
    queue = shown(tq_json, pipeline)
    return queue is not None and queue["ready"] + queue["unacked"] > 0 and queue["consumers"] != 0


def verdict(document: dict[str, Any], queue: str) -> dict[str, Any]:
    return next(q for q in document["queues"] if q["name"] == queue)


def runs(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def report(capsys: pytest.CaptureFixture[str], line: str) -> None:
    with capsys.disabled():
        print(f"\n{line}")


@pytest.mark.parametrize("broker", BROKERS)
def test_a_worker_whose_task_blocks_on_every_job_stalls_its_queue(
    broker: str,
    request: pytest.FixtureRequest,
    tq_json: Tq,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pipeline: Pipeline = request.getfixturevalue(broker)
    release, ran = tmp_path / "release", tmp_path / "runs"
    pipeline.start_with_tasks(TASKS, "--concurrency", "2", *HEARTBEAT)
    job = {"task_type": "block", "release": str(release), "runs": str(ran)}
    pipeline.publish([{**job, "id": f"j{i}"} for i in range(4)])
    capsys.readouterr()  # what publish printed
    pipeline.wait_for(lambda: runs(ran) == 2, 60, "both job threads blocked")
    blocked_at = time.monotonic()
    pipeline.wait_for(lambda: served_and_waiting(tq_json, pipeline), 30, "the broker's figures")
    shown_s = time.monotonic() - blocked_at
    try:
        code, document, err = health(tq_json, pipeline)
        detected_s = time.monotonic() - blocked_at
        queue = verdict(document, pipeline.queue)
        assert (code, queue["verdict"]) == (7, "stalled"), (queue, err, pipeline.log_text())
        assert queue["reason"].startswith("ready 2") or "held unacked" in queue["reason"], queue
        assert ", 1 " in queue["reason"] and " no " in queue["reason"], queue  # who serves it, no completion
        assert detected_s >= WINDOW_S
    finally:
        release.touch()
    report(
        capsys,
        f"health: blocked tqadmin worker on {broker}: stalled {detected_s:.1f} s after the block"
        f" (figures shown after {shown_s:.1f} s, --window {WINDOW_S:g}): {queue['reason']}",
    )
