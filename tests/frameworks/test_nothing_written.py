"""Reading other frameworks' workers writes nothing: on a Redis database and a RabbitMQ vhost of their own,
every key (``DUMP``) and every queue and binding are the same after an hour's worth of polls (720, one per
5 s, run back to back) as before, the Celery event listener's own exclusive auto-delete queue apart."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from framework_brokers import wait_for
from rq import Queue, SimpleWorker
from tqadmin_rabbitmq.admin import RabbitMQAdmin
from tqadmin_redis.admin import RedisAdmin

from tests.conftest import REDIS_URL
from tests.support.rabbit_queues import amqp_url, api
from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.kit.listening import KEPT

POLLS = 720  # an hour of a dashboard's or an exporter's polls at 5 s
OWN_DB = 8  # no other test uses it


def every_key(client: redis.Redis) -> dict[bytes, Any]:
    return {key: client.dump(key) for key in client.scan_iter(count=1000)}


@pytest.fixture
def own_db() -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(REDIS_URL.rsplit("/", 1)[0] + f"/{OWN_DB}")
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


@pytest.mark.redis
def test_an_hour_of_polling_every_framework_on_redis_leaves_every_key_as_it_was(own_db: redis.Redis) -> None:
    queue = Queue("reports", connection=own_db)
    queue.enqueue("rq_jobs.ship", "o-1")
    SimpleWorker([queue], connection=own_db, name="rq-1").work(burst=True, with_scheduler=False)
    own_db.sadd("rq:workers", "rq:worker:gone")  # a stale member RQ's own reads would remove
    now = time.time()
    info = {"hostname": "h", "pid": 1, "concurrency": 5, "queues": ["default"], "started_at": now}
    own_db.hset("h:1:a", mapping={"info": json.dumps(info), "busy": 0, "beat": now, "quiet": "false"})
    own_db.sadd("processes", "h:1:a", "h:2:gone")  # one Sidekiq's ProcessSet would SREM
    own_db.set("stat:processed", 41)  # Sidekiq's counters (stat:failed absent: no job failed yet)
    own_db.zadd("dramatiq:__heartbeats__", {"w-1": now * 1000})
    own_db.sadd("dramatiq:__acks__.w-1.default", "m-1")
    own_db.hset("dramatiq:default.msgs", "m-1", json.dumps({"actor_name": "a", "message_id": "m-1"}))
    own_db.sadd("_kombu.binding.celery.pidbox", "\x06\x16\x06\x16celery@h.celery.pidbox")
    before = every_key(own_db)

    admin = RedisAdmin(BrokerConfig(REDIS_URL.rsplit("/", 1)[0] + f"/{OWN_DB}", celery_events=True))
    try:
        for _ in range(POLLS):
            reading = admin.framework_workers()
    finally:
        admin.close()
    assert {w.framework for w in reading.workers} == {"rq", "sidekiq", "dramatiq", "celery"}
    assert reading.unreadable == () and reading.totals == {"sidekiq": 41}
    assert every_key(own_db) == before


def topology(vhost: str) -> tuple[list[Any], list[Any], list[Any]]:
    queues = api(f"queues/{vhost}?columns=name,arguments,messages")
    bindings = api(f"bindings/{vhost}")
    exchanges = api(f"exchanges/{vhost}?columns=name,type")
    shown = [b for b in bindings if not str(b["destination"]).startswith("tqadmin.celeryev.")]
    listed = sorted(json.dumps([q["name"], q["arguments"], q.get("messages")]) for q in queues)
    return listed, sorted(json.dumps(b, sort_keys=True) for b in shown), exchanges


@pytest.mark.rabbitmq
def test_an_hour_of_polling_celery_on_rabbitmq_leaves_the_vhost_as_it_was_but_its_own_queue(
    own_vhost: str,
) -> None:
    import pika

    url = amqp_url(own_vhost)
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    channel.exchange_declare("celeryev", "topic", durable=True)  # as a Celery worker with events declares it
    channel.queue_declare("orders", durable=True)
    channel.basic_publish("", "orders", b'{"task_type": "x"}')
    connection.close()
    # the management API's figures refresh every 5 s (later on a loaded machine): before, once they show it
    wait_for(lambda: '["orders", {}, 1]' in topology(own_vhost)[0], "the message in the API's figures", 60)
    before = topology(own_vhost)

    admin = RabbitMQAdmin(BrokerConfig(url, celery_events=True), min_interval_s=0.0)
    try:
        for _ in range(POLLS):
            admin.framework_workers()
        during = api(f"queues/{own_vhost}")
        (listener,) = [q for q in during if q["name"].startswith("tqadmin.celeryev.")]
        assert (listener["exclusive"], listener["auto_delete"]) == (True, True)
    finally:
        admin.close()
        KEPT.close_all()  # the listener outlives its admin for minutes (for the next one): the process ends
    with contextlib.suppress(AssertionError):  # the listener's queue goes with its connection, soon or late
        wait_for(lambda: topology(own_vhost) == before, "the vhost as it was", 60)
    assert topology(own_vhost) == before
