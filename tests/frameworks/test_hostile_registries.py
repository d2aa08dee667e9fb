"""Hostile registries through the real readers: RQ, Sidekiq and Dramatiq entries written into a Redis database
of the test's own with the keys those frameworks use, and Celery events published to RabbitMQ's ``celeryev``
exchange (and on Redis's event channels), each field holding every value of :data:`hostile_values.HOSTILE`.

One bad worker or job never fails a listing: the good workers are listed, each bad one is listed with what
could be read or skipped and named, ``tqadmin workers`` exits 5 naming what it skipped, and everything
printed (``--json`` read by a strict JSON parser) or listed is finite. A foreign queue whose oldest job says
``-Infinity`` or a 401-digit time lists with no age, and ``queues --json`` stays valid JSON.
"""

from __future__ import annotations

import base64
import json
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pika
import pytest
import redis
from framework_brokers import in_background, sidekiq_process, wait_for
from tqadmin_rabbitmq.admin import RabbitMQAdmin
from tqadmin_redis.admin import RedisAdmin

from tests.support.hostile_values import DIGITS_401, HOSTILE, as_json_text, as_stored, strict_json
from tqadmin.cli import main
from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.workers import ForeignWorker, WorkerReading

GOOD_SIDEKIQ = "web-1:1:good"
Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    """``tqadmin ARGV`` in-process: exit code, stdout and stderr as printed (no parsing)."""

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def assert_showable(worker: ForeignWorker) -> None:
    numbers = [worker.heartbeat_age_s, worker.pid, worker.concurrency, worker.started_at]
    numbers += [job.started_at for job in worker.current_jobs]
    assert all(n is None or math.isfinite(n) for n in numbers), worker


# -- registries on Redis -----------------------------------------------------------------------------------

SIDEKIQ_FIELDS = {
    "hash": ("beat", "busy", "quiet"),
    "info": ("hostname", "started_at", "pid", "concurrency", "queues"),
    "work": ("queue", "run_at", "payload"),
    "payload": ("jid", "class", "wrapped", "queue"),
}
RQ_FIELDS = ("birth", "last_heartbeat", "queues", "pid", "hostname", "state", "current_job")
RQ_JOB_FIELDS = ("description", "origin", "started_at")
DRAMATIQ_FIELDS = ("message_id", "actor_name")


def hostile_sidekiq(client: redis.Redis, identity: str, part: str, field: str, value: Any) -> None:
    """A Sidekiq process as its launcher writes it, but for ``field`` of ``part``, which holds ``value``."""
    now = time.time()
    info: dict[str, Any] = {"hostname": "web-2", "started_at": now - 60, "pid": 7, "concurrency": 5,
                            "queues": ["default"], "tag": "app", "labels": []}  # fmt: skip
    fields: dict[str, Any] = {"beat": str(now - 1).encode(), "busy": b"1", "quiet": b"false"}
    payload: dict[str, Any] = {"class": "HardWorker", "args": [1], "jid": f"j-{identity}", "queue": "default"}
    work: dict[str, Any] = {"queue": "default", "run_at": int(now) - 3}
    parts = {"hash": fields, "info": info, "work": work, "payload": payload}
    parts[part][field] = value
    if part != "work" or field != "payload":
        work["payload"] = as_json_text(payload)
    stored = {key: v for key, raw in fields.items() if (v := as_stored(raw)) is not None}
    client.hset(identity, mapping={**stored, "info": as_json_text(info)})
    client.hset(f"{identity}:work", "tid-1", as_json_text(work))
    client.sadd("processes", identity)


