"""How the contract suite reaches each plugin's broker: one harness per plugin.

A harness knows what the suite must not learn from the plugin under test: how to make a uniquely named queue
and fill it with raw bodies, read its depth and drain it with the broker's own client, what "a consumer dies"
means on that broker, and how to delete everything a test made. The suite itself talks to the plugin only.

To add a plugin: write a class with the members of :class:`Harness` (derive from :class:`PluginFaces` to get
``plugin``, ``admin`` and ``transport`` from its URL), and add it to ``HARNESSES``. Every test in
``tests/contract`` then runs over it; ``marks`` names the server it needs (``pytest.mark.redis``...), and
``fixtures`` the pytest fixtures its constructor takes by name (the moto server's endpoint, say).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol

import pytest
from tqadmin_memory.broker import MemoryBroker, shared
from tqadmin_memory.capabilities import CAPABILITIES as MEMORY_CAPABILITIES
from tqadmin_memory.consuming import MemoryConsumer
from tqadmin_sqs.codec import BODY_ENCODING, encode_body, to_message

from tests.support.amqp_proxy import AmqpProxy
from tests.support.rabbit_queues import queues_named
from tests.support.sqs_server import BROKER_URL, CREDENTIALS, SqsQueues
from tqadmin.plugin.base import BrokerAdmin, BrokerConfig, BrokerPlugin
from tqadmin.plugin.capabilities import Capabilities, Operation
from tqadmin.plugin.models import Message
from tqadmin.plugin.registry import plugin_for_url
from tqadmin.plugin.transport import BrokerTransport, Consumer

Raw = tuple[bytes, Mapping[str, Any]]  # a body and its headers, as the broker's own client reads them


class Harness(Protocol):
    url: str
    marks: ClassVar[tuple[pytest.MarkDecorator, ...]]
    fixtures: ClassVar[tuple[str, ...]]

    def plugin(self) -> BrokerPlugin: ...

    def admin(self) -> BrokerAdmin: ...

    def transport(self) -> BrokerTransport: ...

    def make_queue(self, bodies: Sequence[bytes], headers: Mapping[str, Any] | None = None) -> str:
        """A new, uniquely named queue holding ``bodies`` (each with ``headers``), published with the
        broker's own client; deleted by :meth:`close`, with whatever the plugin made for it."""

    def depth(self, queue: str) -> int:
        """Messages ready in ``queue``: neither delayed nor held by a consumer."""

    def drain(self, queue: str) -> list[Raw]:
        """Take every ready message of ``queue`` for good, oldest first."""

    def consumer(self, queue: str, *, prefetch: int, lease_s: float) -> Consumer:
        """A consumer of ``queue`` through the plugin, which :meth:`kill` can kill."""

    def kill(self, consumer: Consumer) -> None:
        """Act out the death of that consumer's process mid-job: nothing settled, nothing said; its
        ``run`` returns soon after."""

    def move_pair(self, bodies: Sequence[bytes]) -> tuple[str, str]:
        """A queue holding ``bodies`` and an empty one that the broker's server-side move can join."""

    def close(self) -> None: ...


class PluginFaces:
    """``plugin``, ``admin`` and ``transport`` of the plugin that serves ``url``, as a user opens them."""

    url: str
    fixtures: ClassVar[tuple[str, ...]] = ()

    def config(self) -> BrokerConfig:
        return BrokerConfig(url=self.url)

    def plugin(self) -> BrokerPlugin:
        return plugin_for_url(self.url)

    def admin(self) -> BrokerAdmin:
        return self.plugin().admin(self.config())

    def transport(self) -> BrokerTransport:
        return self.plugin().transport(self.config())

    def make_queue(self, bodies: Sequence[bytes], headers: Mapping[str, Any] | None = None) -> str:
        raise NotImplementedError

    def move_pair(self, bodies: Sequence[bytes]) -> tuple[str, str]:
        return self.make_queue(bodies), self.make_queue([])


