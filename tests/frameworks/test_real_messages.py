"""The framework readers on messages the real libraries wrote: Celery (AMQP and kombu's Redis envelope,
protocols 2 and 1, a pickled body), Dramatiq (RabbitMQ and Redis), RQ's job hashes (queued, and failed after a
retry) and Sidekiq's documented JSON, each read back from the local broker as it was stored."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dramatiq
import pytest
import redis
from celery import Celery
from celery_tasks import make_app
from dramatiq.brokers.rabbitmq import RabbitmqBroker
from dramatiq.brokers.redis import RedisBroker
from framework_brokers import Rabbit
from rq import Queue, Retry, SimpleWorker
from tqadmin_rabbitmq import RabbitMQPlugin

from tests.conftest import AMQP_URL
from tqadmin.frameworks import summarise
from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.models import Message

REDIS_URL = "redis://127.0.0.1:6379/0"


def peeked(queue: str, count: int) -> tuple[Message, ...]:
    """The messages as tqadmin's RabbitMQ plugin hands them to every command."""
    with RabbitMQPlugin().admin(BrokerConfig(url=AMQP_URL)) as admin:
        return admin.peek(queue, count).messages


# -- Celery on RabbitMQ -----------------------------------------------------------------------------------


@pytest.fixture
def celery_amqp(rabbit: Rabbit, tmp_path: Path) -> Iterator[tuple[Celery, str]]:
    """A user's Celery app on the local RabbitMQ, and the queue its tasks go to."""
    queue = rabbit.name("celery")
    rabbit.exchanges.append(queue)
    app = make_app(queue, rabbit.name("celery.dlq"), tmp_path / "runs")
    yield app, queue
    app.close()


@pytest.mark.rabbitmq
def test_celery_protocol_2_on_amqp_is_read_from_its_headers_and_json_body(celery_amqp: Any) -> None:
    app, queue = celery_amqp
    sent = app.tasks["capp.resize"].apply_async(("cat\x1b[31m.png",), {"width": 64}, countdown=60, retries=2)
    (message,) = peeked(queue, 1)
    summary = summarise(message)
    assert (summary.framework, summary.id, summary.task) == ("celery", sent.id, "capp.resize")
    assert summary.args == '"cat\\u001b[31m.png", width=64'  # escaped, never a live escape sequence
    assert summary.retries == 2
    assert message.id is None  # Celery sets no AMQP message_id: the task id is its own


@pytest.mark.rabbitmq
def test_a_pickled_celery_body_is_never_decoded_and_celerys_argsrepr_stands_in(celery_amqp: Any) -> None:
    app, queue = celery_amqp
    sent = app.tasks["capp.charge"].apply_async(("order-7", 70), serializer="pickle")
    (message,) = peeked(queue, 1)
    assert message.properties["content_type"] == "application/x-python-serialize"
    summary = summarise(message)
    assert (summary.id, summary.task, summary.args) == (sent.id, "capp.charge", "'order-7', 70")


@pytest.mark.rabbitmq
def test_celery_protocol_1_is_read_from_its_json_body(celery_amqp: Any) -> None:
    app, queue = celery_amqp
    app.conf.task_protocol = 1
    sent = app.tasks["capp.add"].apply_async((2, 3))
    (message,) = peeked(queue, 1)
    assert "task" not in message.headers and json.loads(message.body)["task"] == "capp.add"
    s = summarise(message)
    assert (s.framework, s.id, s.task, s.args) == ("celery", sent.id, "capp.add", "2, 3")


# -- Dramatiq on RabbitMQ and Redis ------------------------------------------------------------------------


@pytest.mark.rabbitmq
def test_a_dramatiq_message_on_rabbitmq(rabbit: Rabbit) -> None:
    queue = rabbit.name("dramatiq")
    rabbit.name("dramatiq.DQ"), rabbit.name("dramatiq.XQ")
    broker = RabbitmqBroker(url=AMQP_URL)
    actor = dramatiq.actor(lambda user: None, actor_name="welcome", broker=broker, queue_name=queue)
    before = time.time()
    sent = actor.send_with_options(args=("ann",), kwargs={}, delay=60_000)  # delayed: it waits in .DQ
    broker.close()
    (message,) = peeked(f"{queue}.DQ", 1)
    summary = summarise(message)
    assert (summary.framework, summary.id, summary.task, summary.args) == (
        "dramatiq",
        sent.message_id,
        "welcome",
        '"ann"',
    )
    assert summary.retries == 0 and summary.error is None
    assert summary.sent_to == queue  # its home queue, not the delay queue it waits in
    assert summary.sent_at is not None and before - 1 < summary.sent_at < time.time() + 1


@pytest.mark.redis
def test_a_dramatiq_message_on_redis(redis_keys: redis.Redis, unique: str) -> None:
    broker = RedisBroker(url=REDIS_URL, namespace=f"tqt-{unique}")
    actor = dramatiq.actor(lambda x: None, actor_name="echo", broker=broker, queue_name="work")
    sent = actor.send(3)
    (stored,) = redis_keys.hvals(f"tqt-{unique}:work.msgs")
    broker.close()
    summary = summarise(Message(body=stored))
    assert (summary.framework, summary.id, summary.task, summary.args) == (
        "dramatiq",
        sent.message_id,
        "echo",
        "3",
    )


# -- Celery on Redis: kombu's envelope ---------------------------------------------------------------------