def rq_worker(client: redis.Redis, name: str, field: str | None = None, value: Any = None) -> None:
    """An RQ worker busy with a job, as RQ writes it, but for ``field`` (of its hash or of its job's)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
    key, job_id = f"rq:worker:{name}", f"job-{name}"
    fields = {"birth": now, "last_heartbeat": now, "queues": "default", "pid": "41", "hostname": "h1",
              "state": "busy", "current_job": job_id}  # fmt: skip
    job = {"description": "billing.charge('o-1', 10)", "origin": "default", "started_at": now}
    for holder in (fields, job):
        if field in holder:
            holder[field] = value
    client.hset(key, mapping={k: v for k, raw in fields.items() if (v := as_stored(raw)) is not None})
    client.expire(key, 480)
    client.sadd("rq:workers", key)
    job_fields = {k: v for k, raw in job.items() if (v := as_stored(raw)) is not None}
    if job_fields:
        client.hset(f"rq:job:{job_id}", mapping=job_fields)


def dramatiq_worker(client: redis.Redis, worker_id: str, message: dict[str, Any], beat_ms: float) -> None:
    """A Dramatiq worker of the ``dramatiq`` namespace holding ``message`` from queue ``default``."""
    client.zadd("dramatiq:__heartbeats__", {worker_id: beat_ms})
    client.sadd(f"dramatiq:__acks__.{worker_id}.default", f"held-{worker_id}")
    client.hset("dramatiq:default.msgs", f"held-{worker_id}", as_json_text(message))


def write_hostile_registries(client: redis.Redis) -> dict[str, list[str]]:
    """Good workers of each framework beside hostile ones; the hostile ones' names by reader source."""
    sidekiq_process(client, GOOD_SIDEKIQ, milliseconds=False, busy_jid="jid-good")
    rq_worker(client, "good")
    now_ms = time.time() * 1000
    dramatiq_worker(client, "w-good", {"actor_name": "charge", "message_id": "m-good"}, now_ms)
    bad: dict[str, list[str]] = {"sidekiq process": [], "rq worker": [], "dramatiq worker": []}
    for n, value in enumerate(HOSTILE):
        for part, fields in SIDEKIQ_FIELDS.items():
            for field in fields:
                identity = f"web-9:{n}:{part}.{field}"
                hostile_sidekiq(client, identity, part, field, value)
                bad["sidekiq process"].append(identity)
        for field in (*RQ_FIELDS, *RQ_JOB_FIELDS):
            rq_worker(client, f"bad-{n}-{field}", field, value)
            bad["rq worker"].append(f"bad-{n}-{field}")
        for field in DRAMATIQ_FIELDS:
            worker_id = f"w-bad-{n}-{field}"
            dramatiq_worker(client, worker_id, {"actor_name": "a", "message_id": "m", field: value}, now_ms)
            bad["dramatiq worker"].append(worker_id)
    for n, score in enumerate((math.inf, -math.inf, -1.0, 1e308)):
        dramatiq_worker(client, f"w-beat-{n}", {"actor_name": "a", "message_id": "m"}, score)
        bad["dramatiq worker"].append(f"w-beat-{n}")
    # keys of another type where a registry names them
    client.set("web-9:wrong:type", "a string, not a hash")
    client.sadd("processes", "web-9:wrong:type")
    rq_worker(client, "bad-executions")
    client.set("rq:worker:bad-executions:executions", "not a set")
    rq_worker(client, "bad-job")
    client.delete("rq:job:job-bad-job")
    client.rpush("rq:job:job-bad-job", "a list, not a hash")
    dramatiq_worker(client, "w-bad-acks", {"actor_name": "a", "message_id": "m"}, now_ms)
    client.delete("dramatiq:__acks__.w-bad-acks.default")
    client.set("dramatiq:__acks__.w-bad-acks.default", "not a set")
    bad["sidekiq process"].append("web-9:wrong:type")
    bad["rq worker"] += ["bad-executions", "bad-job"]
    bad["dramatiq worker"].append("w-bad-acks")
    return bad


def skipped_by_source(reading: WorkerReading) -> dict[str, int]:
    """How many entries each source skipped: those named one by one and those counted."""
    counts: dict[str, int] = {}
    for line in reading.unreadable:
        source, _, rest = line.partition(": ")
        if rest.endswith(" more entries skipped"):
            counts[source] = counts.get(source, 0) + int(rest.split()[0])
        else:
            source = " ".join(line.split()[:2])
            counts[source] = counts.get(source, 0) + 1
    return counts


@pytest.mark.redis
def test_hostile_registry_entries_on_redis_are_skipped_and_named_and_the_good_workers_listed(
    own_redis_db: str,
) -> None:
    client = redis.Redis.from_url(own_redis_db)
    bad = write_hostile_registries(client)
    admin = RedisAdmin(BrokerConfig(own_redis_db))
    try:
        reading = admin.framework_workers()
    finally:
        admin.close()
        client.close()
    listed = {(w.framework, w.name): w for w in reading.workers}
    good = [("sidekiq", GOOD_SIDEKIQ), ("rq", "good"), ("dramatiq", "w-good")]
    assert all(listed[key].alive and listed[key].current_jobs for key in good), reading
    for worker in reading.workers:
        assert_showable(worker)
    skipped = skipped_by_source(reading)
    for source, names in bad.items():
        framework = source.split()[0]
        shown = [name for name in names if (framework, name) in listed]
        assert len(shown) + skipped.get(source, 0) == len(names), source  # each bad one listed or skipped
        assert skipped.get(source, 0) >= len(names) // 4, source  # the fuzz reached the checks
    assert len(reading.unreadable) <= 10 + len(bad)  # named up to a cap, the rest counted per source


