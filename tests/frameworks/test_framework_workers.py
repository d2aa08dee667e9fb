"""Other frameworks' workers in ``tqadmin workers``: a real RQ worker busy, idle and killed, a real Dramatiq
worker on Redis, and Sidekiq 7 and 8 processes written as Sidekiq writes them (no Ruby here); each shown with
its framework, its heartbeat and its current jobs, and a dead one with why; nothing in Redis is written to
read them."""

from __future__ import annotations

import calendar
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from framework_brokers import redis_state, rq_worker, sidekiq_process, wait_for
from rq import Queue

from tests.conftest import REDIS_URL

pytestmark = pytest.mark.redis

Tq = Callable[..., tuple[int, Any, str]]


def listed(tq: Tq, framework: str, name: str, *options: str) -> dict[str, Any] | None:
    code, doc, _ = tq(*options, "workers")
    assert code == 0, doc
    return next((w for w in doc["workers"] if (w["framework"], w["name"]) == (framework, name)), None)


def test_a_real_rq_worker_is_shown_busy_with_its_job_then_idle_then_dead_once_killed(
    isolated_env: Any, redis_keys: redis.Redis, unique: str, tq: Tq, tmp_path: Path
) -> None:
    name, queue = f"tqt-{unique}-w1", f"tqt-{unique}-naps"
    with rq_worker(name, queue, tmp_path) as process:
        wait_for(lambda: listed(tq, "rq", name), "the RQ worker in tqadmin workers")
        release = tmp_path / "release"
        job = Queue(queue, connection=redis_keys).enqueue(
            "holding.hold", str(release), job_id=f"tqt-{unique}-j"
        )
        busy = wait_for(
            lambda: (w := listed(tq, "rq", name)) and w["current_jobs"] and w, "a busy worker", 60
        )
        assert (busy["alive"], busy["state"], busy["queues"], busy["current_jobs"]) == (
            True,
            "busy",
            [queue],
            [job.id],
        )
        (task,) = busy["current_tasks"]
        assert (task["task"], task["queue"], busy["pid"]) == ("holding.hold", queue, process.pid)
        release.touch()  # busy until seen so, however late a loaded machine lets the test look
        idle = wait_for(lambda: (w := listed(tq, "rq", name)) and w["state"] == "idle" and w, "idle again")
        assert (idle["alive"], idle["current_jobs"], idle["dead_reason"]) == (True, [], None)

        os.killpg(process.pid, signal.SIGKILL)
        # dead once its beat is past its 2 s TTL (the reason says so), long before its hash expires
        dead = wait_for(lambda: (w := listed(tq, "rq", name)) and not w["alive"] and w, "shown dead", 40)
        assert dead["dead_reason"] == "heartbeat overdue (past its own TTL)"
        assert dead["heartbeat_age_s"] >= 1

    redis_keys.delete(f"rq:worker:{name}")  # what its expiry does a minute later: the member stays
    assert redis_keys.sismember("rq:workers", f"rq:worker:{name}")
    stale = listed(tq, "rq", name)
    assert stale is not None and (stale["alive"], stale["heartbeat_age_s"]) == (False, None)
    assert stale["dead_reason"] == "hash expired; a stale member of rq:workers"
    assert redis_keys.sismember("rq:workers", f"rq:worker:{name}")  # shown, never removed