class RabbitMQHarness(PluginFaces):
    """The local RabbitMQ. A consumer connects through a proxy of its own, so that killing it is cutting its
    connection for good (the broker then requeues what it held) without a graceful cancel."""

    url = "amqp://guest:guest@127.0.0.1:5672/%2F"
    marks: ClassVar[tuple[pytest.MarkDecorator, ...]] = (pytest.mark.rabbitmq,)

    def __init__(self) -> None:
        import pika

        self._pika = pika
        self._connection = pika.BlockingConnection(pika.URLParameters(self.url))
        self._channel = self._connection.channel()
        self._channel.confirm_delivery()
        self._queues: list[str] = []
        self._proxies: dict[int, AmqpProxy] = {}

    def make_queue(self, bodies: Sequence[bytes], headers: Mapping[str, Any] | None = None) -> str:
        name = f"contract-{uuid.uuid4().hex[:10]}"
        self._channel.queue_declare(name, durable=True)
        self._queues.append(name)
        properties = self._pika.BasicProperties(delivery_mode=2, headers=dict(headers or {}))
        for body in bodies:
            self._channel.basic_publish("", name, body, properties)
        return name

    def depth(self, queue: str) -> int:
        return int(self._channel.queue_declare(queue, passive=True).method.message_count)

    def drain(self, queue: str) -> list[Raw]:
        taken: list[Raw] = []
        while True:
            method, properties, body = self._channel.basic_get(queue, auto_ack=True)
            if method is None:
                return taken
            taken.append((body, properties.headers or {}))

    def consumer(self, queue: str, *, prefetch: int, lease_s: float) -> Consumer:
        proxy = AmqpProxy()
        transport = self.plugin().transport(BrokerConfig(url=proxy.url(), timeout_s=5))
        consumer = transport.consumer(queue, prefetch=prefetch, lease_s=lease_s)
        self._proxies[id(consumer)] = proxy
        return consumer

    def kill(self, consumer: Consumer) -> None:
        self._proxies.pop(id(consumer)).close()  # the connection is cut and cannot come back
        consumer.stop()  # so that its run loop stops trying to reconnect

    def close(self) -> None:
        for proxy in self._proxies.values():
            proxy.close()
        made = {*self._queues, *(f"{q}.dlq" for q in self._queues)}
        made.update(name for q in self._queues for name in queues_named(f"{q}."))  # delay tiers
        for name in sorted(made):
            self._channel.queue_delete(name)
        self._connection.close()


class MemoryHarness(PluginFaces):
    """An in-process memory broker of the test's own; a consumer dies by :meth:`MemoryConsumer.crash`, and
    its leases run out."""

    marks: ClassVar[tuple[pytest.MarkDecorator, ...]] = ()
    capabilities: ClassVar[Capabilities] = MEMORY_CAPABILITIES

    def __init__(self) -> None:
        self.url = f"memory://contract-{uuid.uuid4().hex[:10]}"
        self._sharing = contextlib.ExitStack()
        self.broker = self._sharing.enter_context(
            shared(self.url, MemoryBroker(capabilities=self.capabilities))
        )

    def make_queue(self, bodies: Sequence[bytes], headers: Mapping[str, Any] | None = None) -> str:
        name = f"contract-{uuid.uuid4().hex[:10]}"
        self.broker.declare(name)
        self.broker.publish([(name, Message(body, dict(headers or {}))) for body in bodies])
        return name

    def depth(self, queue: str) -> int:
        return self.broker.figures(queue).ready

    def drain(self, queue: str) -> list[Raw]:
        taken = self.broker.take(queue, self.broker.figures(queue).ready, lease_s=60)
        self.broker.ack(taken)
        return [(d.message.body, d.message.headers) for d in taken]

    def consumer(self, queue: str, *, prefetch: int, lease_s: float) -> Consumer:
        return self.transport().consumer(queue, prefetch=prefetch, lease_s=lease_s)

    def kill(self, consumer: Consumer) -> None:
        assert isinstance(consumer, MemoryConsumer)
        consumer.crash()

    def close(self) -> None:
        self._sharing.close()  # the broker is forgotten, queues and all


