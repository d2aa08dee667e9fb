"""Queues of other frameworks on Redis, written by the real libraries (Celery, RQ) or in the documented
format (Sidekiq): listed with their figures, peeked as stored, and every write refused with the reason.

Each test keeps its keys in a namespace of its own (a kombu ``global_keyprefix``, queue names with the
test's token) and deletes them after.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from tqadmin.errors import NotSupported
from tqadmin.plugin.base import BrokerAdmin, BrokerConfig
from tqadmin.plugin.models import Message, QueueStats
from tqadmin.plugin.registry import plugin_for_url

pytestmark = [pytest.mark.redis]

REDIS = "redis://127.0.0.1:6379/0"


@pytest.fixture
def client() -> Iterator[redis.Redis[bytes]]:
    c = redis.Redis.from_url(REDIS)
    yield c
    c.close()


@pytest.fixture
def admin(unique: str) -> Iterator[BrokerAdmin]:
    url = f"{REDIS}?prefix=tqf{unique}"
    with plugin_for_url(url).admin(BrokerConfig(url=url)) as a:
        yield a


def row(admin: BrokerAdmin, name: str) -> QueueStats:
    return next(q for q in admin.list_queues().queues if q.name == name)


def assert_every_write_refused(admin: BrokerAdmin, name: str, reason: str) -> None:
    def move_one() -> None:
        with admin.open_transfer(name) as session:
            session.publish_confirmed([("elsewhere", d.message) for d in session.fetch(1)])

    def delete_one() -> None:
        with admin.open_transfer(name) as session:
            session.ack(session.fetch(1))

    writes: list[Callable[[], object]] = [
        lambda: admin.purge(name),
        move_one,
        delete_one,
        lambda: admin.server_side_move(name, "anything", None),
    ]
    before = [m.body for m in admin.peek(name, 100).messages]
    for write in writes:
        with pytest.raises(NotSupported, match=reason):
            write()
    assert [m.body for m in admin.peek(name, 100).messages] == before


def delete_matching(client: redis.Redis[bytes], *patterns: str) -> None:
    keys = [k for p in patterns for k in client.scan_iter(p, count=1000)]
    if keys:
        client.delete(*keys)


def test_celery_queues_with_priority_sub_lists_are_listed_peeked_as_kombu_envelopes_and_never_written(
    admin: BrokerAdmin, client: redis.Redis[bytes], unique: str
) -> None:
    from celery import Celery

    prefix = f"tqcel{unique}:"
    app = Celery(broker=REDIS, broker_transport_options={"global_keyprefix": prefix})

    @app.task(name="shop.charge")
    def charge(order: int) -> None: ...

    try:
        for order in range(3):
            charge.apply_async((order,), queue="payments")
        charge.apply_async((99,), queue="payments", priority=6)
        app.close()
        name = f"celery:{prefix}payments"
        stats = row(admin, name)
        assert (stats.messages, stats.ready, stats.kind) == (4, 4, "celery")
        assert stats.consumers is None  # Celery workers leave no trace in Redis to count
        assert stats.read_only is not None and "Celery" in stats.read_only

        peeked = admin.peek(name, 10)
        envelopes = [json.loads(m.body) for m in peeked.messages]
        assert [e["headers"]["task"] for e in envelopes] == ["shop.charge"] * 4
        assert envelopes[0]["headers"]["argsrepr"] == "(0,)"  # oldest first, the priority list after
        assert "free" in peeked.cost and "read-only" in peeked.cost
        assert_every_write_refused(admin, name, "Celery")
    finally:
        delete_matching(client, f"{prefix}*")


def test_rq_queues_show_started_scheduled_and_failed_registries_and_jobs_are_never_unpickled(
    admin: BrokerAdmin, client: redis.Redis[bytes], unique: str
) -> None:
    from datetime import timedelta

    from rq import Queue, SimpleWorker

    name = f"tqrq{unique}"
    queue = Queue(name, connection=client)
    try:
        failing = queue.enqueue("json.loads", "{not json")
        SimpleWorker([queue], connection=client).work(burst=True)
        waiting = [queue.enqueue("json.dumps", [i]) for i in range(2)]
        later = queue.enqueue_in(timedelta(hours=1), "json.dumps", ["later"])

        stats = row(admin, f"rq:{name}")
        assert (stats.messages, stats.ready, stats.unacked, stats.delayed) == (2, 2, 0, 1)
        assert (stats.dlq, stats.dlq_messages) == (f"rq:{name}:failed", 1)
        assert stats.oldest_age_s is not None and stats.oldest_age_s < 60
        assert stats.read_only is not None and "RQ" in stats.read_only

        jobs = admin.peek(f"rq:{name}", 10).messages
        assert [m.id for m in jobs] == [j.id for j in waiting]
        assert jobs[0].body == client.hget(f"rq:job:{waiting[0].id}", "data")  # pickled bytes, as stored
        assert jobs[0].headers["origin"] == name and "data" not in jobs[0].headers
        (dead,) = admin.peek(f"rq:{name}:failed", 10).messages
        assert dead.id == failing.id and dead.headers["status"] == "failed"
        assert "exc_string" in dead.headers  # from its latest result, where RQ keeps the error
        assert_every_write_refused(admin, f"rq:{name}", "RQ")
        assert_every_write_refused(admin, f"rq:{name}:failed", "RQ")
    finally:
        client.srem("rq:queues", f"rq:queue:{name}")
        delete_matching(
            client, f"rq:*{name}*", *(f"rq:*{j}*" for j in [failing.id, later.id, *(w.id for w in waiting)])
        )


def sidekiq_job(queue: str, jid: str, enqueued_at: float) -> bytes:
    """A job in the JSON format Sidekiq's wiki documents (Job Format)."""
    job = {
        "class": "HardWorker",
        "args": [1, "two"],
        "jid": jid,
        "queue": queue,
        "retry": True,
        "created_at": enqueued_at,
        "enqueued_at": enqueued_at,
    }
    return json.dumps(job).encode()


