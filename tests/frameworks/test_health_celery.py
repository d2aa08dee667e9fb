"""``tqadmin health`` on a real Celery worker (prefork, ``-E``) whose task blocks: its queue is ``stalled``
(exit 7) within the window and a poll, on RabbitMQ (the broker's ack rate proves that nothing completed,
without listening to the events)
and on Redis (the task events the profile listens to prove that no Celery task ended, and name the queue its
running tasks came from); the detection time is printed. The events' listener is on before the tasks are
sent, as a dashboard or an exporter keeps it: a listener started later does not know the tasks running."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from framework_brokers import wait_for
from test_celery_workers import app_for, celery_events_worker, celery_keys  # noqa: F401 - a fixture

from tests.conftest import REDIS_URL
from tests.support.rabbit_queues import amqp_url, vhost_of_its_own
from tqadmin.plugin.kit.listening import KEPT

pytestmark = pytest.mark.redis
Tq = Callable[..., tuple[int, Any, str]]
WINDOW_S = 4.0


@pytest.fixture
def vhost() -> Iterator[str]:
    with vhost_of_its_own() as name:
        yield name


def held(tq_json: Tq, broker: str, listed: str) -> bool:
    """Whether the broker shows two tasks held unacked (Celery acks a task when it starts: the two running
    are acked, the two in the prefetch are not) and nothing ready."""
    code, doc, _ = tq_json("--broker", broker, "queues", "--filter", listed)
    return code == 0 and any(
        (q["ready"], q["unacked"]) == (0, 2) for q in doc["queues"] if q["name"] == listed
    )


def stalls(
    tq_json: Tq, broker: str, queue: str, listed: str, tmp_path: Path, *, events: bool
) -> tuple[int, dict[str, Any], float]:
    """Four blocking tasks to a prefork pool of 2 (prefetch 1 each): two run, two wait in its prefetch;
    ``health`` once the tasks run and the broker shows them; the code, the queue's item, the time taken."""
    node, release = f"{queue}@tests", tmp_path / "release"
    tasks = app_for(broker, queue)
    try:
        with celery_events_worker(node, queue, broker, tmp_path / "celery.log"):

            def running(jobs: int) -> bool:
                _, doc, _ = tq_json("--broker", broker, "workers")
                return any(
                    w["name"] == node and len(w["current_jobs"]) == jobs and w["alive"]
                    for w in doc["workers"]
                )

            if events:
                wait_for(
                    lambda: running(0), "the worker heard (the listener on, as a dashboard keeps it)", 60
                )
            for _ in range(4):
                tasks.hold.delay(str(release))
            if events:
                wait_for(lambda: running(2), "both pool processes on a blocking task", 60)
            else:
                wait_for(lambda: held(tq_json, broker, listed), "two tasks running, two held", 60)
            blocked_at = time.monotonic()
            code, doc, err = tq_json(
                "--broker", broker, "health", "--window", str(WINDOW_S), "--filter", queue
            )
            detected_s = time.monotonic() - blocked_at
            release.touch()
    finally:
        KEPT.close_all()
    row = next(q for q in doc["queues"] if q["name"] == listed)
    assert (code, row["verdict"]) == (7, "stalled"), (row, err, (tmp_path / "celery.log").read_text()[-2000:])
    return code, row, detected_s


@pytest.mark.rabbitmq
def test_a_real_celery_worker_whose_task_blocks_stalls_its_queue_on_rabbitmq(
    isolated_env: Any,
    unique: str,
    tmp_path: Path,
    vhost: str,
    tq_json: Tq,
    capsys: pytest.CaptureFixture[str],
) -> None:
    queue = f"tqt-{unique}-celery"
    _, row, detected_s = stalls(tq_json, amqp_url(vhost), queue, queue, tmp_path, events=False)
    assert "no ack" in row["reason"], row
    with capsys.disabled():
        print(
            f"\nhealth: Celery prefork -E on RabbitMQ, blocking task: stalled {detected_s:.1f} s after both"
            f" pool processes blocked (--window {WINDOW_S:g}): {row['reason']}"
        )


def test_a_real_celery_worker_whose_task_blocks_stalls_its_queue_on_redis(
    celery_keys: None,  # noqa: F811 - the fixture
    isolated_env: Any,
    unique: str,
    tmp_path: Path,
    tq_json: Tq,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("TQADMIN_CELERY_EVENTS", "1")
    queue = f"tqt-{unique}-celery"
    _, row, detected_s = stalls(tq_json, REDIS_URL, queue, f"celery:{queue}", tmp_path, events=True)
    assert "no completion" in row["reason"], row
    with capsys.disabled():
        print(
            f"\nhealth: Celery prefork -E on Redis (events), blocking task: stalled {detected_s:.1f} s after"
            f" both pool processes blocked (--window {WINDOW_S:g}): {row['reason']}"
        )