def test_a_real_rq_worker_busy_on_one_job_past_the_limit_is_wedged_with_why(
    isolated_env: Any,
    redis_keys: redis.Redis,
    unique: str,
    tq: Tq,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No job finished yet on this worker: its limit is the profile's ``wedged_no_history_s`` (3 s here);
    the verdict comes within the limit plus a poll, and goes once the job ends."""
    config = tmp_path / "config.toml"
    config.write_text("[profiles.w]\nwedged_no_history_s = 3\n")
    profile = ("--config", str(config), "--profile", "w")
    name, queue = f"tqt-{unique}-w1", f"tqt-{unique}-stuck"
    with rq_worker(name, queue, tmp_path):
        wait_for(lambda: listed(tq, "rq", name, *profile), "the RQ worker in tqadmin workers")
        release = tmp_path / "release"
        job = Queue(queue, connection=redis_keys).enqueue(
            "holding.hold", str(release), job_id=f"tqt-{unique}-j"
        )
        wait_for(
            lambda: (w := listed(tq, "rq", name, *profile)) and w["current_jobs"] and w, "a busy worker", 60
        )
        started = time.monotonic()
        wedged = wait_for(lambda: (w := listed(tq, "rq", name, *profile)) and w["wedged"] and w, "wedged", 60)
        detected_s = time.monotonic() - started
        assert wedged["wedged_reason"].startswith(
            f"all 1 job slots stuck; the latest: holding.hold job {job.id}"
        )
        assert wedged["wedged_reason"].endswith("(limit 3s: no usual run time known)")
        assert wedged["alive"] is True  # its heartbeat is fine: that is the point
        release.touch()
        wait_for(lambda: (w := listed(tq, "rq", name, *profile)) and w["wedged"] is False, "moving again")
    with capsys.disabled():
        print(f"\nRQ worker on a blocking job: wedged {detected_s:.1f} s after it was seen busy (limit 3 s)")


def an_rq_worker_of_older_releases(client: redis.Redis, name: str, job_id: str) -> None:
    """A busy worker as RQ before mid-2026 writes it: its job in the ``current_job`` field."""
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
    key = f"rq:worker:{name}"
    client.hset(key, mapping={"birth": now, "last_heartbeat": now, "queues": "old", "pid": 41,
                              "hostname": "h1", "state": "busy", "current_job": job_id})  # fmt: skip
    client.expire(key, 480)
    client.sadd("rq:workers", key)
    client.hset(f"rq:job:{job_id}", mapping={"description": "billing.charge('o-1', 10)", "origin": "old"})


def test_sidekiq_7_and_8_processes_and_an_older_rq_worker_are_read_without_writing_a_byte(
    isolated_env: Any, redis_keys: redis.Redis, unique: str, tq: Tq
) -> None:
    seven, eight, gone = (f"web-1:{n}:tqt-{unique}" for n in (7, 8, 9))
    written = sidekiq_process(redis_keys, seven, milliseconds=False, busy_jid=f"jid-{unique}")
    sidekiq_process(redis_keys, eight, milliseconds=True, busy_jid=None)
    redis_keys.sadd("processes", gone)  # its hash expired, Sidekiq's own cleanup has not run
    old = f"tqt-{unique}-old"
    an_rq_worker_of_older_releases(redis_keys, old, f"tqt-{unique}-j1")
    before = redis_state(redis_keys, unique)

    code, doc, _ = tq("workers")
    mine = {w["name"]: w for w in doc["workers"] if unique in w["name"]}
    assert code == 0 and set(mine) == {seven, eight, gone, old}
    busy = mine[seven]
    assert (busy["framework"], busy["alive"], busy["state"], busy["concurrency"]) == (
        "sidekiq",
        True,
        "busy",
        5,
    )
    assert (busy["host"], busy["pid"], busy["queues"]) == ("web-1", 4242, ["default", "mailers"])
    assert busy["current_tasks"] == [
        {
            "id": f"jid-{unique}",
            "task": "HardWorker",
            "queue": "default",
            "started_at": busy["current_tasks"][0]["started_at"],
        }
    ]
    started = busy["current_tasks"][0]["started_at"]
    # its run_at, 3 s before it was written, to the second (what the reading took does not count)
    assert abs(calendar.timegm(time.strptime(started, "%Y-%m-%dT%H:%M:%SZ")) - (written - 3)) < 1
    # its beat was written 2 s old; under its 60 s expiry however long the reading took on a loaded machine
    assert 2 <= busy["heartbeat_age_s"] < 60
    idle = mine[eight]
    assert (idle["alive"], idle["state"], idle["current_jobs"]) == (True, "idle", [])
    assert idle["started_at"] is not None and idle["started_at"].startswith(
        time.strftime("%Y-", time.gmtime())
    )
    assert (mine[gone]["alive"], mine[gone]["dead_reason"]) == (
        False,
        "hash expired; a stale member of processes",
    )
    legacy = mine[old]
    assert (legacy["framework"], legacy["alive"], legacy["state"]) == ("rq", True, "busy")
    assert legacy["current_tasks"] == [
        {"id": f"tqt-{unique}-j1", "task": "billing.charge", "queue": "old", "started_at": None}
    ]
    assert redis_state(redis_keys, unique) == before  # no SREM, no SET NX, no clean-up of any kind
    assert not redis_keys.exists("process_cleanup") or redis_keys.ttl("process_cleanup") > 0


DRAMATIQ_APP = """
import os, time
import dramatiq
from dramatiq.brokers.redis import RedisBroker

dramatiq.set_broker(RedisBroker(url=os.environ["REDIS_URL"], namespace=os.environ["NAMESPACE"]))


@dramatiq.actor(queue_name=os.environ["QUEUE"])
def nap(seconds):
    time.sleep(seconds)
"""


def holder(tq: Tq, namespace: str) -> dict[str, Any] | None:
    """The Dramatiq worker of ``namespace`` that holds a message, once there is one."""
    workers = tq("workers")[1]["workers"]
    return next((w for w in workers if namespace in w["name"] and w["current_jobs"]), None)


def test_a_real_dramatiq_worker_on_redis_is_shown_with_the_message_it_holds(
    isolated_env: Any, redis_keys: redis.Redis, unique: str, tq: Tq, tmp_path: Path
) -> None:
    namespace, queue = f"tqt-{unique}", "naps"
    (tmp_path / "napping.py").write_text(DRAMATIQ_APP)
    env = {**os.environ, "REDIS_URL": REDIS_URL, "NAMESPACE": namespace, "QUEUE": queue,
           "PYTHONPATH": str(tmp_path)}  # fmt: skip
    argv = [sys.executable, "-m", "dramatiq", "napping", "--processes", "1", "--threads", "1"]
    with (tmp_path / "dramatiq.log").open("wb") as log:
        worker = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        sys.path.insert(0, str(tmp_path))
        os.environ.update(NAMESPACE=namespace, QUEUE=queue, REDIS_URL=REDIS_URL)
        try:
            import napping  # the same app the worker runs, to send as users do

            message = napping.nap.send(120)  # held until the worker is killed, however slow the look
        finally:
            sys.path.remove(str(tmp_path))
            sys.modules.pop("napping", None)
        holding = wait_for(lambda: holder(tq, namespace), "the Dramatiq worker holding the message", 60)
        assert (holding["alive"], holding["state"], holding["queues"]) == (True, "busy", [queue])
        assert holding["current_tasks"] == [
            {"id": message.message_id, "task": "nap", "queue": queue, "started_at": None}
        ]
        assert holding["heartbeat_age_s"] < 60  # alive by Dramatiq's own 60 s timeout
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(10)
    stale = f"{namespace}-gone"
    redis_keys.zadd(f"{stale}:__heartbeats__", {"w-0": (time.time() - 120) * 1000})
    _, doc, _ = tq("workers")
    (dead,) = [w for w in doc["workers"] if w["name"] == f"{stale}:w-0"]
    assert (dead["alive"], dead["dead_reason"]) == (
        False,
        "no heartbeat in Dramatiq's 60 s timeout",
    )


def test_a_registry_that_cannot_be_read_is_named_the_others_listed_and_the_exit_is_5(
    isolated_env: Any, redis_keys: redis.Redis, unique: str, tq_json: Tq
) -> None:
    db = redis.Redis.from_url(REDIS_URL.rsplit("/", 1)[0] + "/9")
    try:
        db.flushdb()
        db.set("processes", "not a set")  # someone's key of the same name
        sidekiq_free = f"tqt-{unique}-rq"
        an_rq_worker_of_older_releases(db, sidekiq_free, f"tqt-{unique}-j2")
        code, doc, err = tq_json("--broker", REDIS_URL.rsplit("/", 1)[0] + "/9", "workers")
        assert code == 5
        assert [w["name"] for w in doc["workers"]] == [sidekiq_free]
        (what,) = doc["unreadable"]
        assert what.startswith("sidekiq workers: WRONGTYPE") and what in err
    finally:
        db.flushdb()
        db.close()


def test_a_broker_that_is_down_still_lists_tqadmins_own_workers_and_exits_5(
    isolated_env: Any, tq_json: Tq
) -> None:
    code, doc, err = tq_json("--broker", "redis://127.0.0.1:1/0", "--store", REDIS_URL, "workers")
    assert code == 5 and isinstance(doc["workers"], list)
    (what,) = doc["unreadable"]
    assert what.startswith("rq, sidekiq, dramatiq, celery workers: ") and "127.0.0.1:1" in what
    assert "Traceback" not in err