def test_sidekiq_queues_show_their_latency_and_the_dead_set_and_are_never_written(
    admin: BrokerAdmin, client: redis.Redis[bytes], unique: str
) -> None:
    name = f"tqsk{unique}"
    now = time.time()
    oldest, newest = sidekiq_job(name, "a" * 24, now - 30), sidekiq_job(name, "b" * 24, now - 1)
    dead = sidekiq_job(name, f"dead{unique}", now - 300)
    try:
        client.sadd("queues", name)
        client.lpush(f"queue:{name}", oldest, newest)  # Sidekiq pushes on the left, fetches on the right
        client.zadd("dead", {dead: now})
        stats = row(admin, f"sidekiq:{name}")
        assert (stats.messages, stats.ready, stats.kind) == (2, 2, "sidekiq")
        assert stats.oldest_age_s is not None and 29 <= stats.oldest_age_s < 60  # Sidekiq's latency
        assert stats.dlq == "sidekiq:dead" and (stats.dlq_messages or 0) >= 1
        assert stats.dlq_oldest_age_s is not None  # the dead set's first score: when its oldest died
        assert [m.body for m in admin.peek(f"sidekiq:{name}", 5).messages] == [oldest, newest]
        assert dead in [m.body for m in admin.peek("sidekiq:dead", 1000).messages]
        assert_every_write_refused(admin, f"sidekiq:{name}", "Sidekiq")
    finally:
        client.srem("queues", name)
        client.delete(f"queue:{name}")
        client.zrem("dead", dead)


def test_a_stream_read_by_another_applications_group_shows_pending_lag_and_consumers(
    admin: BrokerAdmin, client: redis.Redis[bytes], unique: str
) -> None:
    key = f"tqst{unique}:events"
    try:
        for i in range(5):
            client.xadd(key, {"event": f"e{i}"})
        client.xgroup_create(key, "billing", id="0")
        client.xreadgroup("billing", "consumer-1", {key: ">"}, count=2)
        client.xadd(f"tqst{unique}:log", {"no": "group"})  # a plain log: not a queue
        stats = row(admin, f"stream:{key}")
        assert (stats.messages, stats.unacked, stats.ready, stats.consumers) == (5, 2, 3, 1)
        assert all(q.name != f"stream:tqst{unique}:log" for q in admin.list_queues().queues)
        (first,) = admin.peek(f"stream:{key}", 1).messages
        assert first.headers == {"event": "e0"} and json.loads(first.body) == {"event": "e0"}
        assert_every_write_refused(admin, f"stream:{key}", "stream")
    finally:
        client.delete(key, f"tqst{unique}:log")


