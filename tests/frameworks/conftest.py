"""Fixtures that publish through the real Celery, Dramatiq and RQ into the local RabbitMQ and Redis (and clean
up after)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from framework_brokers import SHARED_SETS, SHARED_SORTED_SETS, CeleryOnRabbit, Rabbit

from tests.conftest import REDIS_URL
from tests.support.rabbit_queues import vhost_of_its_own

RQ_THROTTLE = "rq:clean_groups"
CLAIMABLE_DBS = range(10, 16)  # Redis databases a test may hold for itself (8 and 9 are fixed ones' own)


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


def claim_one(claims: redis.Redis, unique: str) -> str | None:
    """The key claiming a database of :data:`CLAIMABLE_DBS` for this test; ``None`` while all are held."""
    keys = (f"tqt:claimed-db:{db}" for db in CLAIMABLE_DBS)
    return next((key for key in keys if claims.set(key, unique, nx=True, ex=900)), None)


@pytest.fixture
def own_redis_db(unique: str) -> Iterator[str]:
    """The URL of a Redis database no other test uses meanwhile, empty before and after: for registries
    that are one key per database (Sidekiq's ``processes`` and ``queues``, RQ's ``rq:workers``), whose
    hostile entries would show in every other test's listing. Claimed with a ``SET NX`` in database 0
    (expiring, should a test be killed) from :data:`CLAIMABLE_DBS`, waiting while all are held."""
    claims = redis.Redis.from_url(REDIS_URL)
    deadline = time.monotonic() + 300
    while (claim := claim_one(claims, unique)) is None:
        assert time.monotonic() < deadline, "no Redis database free for this test within 5 minutes"
        time.sleep(0.5)
    url = f"{REDIS_URL.rsplit('/', 1)[0]}/{claim.rsplit(':', 1)[1]}"
    client = redis.Redis.from_url(url)
    client.flushdb()
    try:
        yield url
    finally:
        client.flushdb()
        client.close()
        if claims.get(claim) == unique.encode():
            claims.delete(claim)
        claims.close()


@pytest.fixture
def own_vhost() -> Iterator[str]:
    """A RabbitMQ vhost of the test's own (the guest user may do anything there), deleted afterwards."""
    with vhost_of_its_own() as vhost:
        yield vhost