class SQLiteHarness(PluginFaces):
    """A broker file of the test's own, read and written with ``sqlite3`` itself. A consumer dies as a
    killed process does: its loop ends with nothing settled or released, and its leases run out."""

    marks: ClassVar[tuple[pytest.MarkDecorator, ...]] = ()

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="contract-sqlite-")
        path = Path(self._dir.name) / "broker.db"
        self.url = f"sqlite:///{path}"
        with self.transport():  # the plugin creates the file (a writer: the admin face never does)
            pass
        self._db = sqlite3.connect(path, isolation_level=None)

    def make_queue(self, bodies: Sequence[bytes], headers: Mapping[str, Any] | None = None) -> str:
        name = f"contract-{uuid.uuid4().hex[:10]}"
        now = int(time.time() * 1000)
        encoded = json.dumps(dict(headers)) if headers else None
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute("INSERT INTO tqb_queues (name, created_ms) VALUES (?, ?)", (name, now))
            self._db.executemany(
                "INSERT INTO tqb_messages (queue, body, headers, enqueued_ms, available_ms)"
                " VALUES (?, ?, ?, ?, ?)",
                [(name, body, encoded, now, now) for body in bodies],
            )
        return name

    def _ready(self, queue: str) -> str:
        return f"FROM tqb_messages WHERE queue = ? AND available_ms <= {int(time.time() * 1000)}"

    def depth(self, queue: str) -> int:
        return int(self._db.execute(f"SELECT COUNT(*) {self._ready(queue)}", (queue,)).fetchone()[0])

    def drain(self, queue: str) -> list[Raw]:
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            where = self._ready(queue)
            taken = self._db.execute(f"SELECT body, headers {where} ORDER BY available_ms, id", (queue,))
            raw = [(bytes(body), json.loads(headers or "{}")) for body, headers in taken.fetchall()]
            self._db.execute(f"DELETE {where}", (queue,))
        return raw

    def consumer(self, queue: str, *, prefetch: int, lease_s: float) -> Consumer:
        return self.transport().consumer(queue, prefetch=prefetch, lease_s=lease_s)

    def kill(self, consumer: Consumer) -> None:
        consumer.stop()
        consumer.drained()  # without releasing what it holds: that stays claimed until its lease ends

    def close(self) -> None:
        self._db.close()
        self._dir.cleanup()


class SqsHarness(PluginFaces):
    """moto's SQS server (the session's); the plugin reaches it through its ``endpoint_url`` option, with
    test credentials in the environment while the harness lives. A consumer dies by stopping with what it
    holds unsettled: SQS gives it back when its visibility timeout runs out, as for a killed process."""

    url = BROKER_URL
    marks: ClassVar[tuple[pytest.MarkDecorator, ...]] = (pytest.mark.sqs,)
    fixtures: ClassVar[tuple[str, ...]] = ("moto_endpoint",)

    def __init__(self, moto_endpoint: str) -> None:
        self.endpoint = moto_endpoint
        self._environment = pytest.MonkeyPatch()
        for name, value in CREDENTIALS.items():
            self._environment.setenv(name, value)
        self.queues = SqsQueues(moto_endpoint, f"contract-{uuid.uuid4().hex[:10]}")

    def config(self) -> BrokerConfig:
        return BrokerConfig(url=self.url, timeout_s=5, options={"endpoint_url": self.endpoint})

    def make_queue(self, bodies: Sequence[bytes], headers: Mapping[str, Any] | None = None) -> str:
        name = self.queues.create(uuid.uuid4().hex[:8])
        attributes = {k: {"DataType": "String", "StringValue": str(v)} for k, v in (headers or {}).items()}
        typed = {k: ("Number" if isinstance(v, int) else "String") for k, v in (headers or {}).items()}
        for key, kind in typed.items():
            attributes[key]["DataType"] = kind
        for body in bodies:
            text, encoded = encode_body(body)  # SQS carries text: binary bodies as the plugin encodes them
            extra = {BODY_ENCODING: {"DataType": "String", "StringValue": "base64"}} if encoded else {}
            self.queues.send(name, text, MessageAttributes={**attributes, **extra})
        return name

    def depth(self, queue: str) -> int:
        return self.queues.visible(queue)

    def drain(self, queue: str) -> list[Raw]:
        taken = []
        for raw in self.queues.drain(queue):
            message = to_message(raw)
            taken.append((message.body, message.headers))
        return taken

    def consumer(self, queue: str, *, prefetch: int, lease_s: float) -> Consumer:
        return self.transport().consumer(queue, prefetch=prefetch, lease_s=lease_s)

    def kill(self, consumer: Consumer) -> None:
        consumer.stop()
        consumer.drained()

    def close(self) -> None:
        self.queues.close()
        self._environment.undo()


class ListOnlyMemoryHarness(MemoryHarness):
    """A memory broker that withholds every optional operation, so that the refusals really run."""

    capabilities: ClassVar[Capabilities] = Capabilities(
        supported=frozenset(),
        reasons=tuple(
            (op, f"this memory broker withholds {op.value}, for the contract suite") for op in Operation
        ),
    )


