"""Splay against the real Redis store: 200 schedules due in the same second fire spread over the window."""

import logging
from collections import Counter
from collections.abc import Iterator

import pytest

from tests.support.cron_fakes import START, FakeClock
from tests.support.cron_redis import redis_cron_store
from tqadmin.pipeline.cron.schedule import Schedule
from tqadmin.pipeline.cron.scheduler import Scheduler
from tqadmin.pipeline.job import Job
from tqadmin.store.cron.redis import RedisCronStore

pytestmark = pytest.mark.redis

SPLAY_S = 20


@pytest.fixture
def store(unique: str) -> Iterator[RedisCronStore]:
    with redis_cron_store(f"splay-{unique}") as store:
        yield store


def test_splay_spreads_200_schedules_of_the_same_second_and_each_fires_once(store: RedisCronStore) -> None:
    crowd = [
        Schedule(f"report-{i}", "0 * * * * *", "reports", "build", splay=SPLAY_S, misfire_grace=60)
        for i in range(200)
    ]
    clock = FakeClock(START - 1)  # a second before the minute every schedule shares
    fired_at: dict[str, float] = {}

    def publish(queue: str, job: Job) -> None:
        assert job.id not in fired_at
        fired_at[job.id] = clock.time()

    scheduler = Scheduler(
        crowd, store, publish, instance="solo", lock_ttl_s=600, clock=clock, logger=logging.getLogger("t")
    )
    while clock.time() < START + SPLAY_S + 1:
        clock.advance(min(scheduler.step(), 1.0))
    assert sorted(fired_at) == sorted(f"cron:report-{i}:{int(START)}" for i in range(200))
    per_second = Counter(int(t - START) for t in fired_at.values())
    assert set(per_second) <= set(range(SPLAY_S))
    assert len(per_second) == SPLAY_S, "every second of the splay window is used"
    assert max(per_second.values()) <= 25, f"a crowd fired in one second: {per_second.most_common(3)}"
