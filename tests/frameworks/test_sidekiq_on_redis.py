"""Sidekiq users' jobs on Redis, written with redis-py in the JSON format Sidekiq's wiki documents (Job
Format: Sidekiq 7's float seconds, Sidekiq 8's milliseconds, an ActiveJob among them) where Sidekiq keeps it:
``queue:<name>`` lists named in ``queues``, and the ``retry`` and ``dead`` sorted sets. tqadmin's CLI shows,
groups and filters them by Sidekiq's jid, class and error; every write is refused in one line naming
Sidekiq's own API, and nothing in Redis changes.

The sets are shared by every Sidekiq queue of the database, so this test's classes carry its token and
its groups are looked for among whatever else is there.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import redis
from framework_brokers import assert_refused, redis_state

pytestmark = pytest.mark.redis


def sidekiq_job(job_class: str, jid: str, queue: str, args: list[Any], **extra: Any) -> bytes:
    """A job as Sidekiq 7 stores it (times in float seconds); a failed one adds its error fields."""
    now = time.time()
    job = {"class": job_class, "args": args, "jid": jid, "queue": queue, "retry": True}
    return json.dumps({**job, "created_at": now - 600, "enqueued_at": now - 60, **extra}).encode()


def failed(error_class: str, message: str, retry_count: int) -> dict[str, Any]:
    now = time.time()
    fields = {"error_class": error_class, "error_message": message, "retry_count": retry_count}
    return {**fields, "failed_at": now - 300, "retried_at": now - 30}


def groups_of(doc: dict[str, Any], field: str) -> dict[str, int]:
    return {g[field]: g["count"] for g in doc["groups"]}


def test_sidekiq_dead_and_retrying_jobs_are_shown_grouped_filtered_and_left_to_sidekiq(
    isolated_env: Any, redis_keys: redis.Redis, unique: str, tq: Any
) -> None:
    queue, now = f"tqt-{unique}-mail", time.time()
    charge, mail = f"T{unique}::ChargeWorker", f"T{unique}::MailWorker"
    declined, timeout = (
        failed("Stripe::CardError", "Your card was declined.", 25),
        failed("Net::ReadTimeout", f"Net::ReadTimeout with #<TCPSocket {unique}>", 25),
    )
    waiting = [sidekiq_job(mail, f"{unique}w{i}", queue, [f"user-{i}@example.com", i]) for i in range(2)]
    dead = [sidekiq_job(charge, f"{unique}d{i}", queue, [f"order-{i}", 5], **declined) for i in range(3)]
    dead.append(sidekiq_job(mail, f"{unique}d9", queue, ["x@example.com"], **timeout))
    active_job = {  # Sidekiq 8 (times in integer milliseconds) running a Rails ActiveJob
        "class": "ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper",
        "wrapped": f"T{unique}::ChargeJob",
        "jid": f"{unique}d8",
        "queue": queue,
        "args": [{"job_class": f"T{unique}::ChargeJob", "arguments": ["order-8", 30], "executions": 1}],
        "created_at": 1735689600000,
        "enqueued_at": 1735689600500,
        **failed("Stripe::CardError", "Your card was declined.", 25),
    }
    dead.append(json.dumps(active_job).encode())
    retrying = sidekiq_job(
        mail, f"{unique}r0", queue, ["y@example.com"], **failed("Net::ReadTimeout", "t", 2)
    )
    redis_keys.sadd("queues", queue)
    redis_keys.lpush(f"queue:{queue}", *waiting)  # Sidekiq pushes on the left and fetches on the right
    redis_keys.zadd("dead", {job: now - 10 + i for i, job in enumerate(dead)})  # score: when it died
    redis_keys.zadd("retry", {retrying: now + 3600})  # score: when Sidekiq retries it

    code, doc, _ = tq("queues")
    listed = {q["name"]: q for q in doc["queues"]}
    row = listed[f"sidekiq:{queue}"]
    assert (code, row["type"], row["messages"], row["dlq"]) == (0, "sidekiq", 2, "sidekiq:dead")
    assert 59 <= row["oldest_age_s"] < 600  # Sidekiq's latency: the oldest job's enqueued_at
    assert listed["sidekiq:dead"]["messages"] >= 5 and listed["sidekiq:dead"]["ready"] >= 5
    retry = listed["sidekiq:retry"]
    assert (retry["ready"], retry["delayed"]) == (0, retry["messages"]) and retry["delayed"] >= 1
    assert row["read_only"].startswith("a Sidekiq queue")

    code, doc, _ = tq("peek", f"sidekiq:{queue}")
    assert [m["id"] for m in doc["messages"]] == [f"{unique}w0", f"{unique}w1"]  # oldest first
    first = doc["messages"][0]
    assert (first["framework"], first["task"], first["args"]) == ("sidekiq", mail, '"user-0@example.com", 0')
    assert (first["retries"], first["sent_to"], first["error"]) == (0, queue, None)
    code, doc, _ = tq("peek", "sidekiq:dead", "-n", "1000")
    shown = {m["id"]: m for m in doc["messages"]}
    assert shown[f"{unique}d1"]["task"] == charge and shown[f"{unique}d1"]["args"] == '"order-1", 5'
    assert shown[f"{unique}d1"]["error"] == "Stripe::CardError: Your card was declined."
    assert shown[f"{unique}d1"]["retries"] == 25
    assert json.loads(shown[f"{unique}d1"]["body"]) == json.loads(dead[1])  # the job as Sidekiq stored it
    wrapped = shown[f"{unique}d8"]
    assert (wrapped["task"], wrapped["args"]) == (f"T{unique}::ChargeJob", '"order-8", 30')
    assert wrapped["sent_at"] == "2025-01-01T00:00:00.500Z"

    code, doc, _ = tq("dead-letters", "sidekiq:dead", "--group-by", "task_type")
    by_task = groups_of(doc, "task_type")
    assert (by_task[charge], by_task[mail], by_task[f"T{unique}::ChargeJob"]) == (3, 1, 1)
    code, doc, _ = tq("dead-letters", "sidekiq:dead", "--group-by", "error")
    assert groups_of(doc, "error")[f"Net::ReadTimeout: Net::ReadTimeout with #<TCPSocket {unique}>"] == 1
    assert groups_of(doc, "error")["Stripe::CardError: Your card was declined."] >= 4
    code, doc, _ = tq("dead-letters", "sidekiq:dead")
    assert groups_of(doc, "reason")["(not recorded by sidekiq: try --group-by error)"] >= 5
    code, doc, _ = tq("dead-letters", "sidekiq:retry", "--group-by", "error")
    assert groups_of(doc, "error")["Net::ReadTimeout: t"] >= 1

    code, doc, err = tq("replay", "sidekiq:dead", "--dry-run", "--filter", f"task_type={charge}")
    assert (code, doc["matched"], doc["moved"]) == (0, 3, 0)
    assert "dry run only; a real run is refused: sidekiq:dead is a Sidekiq queue" in err
    code, doc, _ = tq("replay", "sidekiq:dead", "--dry-run", "--filter", f"id={unique}d9")
    assert doc["matched"] == 1

    before = redis_state(redis_keys, unique)
    dead_api = "`Sidekiq::DeadSet.new.find_job(JID).retry`"
    assert_refused(tq("delete", "sidekiq:dead", "--id", f"{unique}d0"), dead_api, "Web UI (Dead tab)")
    assert_refused(tq("replay", "sidekiq:dead", "--filter", f"task_type={charge}"), dead_api)
    assert_refused(tq("replay", "sidekiq:dead", "--to", f"sidekiq:{queue}"), dead_api)
    assert_refused(tq("move", "sidekiq:retry", f"sidekiq:{queue}"), "`Sidekiq::RetrySet.new.find_job(JID)")
    assert_refused(tq("purge", "sidekiq:dead", "--yes"), dead_api)
    assert_refused(tq("delete", f"sidekiq:{queue}", "--id", f"{unique}w0"), f'Sidekiq::Queue.new("{queue}")')
    assert redis_state(redis_keys, unique) == before


def test_a_queue_sidekiq_paused_itself_is_shown_paused_and_left_to_sidekiq(
    isolated_env: Any, redis_keys: redis.Redis, unique: str, tq: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Sidekiq Pro and Enterprise pause a queue by adding its name to the set ``paused``: tqadmin reads it
    (never writes it) and says the queue is paused, by Sidekiq, and how Sidekiq resumes it."""
    from tqadmin.cli import main

    paused, running = f"tqt-{unique}-paused", f"tqt-{unique}-running"
    redis_keys.sadd("queues", paused, running)
    for queue in (paused, running):
        redis_keys.lpush(f"queue:{queue}", sidekiq_job(f"T{unique}::Mail", f"{unique}{queue}", queue, []))
    redis_keys.sadd("paused", paused)

    code, doc, _ = tq("queues", "--filter", unique)
    states = {q["name"]: q["state"] for q in doc["queues"]}
    assert (code, states) == (0, {f"sidekiq:{paused}": "paused", f"sidekiq:{running}": "running"})
    assert main(["--broker", "redis://127.0.0.1:6379/0", "queues", "--filter", unique]) == 0
    said = capsys.readouterr().out
    assert f"paused sidekiq:{paused}: paused by its framework (Sidekiq's own pause:" in said
    assert f"paused sidekiq:{running}" not in said

    code, doc, _ = tq("health", "--window", "1")
    verdicts = {q["name"]: q for q in doc["queues"] if unique in q["name"]}
    assert verdicts[f"sidekiq:{paused}"]["verdict"] == "paused", verdicts
    assert "Sidekiq::Queue.new(NAME).unpause!" in verdicts[f"sidekiq:{paused}"]["reason"]
    assert verdicts[f"sidekiq:{running}"]["verdict"] != "paused"
    assert redis_keys.smembers("paused") >= {paused.encode()}  # left as Sidekiq wrote it