def test_discovery_scans_once_and_is_reused_by_the_next_polls(
    admin: BrokerAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tqadmin_redis.foreign import ForeignQueues

    scans: list[int] = []
    real = ForeignQueues._discover

    def counted(self: ForeignQueues) -> None:
        scans.append(1)
        real(self)

    monkeypatch.setattr(ForeignQueues, "_discover", counted)
    for _ in range(3):
        admin.list_queues()
    assert len(scans) == 1


def test_tqadmin_queues_lists_foreign_queues_beside_its_own(
    tq_json: Callable[..., tuple[int, object, str]],
    client: redis.Redis[bytes],
    unique: str,
    isolated_env: object,
) -> None:
    name = f"tqsk{unique}"
    try:
        client.sadd("queues", name)
        client.lpush(f"queue:{name}", sidekiq_job(name, "c" * 24, time.time()))
        code, document, _ = tq_json("--broker", f"{REDIS}?prefix=tqf{unique}", "queues")
        assert code == 0
        assert isinstance(document, dict)
        listed = {q["name"]: q for q in document["queues"]}
        assert listed[f"sidekiq:{name}"]["read_only"].startswith("a Sidekiq queue")
        code, _, err = tq_json("--broker", f"{REDIS}?prefix=tqf{unique}", "purge", f"sidekiq:{name}", "--yes")
        assert code == 6 and "Sidekiq" in err and client.llen(f"queue:{name}") == 1
    finally:
        client.srem("queues", name)
        client.delete(f"queue:{name}")


def test_a_message_never_reaches_a_foreign_queue_through_a_move(admin: BrokerAdmin, unique: str) -> None:
    url = f"{REDIS}?prefix=tqf{unique}"
    with plugin_for_url(url).transport(BrokerConfig(url=url)) as transport:
        transport.declare("mine")
        transport.publish([("mine", Message(b"x"))])
    with admin.open_transfer("mine") as session, pytest.raises(NotSupported):
        session.publish_confirmed([("sidekiq:dead", Message(b"x"))])
    client = redis.Redis.from_url(REDIS)
    delete_matching(client, f"tqf{unique}:*")


def test_a_foreign_queue_can_be_exported_and_stays_as_it_was(
    tq_json: Callable[..., tuple[int, object, str]],
    client: redis.Redis[bytes],
    unique: str,
    isolated_env: Path,
) -> None:
    name = f"tqsk{unique}"
    jobs = [sidekiq_job(name, f"{i:024d}", time.time()) for i in range(3)]
    try:
        client.sadd("queues", name)
        client.lpush(f"queue:{name}", *jobs)
        path = isolated_env / "sidekiq.jsonl"
        code, _, err = tq_json(
            "--broker", f"{REDIS}?prefix=tqf{unique}", "export", f"sidekiq:{name}", str(path)
        )
        assert code == 0, err
        exported = [json.loads(line)["body"].encode() for line in path.read_text().splitlines()]
        assert exported == jobs  # oldest first: Sidekiq fetches from the right
        assert client.lrange(f"queue:{name}", 0, -1) == list(reversed(jobs))
    finally:
        client.srem("queues", name)
        client.delete(f"queue:{name}")


def test_a_sidekiq_queue_whose_oldest_job_is_nested_100000_deep_is_listed_and_peeked_as_it_is(
    admin: BrokerAdmin, client: redis.Redis[bytes], unique: str
) -> None:
    name = f"tqsk{unique}"
    nested = b"[" * 100_000 + b"]" * 100_000
    try:
        client.sadd("queues", name)
        client.lpush(f"queue:{name}", nested)
        stats = row(admin, f"sidekiq:{name}")
        assert (stats.messages, stats.oldest_age_s) == (1, None)  # no age to read, no error either
        assert [m.body for m in admin.peek(f"sidekiq:{name}", 5).messages] == [nested]
    finally:
        client.srem("queues", name)
        client.delete(f"queue:{name}")
