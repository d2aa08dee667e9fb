"""``tqadmin health`` on Sidekiq queues, with Sidekiq's processes and counters written into a Redis database
of the test's own as Sidekiq's launcher writes them at each beat (lib/sidekiq/launcher.rb; no Ruby here): the
jobs a process ran flushed into ``stat:processed`` and ``stat:failed`` (and today's copies), its ``:work``
hash rewritten, its hash (``info``, ``busy``, ``beat``...) and its member of ``processes``.

Sidekiq counts no process's jobs, only all of them together: a total that stood through the window while a
live process served the queue proves the stall (exit 7); one that rose is progress when every process serves
that queue alone, and proves nothing on a queue whose processes serve other queues too (``unknown``, saying
why). A process whose every thread has run its job (``run_at``) past the limit is wedged and its queue
stalled. Each detection time is printed.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
import redis
from framework_brokers import in_background
from tqadmin_redis.admin import RedisAdmin

from tqadmin.plugin.base import BrokerConfig

pytestmark = pytest.mark.redis
Tq = Callable[..., tuple[int, Any, str]]
WINDOW_S = 12.0  # longer than Sidekiq's 10 s beat, at which its counters move
TOTAL = "Sidekiq's stat:processed + stat:failed"


def job(queue: str, jid: str) -> str:
    now = time.time()
    return json.dumps({"class": "HardJob", "args": [1], "jid": jid, "queue": queue, "retry": True,
                       "created_at": now, "enqueued_at": now})  # fmt: skip


class Process:
    """One Sidekiq process: the jobs it ran since its last beat (``procd``, ``fails``) and what its
    threads run (``work``: thread id -> ``{"queue", "payload", "run_at"}``), written at each :meth:`beat`."""

    def __init__(self, client: redis.Redis, identity: str, queues: list[str], concurrency: int = 5) -> None:
        self.client, self.identity, self.queues, self.concurrency = client, identity, queues, concurrency
        self.procd = self.fails = 0
        self.work: dict[str, str] = {}

    def beat(self) -> None:
        client, key = self.client, self.identity
        if self.procd + self.fails:  # flush_stats
            today = time.strftime("%Y-%m-%d", time.gmtime())
            pipe = client.pipeline(transaction=False)
            for stat, n in (("processed", self.procd), ("failed", self.fails)):
                pipe.incrby(f"stat:{stat}", n).incrby(f"stat:{stat}:{today}", n).expire(
                    f"stat:{stat}:{today}", 5 * 365 * 86400
                )
            pipe.execute()
            self.procd = self.fails = 0
        pipe = client.pipeline(transaction=True)
        pipe.unlink(f"{key}:work")
        if self.work:
            pipe.hset(f"{key}:work", mapping=self.work).expire(f"{key}:work", 60)
        pipe.execute()
        info = {"hostname": "web-1", "started_at": time.time() - 3600, "pid": 4242, "tag": "app",
                "concurrency": self.concurrency, "queues": self.queues, "labels": [], "identity": key,
                "version": "7.3.2"}  # fmt: skip
        pipe = client.pipeline(transaction=True)
        pipe.sadd("processes", key).exists(key)
        pipe.hset(key, mapping={"info": json.dumps(info), "busy": len(self.work), "beat": time.time(),
                                "rtt_us": 150, "quiet": "false", "rss": 123456})  # fmt: skip
        pipe.expire(key, 60).rpop(f"{key}-signals")
        pipe.execute()

    def run_one(self, queue: str, jid: str) -> None:
        """A job arrives at ``queue`` and the oldest one there runs and ends: the depth stays as it was."""
        pipe = self.client.pipeline(transaction=True)
        pipe.lpush(f"queue:{queue}", job(queue, jid)).rpop(f"queue:{queue}")
        pipe.execute()
        self.procd += 1


@contextmanager
def working(process: Process, queue: str, unique: str) -> Iterator[None]:
    """``process`` runs a job of ``queue`` every 0.5 s and beats every 2 s, until the block ends."""

    def run(stop: threading.Event) -> None:
        n = 0
        while not stop.wait(0.5):
            n += 1
            process.run_one(queue, f"{unique}-j{n}")
            if n % 4 == 0:
                process.beat()

    with in_background(run, join_s=10):
        yield


@dataclass
class Database:
    """The test's own Redis database, its unique token and ``tqadmin --json`` to read it."""

    client: redis.Redis
    url: str
    unique: str
    tq_json: Tq

    def queue(self, n: int, name: str) -> str:
        """A Sidekiq queue holding ``n`` jobs, its name as Sidekiq knows it."""
        queue = f"tqt-{self.unique}-{name}"
        self.client.sadd("queues", queue)
        self.client.lpush(f"queue:{queue}", *(job(queue, f"{self.unique}-{name}{i}") for i in range(n)))
        return queue

    def process(self, queues: list[str], concurrency: int = 5) -> Process:
        return Process(self.client, f"web-1:4242:{self.unique}", queues, concurrency)

    def health(self) -> tuple[int, dict[str, dict[str, Any]], dict[str, Any], float]:
        """``tqadmin health --window`` on this database: its exit code, its queues by name, its document, and
        how long it took."""
        began = time.monotonic()
        argv = ("--broker", self.url, "health", "--window", f"{WINDOW_S:g}", "--filter", self.unique)
        code, doc, err = self.tq_json(*argv)
        assert doc is not None, err
        return code, {q["name"]: q for q in doc["queues"]}, doc, time.monotonic() - began