@pytest.mark.redis
def test_tqadmin_workers_lists_the_good_sidekiq_process_and_exits_5_naming_the_hostile_one(
    isolated_env: Any, own_redis_db: str, cli: Cli
) -> None:
    client = redis.Redis.from_url(own_redis_db)
    sidekiq_process(client, GOOD_SIDEKIQ, milliseconds=False, busy_jid="jid-good")
    hostile_sidekiq(client, "web-9:1:bad", "info", "queues", 5)
    client.close()
    named = "sidekiq process web-9:1:bad: info.queues is not a list"

    code, out, err = cli("--broker", own_redis_db, "--store", own_redis_db, "workers", "--json")
    document = strict_json(out)
    assert code == 5 and [w["name"] for w in document["workers"]] == [GOOD_SIDEKIQ]
    assert document["unreadable"] == [named]
    assert f"tqadmin: warning: workers not listed: {named}" in err and "Traceback" not in err

    code, out, err = cli("--broker", own_redis_db, "--store", own_redis_db, "workers")
    assert code == 5 and GOOD_SIDEKIQ in out and "web-9:1:bad" not in out and named in err


def sidekiq_job(jid: str, enqueued_at: Any) -> str:
    return as_json_text({"class": "HardWorker", "args": [1], "jid": jid, "enqueued_at": enqueued_at})


@pytest.mark.redis
def test_tqadmin_queues_with_hostile_oldest_jobs_prints_valid_json_and_no_age_for_them(
    isolated_env: Any, own_redis_db: str, cli: Cli
) -> None:
    client = redis.Redis.from_url(own_redis_db)
    client.sadd("queues", "good")
    client.lpush("queue:good", sidekiq_job("j-good", time.time() - 60))
    for n, value in enumerate([*HOSTILE, "-Infinity", DIGITS_401]):
        client.sadd("queues", f"s{n}", f"r{n}")
        client.lpush(f"queue:s{n}", sidekiq_job(f"j{n}", value), as_stored(value) or b"")  # oldest first
        client.sadd("rq:queues", f"rq:queue:r{n}")
        client.rpush(f"rq:queue:r{n}", f"rj{n}")
        client.hset(f"rq:job:rj{n}", mapping={"origin": f"r{n}", "enqueued_at": as_stored(value) or b""})
    client.sadd("queues", "raw")
    client.rpush(
        "queue:raw", b'{"class": "K", "args": [], "jid": "j", "enqueued_at": -Infinity}'
    )  # as in the issue
    client.sadd("queues", "wrong")
    client.hset("queue:wrong", "a", "a hash, not a list")
    client.sadd("_kombu.binding.orders", "\x06\x16\x06\x16orders")
    client.set("unacked", "a string, not kombu's hash")
    client.close()

    code, out, err = cli("--broker", own_redis_db, "queues", "--json")
    assert code == 0 and "Traceback" not in err, err
    queues = {q["name"]: q for q in strict_json(out)["queues"]}
    assert 59 <= queues["sidekiq:good"]["oldest_age_s"] < 600
    ages = [q["oldest_age_s"] for q in queues.values()]
    assert all(age is None or (isinstance(age, int | float) and age >= 0) for age in ages)
    assert queues["sidekiq:raw"]["oldest_age_s"] is None and "celery:orders" in queues

    code, out, err = cli("--broker", own_redis_db, "queues")
    assert code == 0 and "sidekiq:good" in out and "Traceback" not in err


# -- Celery's events on RabbitMQ and Redis -------------------------------------------------------------------

EVENT_SHAPES: list[dict[str, Any]] = [
    {"type": "worker-heartbeat", "freq": 2.0, "pid": 7, "active": 1},
    {"type": "task-sent", "uuid": "u", "name": "t", "routing_key": "q"},
    {"type": "task-received", "uuid": "u", "name": "t"},
    {"type": "task-started", "uuid": "u"},
    {"type": "task-succeeded", "uuid": "u", "runtime": 0.5},
]
EVENT_FIELDS = ("timestamp", "hostname", "uuid", "freq", "pid", "active", "name", "routing_key", "runtime")
NOT_EVENTS = [b"\xff\xfe", b"[" * 100_000, b"null", b'[1, {"type": 5}, {"type": "task-started"}]', b"NaN"]