class RedisHarness(PluginFaces):
    """The local Redis, every key under a prefix of this harness's own (the URL's ``?prefix=``). Streams,
    groups and entries are written and read with redis-py, in the layout docs/redis.md describes; a
    consumer dies by stopping without settling, and what it held returns once its lease has passed."""

    marks: ClassVar[tuple[pytest.MarkDecorator, ...]] = (pytest.mark.redis,)
    server = "redis://127.0.0.1:6379/0"

    def __init__(self) -> None:
        from tqadmin_redis.naming import Layout

        from tqadmin.connect.redis_client import connect

        self.prefix = f"tqct{uuid.uuid4().hex[:10]}"
        self.url = f"{self.server_url()}?prefix={self.prefix}"
        self.layout = Layout(self.prefix)
        self.client: Any = connect(self.server_url(), 10, "the contract suite's Redis", "--broker")

    def server_url(self) -> str:
        return self.server

    def make_queue(self, bodies: Sequence[bytes], headers: Mapping[str, Any] | None = None) -> str:
        import json

        name = f"contract-{uuid.uuid4().hex[:10]}"
        for keys in (self.layout.queue(name), self.layout.dlq(name)):
            self.client.xgroup_create(keys.stream, "tq", id="0", mkstream=True)
        self.client.sadd(self.layout.registry, name)
        stream = self.layout.queue(name).stream
        for body in bodies:
            self.client.xadd(stream, {"body": body, "headers": json.dumps(dict(headers or {}))})
        return name

    def _ready(self, queue: str) -> list[tuple[bytes, dict[bytes, bytes]]]:
        """Entries nobody holds: never delivered, or given back (held by ``tq:released``)."""
        stream = self.layout.queue(queue).stream
        held = {
            p["message_id"]
            for p in self.client.xpending_range(stream, "tq", "-", "+", 1_000_000)
            if p["consumer"] != b"tq:released"
        }
        return [(i, f) for i, f in self.client.xrange(stream) if i not in held]

    def depth(self, queue: str) -> int:
        return len(self._ready(queue))

    def drain(self, queue: str) -> list[Raw]:
        import json

        stream = self.layout.queue(queue).stream
        ready = self._ready(queue)
        if ready:
            self.client.xack(stream, "tq", *(i for i, _ in ready))
            self.client.xdel(stream, *(i for i, _ in ready))
        return [(f[b"body"], json.loads(f.get(b"headers", b"{}"))) for _, f in ready]

    def consumer(self, queue: str, *, prefetch: int, lease_s: float) -> Consumer:
        return self.transport().consumer(queue, prefetch=prefetch, lease_s=lease_s)

    def kill(self, consumer: Consumer) -> None:
        consumer.stop()  # it takes nothing more, settles nothing, and its entries stay pending to it
        consumer.drained()

    def close(self) -> None:
        keys = list(self.client.scan_iter(f"{self.prefix}:*", count=1000))
        if keys:
            self.client.delete(*keys)
        self.client.close()


class RedisClusterHarness(RedisHarness):
    """The same over a three-master Redis Cluster of this test process's own
    (tests/support/redis_servers.py)."""

    marks: ClassVar[tuple[pytest.MarkDecorator, ...]] = (pytest.mark.redis_cluster,)

    def server_url(self) -> str:
        from tests.support.redis_servers import shared_cluster

        return shared_cluster().url

    def move_pair(self, bodies: Sequence[bytes]) -> tuple[str, str]:
        """A queue and its DLQ: one hash tag, so one script can move between them on a cluster."""
        queue = self.make_queue(bodies)
        return queue, f"{queue}.dlq"


HARNESSES: dict[str, type[Harness]] = {
    "rabbitmq": RabbitMQHarness,
    "memory": MemoryHarness,
    "redis": RedisHarness,
    "redis-cluster": RedisClusterHarness,
    "sqlite": SQLiteHarness,
    "sqs": SqsHarness,
}
"""Every plugin, both faces: each test of the suite runs over each of these."""

VARIANTS: dict[str, type[Harness]] = {"memory-list-only": ListOnlyMemoryHarness}
"""Plugins configured to declare otherwise: only the capability checks run over these."""


def params(harnesses: Mapping[str, type[Harness]]) -> list[Any]:
    """Fixture parameters, each marked with the server its harness needs."""
    return [pytest.param(name, marks=harnesses[name].marks, id=name) for name in sorted(harnesses)]
