"""The real Redis for cron tests: a store in a namespace of the test's own, deleted afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import redis

from tqadmin.store.redis_lease import RedisCronStore

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
