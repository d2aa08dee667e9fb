"""What only the Redis store does: scripts loaded on demand, cluster-ready key names."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tqadmin.connect.redis_client import Script
from tqadmin.errors import ConfigError
from tqadmin.store import open_store
from tqadmin.store.completion.redis import RedisStore
from tqadmin.store.completion.redis_scripts import CLAIM, COMPLETE
from tqadmin.store.keys import job_key, job_tag

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
    calls = [
        (fresh, (job_key(redis_store.prefix, f"job-{n}"),), ("worker-a", 30_000, 60)) for n in range(batch)
    ]
    replies = redis_store._eval(calls)
    assert [reply[0] for reply in replies] == [b"claimed"] * batch
    assert [reply[2] for reply in replies] == [1] * batch  # a single run each: token 1, not 2


def test_a_batch_mixing_two_unknown_scripts_loads_both_and_runs_every_call_once(
    redis_store: RedisStore,
) -> None:
    marker = uuid.uuid4().hex
    claim, complete = Script(f"{CLAIM.source}\n-- {marker}"), Script(f"{COMPLETE.source}\n-- {marker}")
    key = job_key(redis_store.prefix, "job-a")
    [claimed] = redis_store._eval([(claim, (key,), ("worker-a", 30_000, 60))])
    replies = redis_store._eval(
        [
            (complete, (key,), (claimed[2], 60)),
            (claim, (job_key(redis_store.prefix, "job-b"),), ("w", 30_000, 60)),
        ]
    )
    assert replies[0] == 1
    assert replies[1][0] == b"claimed"
    assert replies[1][2] == 1


def test_every_key_of_a_job_shares_the_jobs_hash_tag() -> None:
    assert job_key("tq", "abc") == "tq:job:{abc}"
    assert job_tag("abc") == "{abc}"
    assert job_key("tq", "a{b}") == "tq:job:{ab}:a{b}"
    assert job_key("tq", "a{b}") != job_key("tq", "ab")


def test_a_prefix_with_braces_is_refused(isolated_env: object) -> None:
    with pytest.raises(ConfigError):
        open_store(f"{REDIS_URL}?prefix=bad{{x}}")
