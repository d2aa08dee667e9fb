"""The Redis cron store against the real Redis: lease, fencing, tick records, registry."""

from collections.abc import Iterator

import pytest
import redis

from tests.support.cron_redis import REDIS_URL, redis_cron_store
from tqadmin.errors import Unreachable
from tqadmin.store.cron.redis import RedisCronStore
from tqadmin.store.factory import open_cron_store

pytestmark = pytest.mark.redis


@pytest.fixture
def store(unique: str) -> Iterator[RedisCronStore]:
    with redis_cron_store(f"t-{unique}") as store:
        yield store


def test_every_key_shares_one_hash_tag_and_tick_records_expire(store: RedisCronStore, unique: str) -> None:
    lease = store.acquire("a", 10)
    assert lease is not None
    store.claim_tick(lease, "s", 100, 60)
    store.mark_fired(lease, "s", 100, 60)
    store.mark_missed(lease, "s", 90, 1)
    store.register("a", [{"name": "s"}])
    client = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    keys = list(client.scan_iter(match=f"*t-{unique}*", count=1000))
    assert len(keys) >= 8
    assert all(k.startswith("{tqcron:t-" + unique + "}:") for k in keys)
    tick_key = store.key("cron:s:100")
    assert 0 < client.pttl(tick_key) <= 60_000


def test_an_unreachable_store_is_a_connection_error_with_the_password_masked() -> None:
    store = open_cron_store("redis://:hunter2@127.0.0.1:1/0", "x", timeout_s=1)
    with pytest.raises(Unreachable) as info:
        store.acquire("a", 10)
    assert "hunter2" not in str(info.value) and "state store" in str(info.value)


def test_a_store_url_with_a_prefix_opens_the_cron_store_and_keeps_its_keys_under_that_prefix(
    unique: str,
) -> None:
    """``?prefix=`` separates deployments sharing one Redis; the cron honours it too."""
    store = open_cron_store(f"{REDIS_URL}?prefix=p{unique}", namespace=f"n{unique}")
    client = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        lease = store.acquire("a", 10)
        assert lease is not None
        keys = list(client.scan_iter(match=f"*n{unique}*"))
        assert keys and all(k.startswith("{p" + unique + ":tqcron:n" + unique + "}") for k in keys), keys
    finally:
        store.close()
        stale = list(client.scan_iter(match=f"*n{unique}*"))
        if stale:
            client.delete(*stale)
        client.close()
