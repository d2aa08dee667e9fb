"""One contract suite, two stores: every test in tests/store runs against Redis and SQLite alike."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from storekit import EffectKit, StoreFactory

from tqadmin.store import open_store
from tqadmin.store.completion.base import Effect, Retention, StateStore
from tqadmin.store.keys import job_tag

REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture(params=["redis", "sqlite", pytest.param("redis-cluster", marks=pytest.mark.redis_cluster)])
def stores(request: pytest.FixtureRequest, unique: str, tmp_path: Path) -> Iterator[StoreFactory]:
    opened: list[StateStore] = []
    prefix = f"test{unique}"
    if request.param.startswith("redis"):
        server = (
            request.getfixturevalue("redis_cluster_url") if request.param == "redis-cluster" else REDIS_URL
        )
        url = f"{server}?prefix={prefix}"
        client: Any = (
            redis.RedisCluster.from_url(server)
            if request.param == "redis-cluster"
            else redis.Redis.from_url(server)
        )

        def redis_effect(job_id: str) -> Effect:
            return lambda tx: tx.incr(f"{prefix}:effects:{job_tag(job_id)}")

        def redis_count(job_id: str) -> int:
            return int(client.get(f"{prefix}:effects:{job_tag(job_id)}") or 0)

        kit = EffectKit(redis_effect, redis_count)
    else:
        url = f"sqlite:///{tmp_path / 'store.db'}?prefix={prefix}"
        db_path = tmp_path / "store.db"
        with contextlib.closing(sqlite3.connect(db_path)) as setup, setup:
            setup.execute("CREATE TABLE IF NOT EXISTS effects (job_id TEXT)")

        def sqlite_effect(job_id: str) -> Effect:
            return lambda tx: tx.execute("INSERT INTO effects VALUES (?)", (job_id,))

        def sqlite_count(job_id: str) -> int:
            with contextlib.closing(sqlite3.connect(db_path)) as reader:
                return int(
                    reader.execute("SELECT COUNT(*) FROM effects WHERE job_id = ?", (job_id,)).fetchone()[0]
                )

        kit = EffectKit(sqlite_effect, sqlite_count)

    def make(retention: Retention | None = None) -> StateStore:
        store = open_store(url, retention=retention)
        opened.append(store)
        return store

    yield StoreFactory(request.param, url, make, kit)
    cleanup: Any = opened[0] if opened else make()
    cleanup.delete_prefix()
    for store in opened:
        store.close()


@pytest.fixture
def store(stores: StoreFactory) -> StateStore:
    return stores.make()
