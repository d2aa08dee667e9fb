"""The Celery listener on RabbitMQ through what on-call meets: a half-open disconnect (the client's side cut,
the broker's still holding the old connection and its exclusive queue) is heard again within one reconnect,
through a queue of a new name; and an admin dropped after a read error elsewhere (as the faces' lazy readers
drop theirs) is opened again onto the same listener, with every figure it had heard."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from framework_brokers import wait_for
from test_celery_workers import app_for, celery, celery_events_worker, management_queue

from tests.support.amqp_proxy import AmqpProxy
from tests.support.rabbit_queues import amqp_url, vhost_of_its_own
from tqadmin.errors import BrokerError
from tqadmin.plugin.base import BrokerConfig
from tqadmin.reading.lazy import Lazy

pytestmark = pytest.mark.rabbitmq


@pytest.fixture
def vhost() -> Iterator[str]:
    with vhost_of_its_own() as name:
        yield name


@pytest.fixture
def proxy() -> Iterator[AmqpProxy]:
    proxy = AmqpProxy()
    try:
        yield proxy
    finally:
        proxy.close()


def test_a_half_open_disconnect_is_heard_again_within_one_reconnect_and_a_dropped_admin_keeps_the_figures(
    isolated_env: Any, unique: str, tmp_path: Path, vhost: str, proxy: AmqpProxy
) -> None:
    from tqadmin_rabbitmq.admin import RabbitMQAdmin

    node, queue = f"tqt-{unique}@tests", f"tqt-{unique}-celery"
    broker = amqp_url(vhost)  # the worker's, direct; the listener's goes through the proxy
    through = f"amqp://guest:guest@127.0.0.1:{proxy.port}/{quote(vhost, safe='')}"
    tasks = app_for(broker, queue)
    admin = Lazy(lambda: RabbitMQAdmin(BrokerConfig(through, celery_events=True), min_interval_s=0.0))

    def worker() -> Any:
        return celery(admin.use(lambda a: a.framework_workers()), node)

    def listener() -> Any:
        return admin.use(lambda a: a._celery.events)

    with celery_events_worker(node, queue, broker, tmp_path / "celery.log"):
        wait_for(lambda: (w := worker()) and w.alive, "the worker, alive")
        first_queue, connections = listener().queue, proxy.connections
        assert first_queue is not None and connections == 1

        cut = time.time()
        proxy.strand_all()  # pika sees its connection cut; the broker still holds it, and its queue
        wait_for(
            lambda: (w := worker()) and w.alive and w.heartbeat_age_s < time.time() - cut,
            "a heartbeat sent after the cut, heard",
        )
        events = listener()
        assert (proxy.connections, events.listener.gaps) == (connections + 1, 1)  # one reconnect
        assert events.queue not in (None, first_queue)
        assert management_queue(vhost, first_queue) is not None  # the half-open one still holds its own

        tasks.nap.delay(0.01)
        heard = wait_for(
            lambda: (s := admin.use(lambda a: a.framework_workers()).tasks["celery"].get("events.nap")) and s,
            "the nap's end",
        )
        with pytest.raises(BrokerError):  # a read error elsewhere: the lazy reader drops its admin
            admin.use(lambda a: (_ for _ in ()).throw(BrokerError("a broker read failed")))
        reopened = admin.use(lambda a: a.framework_workers())
        assert reopened.tasks["celery"]["events.nap"].done == heard.done >= 1
        again = celery(reopened, node)
        assert again is not None and again.alive  # no worker shown dead or forgotten after the reconnect
        assert listener() is events and proxy.connections == connections + 1  # the same listener
    admin.close()