def hostile_events(now: float) -> Iterator[bytes]:
    """Every field of every event shape holding every hostile value, as JSON bodies; bodies that are no
    event; and a task-started the good worker runs, dated 1e300 (a time no ``datetime`` can print)."""
    for n, value in enumerate(HOSTILE):
        for shape in EVENT_SHAPES:
            for field in EVENT_FIELDS:
                host = f"h-{n}-{shape['type']}-{field}@tests"
                event = {**shape, "hostname": host, "timestamp": now, field: value}
                yield as_json_text(event).encode()
    yield from NOT_EVENTS
    yield as_json_text(
        {"type": "task-started", "uuid": "far", "hostname": "good@tests", "timestamp": 1e300}
    ).encode()


def good_heartbeat(now: float) -> bytes:
    return as_json_text(
        {"type": "worker-heartbeat", "hostname": "good@tests", "timestamp": now, "freq": 2.0}
    ).encode()


@contextmanager
def publishing(publish: Callable[[bytes], None]) -> Iterator[None]:
    """The hostile events, with a good worker's heartbeat between every hundred of them, over and over from
    a thread of its own until the block ends."""

    def run(stop: threading.Event) -> None:
        while not stop.is_set():
            for n, body in enumerate(hostile_events(time.time())):
                if n % 100 == 0:  # the good worker beats all along, however slow a round is
                    publish(good_heartbeat(time.time()))
                publish(body)
            stop.wait(0.5)

    with in_background(run):
        yield


@contextmanager
def on_rabbitmq(vhost: str) -> Iterator[tuple[str, Callable[[bytes], None]]]:
    url = f"amqp://guest:guest@127.0.0.1:5672/{vhost}"
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    channel.exchange_declare("celeryev", "topic", durable=True)  # as a Celery worker with events declares it
    try:
        yield url, lambda body: channel.basic_publish("celeryev", "worker.heartbeat", body)
    finally:
        connection.close()


@contextmanager
def on_redis(url: str) -> Iterator[tuple[str, Callable[[bytes], None]]]:
    client = redis.Redis.from_url(url)
    channel = f"/{url.rsplit('/', 1)[1]}.celeryev/worker.heartbeat"

    def publish(body: bytes) -> None:
        envelope = {"body": base64.b64encode(body).decode(), "properties": {"body_encoding": "base64"}}
        client.publish(channel, json.dumps(envelope))

    try:
        yield url, publish
    finally:
        client.close()


def hostile_host(value: Any, field: str, kind: str = "worker-heartbeat") -> str:
    """The hostname of the event of ``kind`` whose ``field`` holds ``value``."""
    return f"h-{HOSTILE.index(value)}-{kind}-{field}@tests"


@pytest.mark.rabbitmq
def test_hostile_celery_events_on_rabbitmq_are_skipped_and_the_good_worker_listed(own_vhost: str) -> None:
    with on_rabbitmq(own_vhost) as (url, publish):
        admin = RabbitMQAdmin(BrokerConfig(url, celery_events=True), min_interval_s=0.0)
        try:
            admin.framework_workers()  # the listener binds its queue
            with publishing(publish):
                wait_for(
                    lambda: any(w.name == "good@tests" for w in admin.framework_workers().workers),
                    "the good worker's heartbeat heard among the hostile events",
                    60,
                )
                time.sleep(1.5)  # another round of hostile events heard
                reading = admin.framework_workers()
        finally:
            admin.close()
    shown = {w.name: w for w in reading.workers}
    assert shown["good@tests"].alive and shown["good@tests"].current_jobs == ()
    for worker in reading.workers:
        assert_showable(worker)
    skipped = [hostile_host(DIGITS_401, "pid"), hostile_host(1e308, "timestamp"), hostile_host(-1, "freq")]
    assert not set(skipped) & set(shown)  # each event skipped, changing nothing
    assert shown[hostile_host(0, "pid")].alive  # a pid of 0 is a count: that event was heard


@pytest.mark.parametrize(
    "broker",
    [pytest.param("rabbitmq", marks=pytest.mark.rabbitmq), pytest.param("redis", marks=pytest.mark.redis)],
)
def test_tqadmin_workers_with_celery_events_prints_valid_json_whatever_the_events_hold(
    broker: str,
    isolated_env: Any,
    own_vhost: str,
    own_redis_db: str,
    cli: Cli,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TQADMIN_CELERY_EVENTS", "1")
    where = on_rabbitmq(own_vhost) if broker == "rabbitmq" else on_redis(own_redis_db)
    with where as (url, publish), publishing(publish):
        code, out, err = cli("--broker", url, "--store", own_redis_db, "workers", "--json")
    assert code == 0 and "Traceback" not in err, err
    workers = {w["name"]: w for w in strict_json(out)["workers"]}
    assert workers["good@tests"]["alive"] and workers["good@tests"]["current_tasks"] == []
