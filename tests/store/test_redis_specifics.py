"""What only the Redis store does: scripts loaded on demand, cluster-ready key names."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tqadmin.errors import ConfigError
from tqadmin.store import open_store
from tqadmin.store.keys import job_key, job_tag
from tqadmin.store.redis_scripts import CLAIM, Script
from tqadmin.store.redis_store import RedisStore

REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture
def redis_store(unique: str) -> Iterator[RedisStore]:
    store = open_store(f"{REDIS_URL}?prefix=test{unique}")
    assert isinstance(store, RedisStore)
    yield store
    store.delete_prefix()
    store.close()


@pytest.mark.parametrize("batch", [1, 3])
def test_a_script_redis_does_not_know_yet_is_loaded_and_every_call_runs_once(
    redis_store: RedisStore, batch: int
) -> None:
    fresh = Script(f"{CLAIM.source}\n-- {uuid.uuid4().hex}")  # certainly not in Redis's script cache
    calls = [((job_key(redis_store.prefix, f"job-{n}"),), ("worker-a", 30_000, 60)) for n in range(batch)]
    replies = redis_store._eval(fresh, calls)
    assert [reply[0] for reply in replies] == [b"claimed"] * batch
    assert [reply[2] for reply in replies] == [1] * batch  # a single run each: token 1, not 2


def test_every_key_of_a_job_shares_the_jobs_hash_tag() -> None:
    assert job_key("tq", "abc") == "tq:job:{abc}"
    assert job_tag("abc") == "{abc}"
    assert job_key("tq", "a{b}") == "tq:job:{ab}:a{b}"
    assert job_key("tq", "a{b}") != job_key("tq", "ab")


def test_a_prefix_with_braces_is_refused(isolated_env: object) -> None:
    with pytest.raises(ConfigError):
        open_store(f"{REDIS_URL}?prefix=bad{{x}}")
