"""Celery users' tasks on Redis (kombu's Redis transport): tqadmin's CLI shows, groups and filters them by
Celery's task ids and names, refuses every write in one line naming Celery's own tools, and changes nothing
in Redis. And what tqadmin cannot show: Celery keeps no dead letters on Redis, so once a real Celery worker
fails (here: rejects) a task, the task is gone from Redis altogether."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import redis
from celery_tasks import make_app
from framework_brokers import assert_refused, celery_worker, redis_state, wait_for

from tests.conftest import REDIS_URL

pytestmark = pytest.mark.redis


def test_celery_tasks_on_redis_are_shown_grouped_and_filtered_and_never_written(
    isolated_env: Any, redis_keys: redis.Redis, unique: str, tq: Any, tmp_path: Path
) -> None:
    queue = f"tqt-{unique}-celery"
    runs, log = tmp_path / "celery-runs.log", tmp_path / "celery-worker.log"
    app = make_app(queue, f"{queue}.dlq", runs, broker=REDIS_URL)
    charges = [app.tasks["capp.charge"].apply_async((f"order-{i}", 10 * i)).id for i in range(3)]
    resizes = [
        app.tasks["capp.resize"].apply_async(("cat.png",), {"width": 64}).id,
        app.tasks["capp.resize"].apply_async(("dog.png",)).id,
    ]
    app.close()
    name = f"celery:{queue}"

    code, doc, _ = tq("queues")
    row = {q["name"]: q for q in doc["queues"]}[name]
    assert (code, row["type"], row["messages"], row["ready"], row["dlq"]) == (0, "celery", 5, 5, None)
    assert row["read_only"].startswith("a Celery (kombu) queue")

    code, doc, _ = tq("peek", name, "-n", "10")
    shown = {m["id"]: m for m in doc["messages"]}
    assert list(shown) == [*charges, *resizes]  # oldest first: kombu pushes on the left, pops on the right
    assert {m["framework"] for m in shown.values()} == {"celery"}
    assert (shown[charges[1]]["task"], shown[charges[1]]["args"]) == ("capp.charge", '"order-1", 10')
    assert shown[resizes[0]]["args"] == '"cat.png", width=64' and shown[resizes[0]]["retries"] == 0
    assert shown[resizes[0]]["sent_to"] == queue  # kombu's delivery_info; Celery records no time sent

    code, doc, _ = tq("dead-letters", name, "--group-by", "task_type")  # groups whatever waits there
    assert doc["groups"] == [
        {"task_type": "capp.charge", "count": 3},
        {"task_type": "capp.resize", "count": 2},
    ]
    code, doc, _ = tq("move", name, "elsewhere", "--dry-run", "--filter", "task_type=capp.resize")
    assert (code, doc["matched"], doc["moved"]) == (0, 2, 0)
    code, doc, _ = tq("move", name, "elsewhere", "--dry-run", "--filter", f"id={charges[2]}")
    assert doc["matched"] == 1

    before = redis_state(redis_keys, unique)
    purge = f"`celery -A APP purge -Q {queue}`"
    assert_refused(tq("delete", name, "--id", resizes[1]), "`celery -A APP control revoke TASK_ID`")
    assert_refused(tq("move", name, "elsewhere", "--filter", "task_type=capp.resize"), purge)
    assert_refused(tq("replay", name, "--to", "elsewhere"), purge)
    assert_refused(tq("purge", name, "--yes"), purge)
    assert redis_state(redis_keys, unique) == before

    # A real Celery worker takes the tasks; not allowed to run yet, each raises Reject(requeue=False),
    # which on RabbitMQ dead-letters it. On Redis kombu acks it: nothing of it is left to show or replay.
    with celery_worker(queue, f"{queue}.dlq", runs, log, REDIS_URL, lambda: b" ready." in log.read_bytes()):
        wait_for(lambda: redis_keys.llen(queue) == 0, "the Celery worker to take the five tasks")
        wait_for(
            lambda: log.read_bytes().count(b"reject requeue=False") == 5,
            "the worker to reject the five tasks",
        )
    code, doc, _ = tq("queues")
    row = {q["name"]: q for q in doc["queues"]}[name]
    assert (row["messages"], row["dlq"]) == (0, None)
    assert tq("dead-letters", name, "--group-by", "task_type")[1]["groups"] == []
    left = b"".join([*redis_keys.hvals("unacked"), *(k for k in redis_keys.scan_iter("*"))])
    assert not any(task_id.encode() in left for task_id in [*charges, *resizes])
