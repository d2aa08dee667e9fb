"""The real Redis for cron tests: a store in a namespace of the test's own, deleted afterwards; or a store
on a server of the test's own that it may restart."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

from tests.support.redis_servers import PersistentRedis
from tqadmin.store.cron.redis import RedisCronStore
from tqadmin.store.factory import open_cron_store

REDIS_URL = "redis://127.0.0.1:6379/0"


def delete_namespace(namespace: str, *extra_keys: str) -> None:
    """Delete every key of a cron namespace (they share its hash tag), plus ``extra_keys``."""
    client = redis.Redis.from_url(REDIS_URL)
    keys = [*client.scan_iter(match="{tqcron:" + namespace + "}*", count=1000), *extra_keys]
    if keys:
        client.delete(*keys)
    client.close()


@contextmanager
def redis_cron_store(namespace: str) -> Iterator[RedisCronStore]:
    store = RedisCronStore.from_url(REDIS_URL, namespace)
    try:
        yield store
    finally:
        store.close()
        delete_namespace(namespace)


class RestartableCronStore:
    """A cron store whose server a test may shut down and start again, keeping what it had written: a Redis
    of the test's own with an append-only file (the same client reconnects, as a running cron's does), or
    an SQLite file (closed, and opened again as a restarted process would)."""

    def __init__(self, kind: str, directory: Path, namespace: str) -> None:
        self.kind = kind
        self._namespace = namespace
        self._redis: PersistentRedis | None = None
        if kind == "redis":
            self._redis = PersistentRedis()
            self.url = self._redis.url
        else:
            self.url = f"sqlite:///{directory / 'tqadmin.db'}"
        self.store = open_cron_store(self.url, namespace)

    def restart(self) -> None:
        if self._redis is not None:
            self._redis.server.restart()
            return
        self.store.close()
        self.store = open_cron_store(self.url, self._namespace)

    def close(self) -> None:
        self.store.close()
        if self._redis is not None:
            self._redis.close()
