"""Fixtures that publish through the real Celery, Dramatiq and RQ into the local RabbitMQ and Redis (and clean
up after)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from framework_brokers import SHARED_SETS, SHARED_SORTED_SETS, CeleryOnRabbit, Rabbit

from tests.conftest import REDIS_URL

RQ_THROTTLE = "rq:clean_groups"


@pytest.fixture
def rabbit(unique: str) -> Iterator[Rabbit]:
    broker = Rabbit(unique)
    yield broker
    broker.close()


@pytest.fixture
def celery_rabbit(rabbit: Rabbit, tmp_path: Path) -> Iterator[CeleryOnRabbit]:
    celery = CeleryOnRabbit(rabbit, tmp_path)
    yield celery
    celery.app.close()


@pytest.fixture
def redis_keys(unique: str) -> Iterator[redis.Redis]:
    """A Redis client; afterwards every key naming this test's unique token is deleted, and so is every
    member naming it of the sets the frameworks share (RQ's queue and worker sets, Sidekiq's ``queues``,
    ``dead``, ``retry`` and ``schedule``), and the throttle key an RQ worker leaves (``rq:clean_groups``)
    if it was not there before."""
    client = redis.Redis.from_url(REDIS_URL)
    had_throttle = bool(client.exists(RQ_THROTTLE))
    yield client
    names: list[Any] = list(client.scan_iter(f"*{unique}*"))
    if not had_throttle:
        names.append(RQ_THROTTLE)
    token = unique.encode()
    for key in SHARED_SETS:
        if mine := [m for m in client.smembers(key) if token in m]:
            client.srem(key, *mine)
    for key in SHARED_SORTED_SETS:
        if mine := [m for m in client.zrange(key, 0, -1) if token in m]:
            client.zrem(key, *mine)
    if names:
        client.delete(*names)
    client.close()


@pytest.fixture
def tq(tq_json: Callable[..., tuple[int, Any, str]]) -> Callable[..., tuple[int, Any, str]]:
    """``tq_json`` on the local Redis, as a user names it: ``--broker redis://127.0.0.1:6379/0``."""
    return lambda *argv: tq_json("--broker", REDIS_URL, *argv)
