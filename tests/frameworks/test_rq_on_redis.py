"""RQ users' failed jobs on Redis: a real RQ worker fails jobs into RQ's FailedJobRegistry, and tqadmin's
CLI shows, groups and filters them by RQ's own job ids, function names and exceptions; every write is refused
in one line that names RQ's own tool, nothing in Redis changes, and that tool then does the job."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import redis
from framework_brokers import assert_refused, redis_state
from rq import Queue, SimpleWorker
from rq.registry import FailedJobRegistry

from tests.conftest import REDIS_URL

pytestmark = pytest.mark.redis


def test_rq_jobs_in_the_failed_job_registry_are_shown_grouped_filtered_and_left_to_rq(
    isolated_env: Any, redis_keys: redis.Redis, unique: str, tq: Any
) -> None:
    name = f"tqt-{unique}-orders"
    queue = Queue(name, connection=redis_keys)
    charges = [
        queue.enqueue("rq_jobs.charge", f"order-{i}", 10 * i, currency="USD", job_id=f"tqt-{unique}-c{i}").id
        for i in range(3)
    ]
    resizes = [
        queue.enqueue("rq_jobs.resize", "cat.png", width=64, job_id=f"tqt-{unique}-r0").id,
        queue.enqueue("rq_jobs.resize", "dog.png", job_id=f"tqt-{unique}-r1").id,
    ]
    SimpleWorker([queue], connection=redis_keys, name=f"tqt-{unique}").work(burst=True, with_scheduler=False)
    assert FailedJobRegistry(queue=queue).count == 5
    waiting = queue.enqueue("rq_jobs.ship", "order-9", job_id=f"tqt-{unique}-s0").id
    failed = f"rq:{name}:failed"

    code, doc, _ = tq("queues")
    listed = {q["name"]: q for q in doc["queues"]}
    row = listed[f"rq:{name}"]
    assert (code, row["type"], row["messages"], row["ready"]) == (0, "rq", 1, 1)
    assert (row["dlq"], row["dlq_messages"], listed[failed]["messages"]) == (failed, 5, 5)
    assert row["read_only"].startswith("an RQ queue") and listed[failed]["read_only"] == row["read_only"]

    code, doc, _ = tq("peek", f"rq:{name}")
    (job,) = doc["messages"]
    assert (job["framework"], job["id"], job["task"]) == ("rq", waiting, "rq_jobs.ship")
    assert (job["args"], job["sent_to"], job["error"]) == ("'order-9'", name, None)
    code, doc, _ = tq("peek", failed, "-n", "10")
    shown = {m["id"]: m for m in doc["messages"]}
    assert set(shown) == {*charges, *resizes} and {m["framework"] for m in shown.values()} == {"rq"}
    assert shown[charges[1]]["task"] == "rq_jobs.charge"
    assert shown[charges[1]]["args"] == "'order-1', 10, currency='USD'"
    assert shown[resizes[0]]["args"] == "'cat.png', width=64"
    assert shown[resizes[0]]["error"] == "TimeoutError: resizing cat.png took too long"
    assert "read-only" in doc["cost"]

    code, doc, _ = tq("dead-letters", failed, "--group-by", "task_type")
    assert doc["groups"] == [
        {"task_type": "rq_jobs.charge", "count": 3},
        {"task_type": "rq_jobs.resize", "count": 2},
    ]
    code, doc, _ = tq("dead-letters", failed, "--group-by", "error")
    assert doc["groups"] == [
        {"error": "ValueError: card declined", "count": 3},
        {"error": "TimeoutError: resizing cat.png took too long", "count": 1},
        {"error": "TimeoutError: resizing dog.png took too long", "count": 1},
    ]
    code, doc, _ = tq("dead-letters", failed)  # by reason: RQ records none, and says where to look
    assert doc["groups"] == [{"reason": "(not recorded by rq: try --group-by error)", "count": 5}]
    code, doc, _ = tq("replay", failed, "--dry-run", "--filter", "task_type=rq_jobs.resize")
    assert (code, doc["matched"], doc["moved"], doc["dry_run"]) == (0, 2, 0, True)
    code, doc, _ = tq("replay", failed, "--dry-run", "--filter", f"id={charges[2]}")
    assert doc["matched"] == 1
    code, doc, _ = tq("move", failed, "elsewhere", "--dry-run", "--filter", "error~declined")
    assert doc["matched"] == 3

    before = redis_state(redis_keys, unique)
    requeue = f"`rq requeue --queue {name} JOB_ID` (or `--all`)"
    assert_refused(tq("delete", failed, "--id", charges[0]), requeue, "Job.fetch(JOB_ID")
    assert_refused(tq("replay", failed), requeue)
    assert_refused(tq("replay", failed, "--filter", "task_type=rq_jobs.charge"), requeue)
    assert_refused(tq("move", failed, f"rq:{name}"), requeue)
    assert_refused(tq("purge", failed, "--yes"), requeue)
    assert_refused(tq("delete", f"rq:{name}", "--id", waiting), f"`rq empty {name}`")
    assert redis_state(redis_keys, unique) == before

    # What the refusal named does it: RQ's own requeue sends the failed jobs back to their queue.
    rq = [sys.executable, "-m", "rq.cli", "requeue", "-u", REDIS_URL, "--queue", name, "--all"]
    subprocess.run(rq, check=True, capture_output=True)
    code, doc, _ = tq("queues")
    listed = {q["name"]: q for q in doc["queues"]}
    assert (listed[f"rq:{name}"]["messages"], listed[failed]["messages"]) == (6, 0)