@pytest.fixture
def db(own_redis_db: str, unique: str, tq_json: Tq) -> Iterator[Database]:
    client = redis.Redis.from_url(own_redis_db)
    yield Database(client, own_redis_db, unique, tq_json)
    client.close()


def said(capsys: pytest.CaptureFixture[str], text: str) -> None:
    with capsys.disabled():
        print(f"\nhealth: {text}")


def test_a_sidekiq_queue_whose_live_process_completes_nothing_stalls_and_one_that_completes_is_ok(
    isolated_env: Any, db: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    mail = db.queue(3, "mail")
    process = db.process([mail])
    process.procd = 500  # what it ran before: the counters exist and stand
    process.beat()  # alive, idle: its fetcher takes nothing (the stall no heartbeat shows)

    code, queues, _, took = db.health()
    row = queues[f"sidekiq:{mail}"]
    assert (code, row["verdict"]) == (7, "stalled"), row
    assert row["reason"].startswith("ready 3 for ") and ", 1 worker, no completion in " in row["reason"], row
    assert row["reason"].endswith(f"({TOTAL} did not move)"), row
    said(capsys, f"Sidekiq process completing nothing: stalled in {took:.1f} s (--window {WINDOW_S:g}):"
                 f" {row['reason']}")  # fmt: skip

    with working(process, mail, db.unique):
        code, queues, _, took = db.health()
    row = queues[f"sidekiq:{mail}"]
    assert (code, row["verdict"], row["ready"]) == (0, "ok", 3), row
    assert f"completing ({TOTAL} rose, every worker it counts serving this queue alone)" in row["reason"]
    said(capsys, f"Sidekiq process completing, depth steady: ok in {took:.1f} s: {row['reason']}")
    assert int(db.client.get("stat:processed") or 0) > 500 and db.client.get("stat:failed") == b"0"


def test_counters_that_rise_prove_nothing_on_a_queue_whose_processes_serve_other_queues_too(
    isolated_env: Any, db: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    mail, billing = db.queue(3, "mail"), db.queue(2, "billing")
    both = db.process([mail, billing])
    both.beat()
    with working(both, billing, db.unique):  # billing's jobs end; whether mail's do, the counters cannot say
        _, queues, _, took = db.health()
    row = queues[f"sidekiq:{mail}"]
    assert row["verdict"] == "unknown", row
    assert row["reason"].endswith(
        f"{TOTAL} rose, but it counts every Sidekiq process on this Redis, and they also serve"
        f" sidekiq:{billing}"
    ), row
    said(capsys, f"Sidekiq counters shared by two queues: unknown in {took:.1f} s: {row['reason']}")


def test_a_sidekiq_process_whose_every_thread_runs_past_the_limit_is_wedged_by_run_at_and_its_queue_stalls(
    isolated_env: Any, db: Database
) -> None:
    """``run_at`` (when each thread took its job) is what Sidekiq exposes of progress: both threads on jobs
    begun 700 s ago, past the profile's ``wedged_no_history_s`` (600 s by default: Sidekiq keeps no run
    times)."""
    mail = db.queue(4, "mail")
    process = db.process([mail], concurrency=2)
    began = int(time.time()) - 700
    process.work = {
        f"tid-{i}": json.dumps({"queue": mail, "payload": job(mail, f"{db.unique}-r{i}"), "run_at": began})
        for i in range(2)
    }
    process.beat()
    code, queues, doc, _ = db.health()
    row = queues[f"sidekiq:{mail}"]
    assert (code, row["verdict"]) == (7, "stalled"), row
    (worker,) = [w for w in doc["workers"] if w["name"] == process.identity]
    assert worker["wedged"] is True, worker
    assert "threads" in worker["wedged_reason"], worker


@pytest.mark.parametrize(
    ("write", "named"),
    [
        (lambda c: c.set("stat:processed", "-Infinity"), "sidekiq counters: stat:processed is not a count"),
        (lambda c: c.hset("stat:failed", "x", "1"), "sidekiq counters: stat:failed is not a count"),
    ],
)
def test_counters_sidekiq_would_not_write_are_named_and_prove_nothing(
    db: Database, write: Callable[[redis.Redis], object], named: str
) -> None:
    """A counter that is no count (or a key of another type) is named among what was not read; the processes
    are still listed, with no completions: a verdict over them says no count comes from them."""
    db.process([db.queue(1, "mail")]).beat()
    write(db.client)
    admin = RedisAdmin(BrokerConfig(db.url))
    try:
        reading = admin.framework_workers()
    finally:
        admin.close()
    assert [w.name for w in reading.workers] == [f"web-1:4242:{db.unique}"]
    assert (reading.totals, reading.unreadable) == ({}, (named,))