@pytest.mark.redis
@pytest.mark.parametrize("protocol", [2, 1])
def test_celery_on_redis_is_read_through_kombus_envelope(
    redis_keys: redis.Redis, unique: str, protocol: int
) -> None:
    queue = f"tqt-{unique}-celery"
    app = Celery("capp", broker=REDIS_URL, set_as_current=False)
    app.conf.task_protocol = protocol

    @app.task(name="capp.mail", shared=False)
    def mail(to: str, subject: str = "") -> None: ...

    sent = mail.apply_async(("ann@example.com",), {"subject": "hi"}, queue=queue)
    app.close()
    (stored,) = redis_keys.lrange(queue, 0, -1)
    assert json.loads(stored)["properties"]["body_encoding"] == "base64"
    summary = summarise(Message(body=stored))
    assert (summary.framework, summary.id, summary.task) == ("celery", sent.id, "capp.mail")
    assert summary.args == '"ann@example.com", subject="hi"' and summary.retries == 0
    assert summary.sent_to == queue  # kombu's delivery_info


# -- RQ: a job hash, its pickled data never read -----------------------------------------------------------


def rq_message(client: redis.Redis, job_id: str) -> Message:
    """An RQ job as the Redis plugin hands it over: the hash's fields (bytes, as stored) and its latest
    result's as headers, the pickled ``data`` as the body, the job id as the id."""
    fields = client.hgetall(f"rq:job:{job_id}")
    latest = client.xrevrange(f"rq:results:{job_id}", count=1)
    headers = {**(latest[0][1] if latest else {}), **fields}
    return Message(body=headers.pop(b"data"), headers=headers, id=job_id)


@pytest.mark.redis
def test_a_queued_rq_job(redis_keys: redis.Redis, unique: str) -> None:
    queue = Queue(f"tqt-{unique}", connection=redis_keys)
    job = queue.enqueue("rq_jobs.charge", "order-1", 5, currency="USD", job_id=f"tqt-{unique}-1")
    summary = summarise(rq_message(redis_keys, job.id))
    assert (summary.framework, summary.id, summary.task) == ("rq", job.id, "rq_jobs.charge")
    assert summary.args == "'order-1', 5, currency='USD'"
    assert summary.sent_to == queue.name and summary.error is None
    assert summary.sent_at == pytest.approx(job.enqueued_at.timestamp(), abs=0.001)


@pytest.mark.redis
def test_an_rq_job_failed_after_its_retry_shows_the_exception(redis_keys: redis.Redis, unique: str) -> None:
    queue = Queue(f"tqt-{unique}", connection=redis_keys)
    job = queue.enqueue("rq_jobs.charge", "order-2", 9, retry=Retry(max=1), job_id=f"tqt-{unique}-2")
    SimpleWorker([queue], connection=redis_keys, name=f"tqt-{unique}").work(burst=True, with_scheduler=False)
    assert job.get_status(refresh=True) == "failed"
    summary = summarise(rq_message(redis_keys, job.id))
    assert (summary.framework, summary.task) == ("rq", "rq_jobs.charge")
    assert summary.error == "ValueError: card declined"


# -- Sidekiq: its documented job JSON, as stored in its Redis list ---------------------------------------


SIDEKIQ_7_FAILED = {  # the wiki's "Job Format" page: a job in the retry set, times as float seconds
    "class": "HardWorker",
    "jid": "b4a577edbccf1d805744efa9",
    "args": [1, "arg", True],
    "queue": "default",
    "retry": True,
    "created_at": 1234567890.123,
    "enqueued_at": 1234567890.345,
    "error_message": "wrong number of arguments (2 for 3)",
    "error_class": "ArgumentError",
    "failed_at": 1234567890.456,
    "retry_count": 2,
    "retried_at": 1234567890.789,
}
SIDEKIQ_8_ACTIVE_JOB = {  # the same page today: integer milliseconds, and Rails' ActiveJob wrapper
    "class": "ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper",
    "wrapped": "ChargeJob",
    "jid": "0c3a5f1e2b9d8c7a6f5e4d3c",
    "queue": "billing",
    "args": [{"job_class": "ChargeJob", "job_id": "7e1b", "arguments": ["order-3", 30], "executions": 0}],
    "retry": True,
    "created_at": 1735689600000,
    "enqueued_at": 1735689600500,
    "error_message": None,
    "error_class": None,
    "failed_at": None,
    "retry_count": 0,
}


@pytest.mark.redis
@pytest.mark.parametrize(
    ("job", "expected"),
    [
        (
            SIDEKIQ_7_FAILED,
            (
                "b4a577edbccf1d805744efa9",
                "HardWorker",
                '1, "arg", true',
                2,
                "ArgumentError: wrong number of arguments (2 for 3)",
                1234567890.345,
                "default",
            ),
        ),
        (
            SIDEKIQ_8_ACTIVE_JOB,
            ("0c3a5f1e2b9d8c7a6f5e4d3c", "ChargeJob", '"order-3", 30', 0, None, 1735689600.5, "billing"),
        ),
    ],
)
def test_sidekiq_jobs_in_their_documented_json(
    redis_keys: redis.Redis, unique: str, job: dict[str, Any], expected: tuple[Any, ...]
) -> None:
    key = f"tqt-{unique}:queue:{job['queue']}"
    redis_keys.lpush(key, json.dumps(job))
    (stored,) = redis_keys.lrange(key, 0, -1)
    s = summarise(Message(body=stored))
    assert s.framework == "sidekiq"
    assert (s.id, s.task, s.args, s.retries, s.error, s.sent_at, s.sent_to) == expected
