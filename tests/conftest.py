"""Shared fixtures: unique names so tests run in parallel, and clean-up of what they create."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# boto3's credential chain would ask the EC2 instance metadata service (off this machine) when a test runs
# without test credentials: never, here.
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")

AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
MANAGEMENT_URL = "http://127.0.0.1:15672/"
REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture
def unique() -> str:
    """A short unique token for queue and key names."""
    return uuid.uuid4().hex[:10]


@pytest.fixture
def isolated_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[Path]:
    """No user config, audit log in tmp: a test never reads or writes the developer's own files.

    Nothing configured means the embedded SQLite broker and store in the test's own home; a test marked
    ``rabbitmq`` (or ``redis``) is pointed at the local server instead, as a user would configure it.
    """
    for name in (
        "TQADMIN_PROFILE",
        "TQADMIN_BROKER_URL",
        "TQADMIN_MANAGEMENT_URL",
        "TQADMIN_STORE_URL",
        "TQADMIN_CELERY_EVENTS",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("TQADMIN_AUDIT_LOG", str(tmp_path / "audit.jsonl"))
    if request.node.get_closest_marker("rabbitmq"):
        monkeypatch.setenv("TQADMIN_BROKER_URL", AMQP_URL)
    if request.node.get_closest_marker("redis"):
        monkeypatch.setenv("TQADMIN_STORE_URL", REDIS_URL)
    yield tmp_path


class AmqpQueues:
    """Queues a test declares on the local RabbitMQ, with helpers to fill and read them; deleted after."""

    def __init__(self, unique: str) -> None:
        import pika

        self._pika = pika
        self.unique = unique
        self.connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
        self.channel = self.connection.channel()
        self.channel.confirm_delivery()
        self.names: list[str] = []

    def declare(self, suffix: str, arguments: dict[str, object] | None = None) -> str:
        name = f"test-{self.unique}-{suffix}"
        self.channel.queue_declare(name, durable=True, arguments=arguments)
        self.names.append(name)
        return name

    def name(self, suffix: str) -> str:
        """A queue name for this test that is not declared (deleted at the end if something creates it)."""
        name = f"test-{self.unique}-{suffix}"
        self.names.append(name)
        return name

    def publish(
        self, queue: str, body: bytes, headers: dict[str, object] | None = None, **props: object
    ) -> None:
        properties = self._pika.BasicProperties(delivery_mode=2, headers=headers, **props)
        self.channel.basic_publish("", queue, body, properties, mandatory=True)

    def publish_jobs(
        self, queue: str, count: int, headers: dict[str, object] | None = None, **fields: object
    ) -> None:
        import json

        for i in range(count):
            body = json.dumps({"task_type": fields.get("task_type", "t"), "id": f"job-{i}", "n": i, **fields})
            self.publish(queue, body.encode(), headers)

    def depth(self, queue: str) -> int:
        return int(self.channel.queue_declare(queue, passive=True).method.message_count)

    def drain(self, queue: str) -> list[tuple[object, bytes]]:
        """Take every message (acked): ``(properties, body)`` in queue order."""
        taken = []
        while True:
            method, props, body = self.channel.basic_get(queue, auto_ack=True)
            if method is None:
                return taken
            taken.append((props, body))

    def close(self) -> None:
        for name in self.names:
            try:
                self.channel.queue_delete(name)
            except Exception:
                self.channel = self.connection.channel()
        self.connection.close()


@pytest.fixture
def amqp_queues(unique: str) -> Iterator[AmqpQueues]:
    """Declare, fill and inspect uniquely named queues on the local RabbitMQ; all deleted after the test."""
    queues = AmqpQueues(unique)
    yield queues
    queues.close()


@pytest.fixture
def tq_json(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, Any, str]]:
    """Run ``tqadmin ARGV --json`` in-process: ``(exit code, parsed stdout or None, stderr)``."""
    import json

    from tqadmin.cli import main

    def run(*argv: str) -> tuple[int, Any, str]:
        code = main([*argv, "--json"])
        captured = capsys.readouterr()
        return code, (json.loads(captured.out) if captured.out.strip() else None), captured.err

    return run


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """moto's SQS server on a free loopback port, one per pytest process (xdist-safe)."""
    from tests.support.sqs_server import MotoServer

    server = MotoServer()
    yield server.endpoint
    server.stop()


@pytest.fixture
def sqs_env(moto_endpoint: str, isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The environment of a user of the local SQS: credentials, region, endpoint, and the broker URL; the
    endpoint is returned. Worker processes started by the test inherit it."""
    from tests.support.sqs_server import BROKER_URL, CREDENTIALS

    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
    monkeypatch.setenv("TQADMIN_BROKER_URL", BROKER_URL)
    return moto_endpoint


@pytest.fixture
def sqs_queues(moto_endpoint: str, unique: str) -> Iterator[Any]:
    """Create, fill and inspect uniquely named queues on the moto server; all deleted after the test."""
    from tests.support.sqs_server import SqsQueues

    queues = SqsQueues(moto_endpoint, unique)
    yield queues
    queues.close()


@pytest.fixture(scope="session")
def redis_cluster_url() -> Iterator[str]:
    """A three-master Redis Cluster of this test process's own, on free loopback ports
    (tests/support/redis_servers.py)."""
    from tests.support.redis_servers import shared_cluster

    yield shared_cluster().url


@pytest.fixture
def usual_umask() -> Iterator[None]:
    """The usual umask, 022, for a test of the modes tqadmin gives what it creates (restored after)."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


@pytest.fixture(autouse=True)
def kept_listeners_closed() -> Iterator[None]:
    """Each test's listeners closed at its end: kept for minutes otherwise (``tqadmin.plugin.kit.listening``),
    they would carry one test's events into the next."""
    yield
    from tqadmin.plugin.kit.listening import KEPT

    KEPT.close_all()
