"""`tqadmin worker` on the Redis broker: what holds on RabbitMQ holds here (docs/interface.md, "Jobs")."""

from __future__ import annotations

import itertools
import json
import os
import signal
import time

import pytest
from redis_pipeline import RedisPipeline, redis_pipeline_fixture  # noqa: F401 - the fixture

pytestmark = [pytest.mark.redis]


def test_every_job_runs_and_commits_its_effect_once(redis_pipeline: RedisPipeline) -> None:
    ids = redis_pipeline.publish([{"task_type": "count", "id": f"c-{i}"} for i in range(200)])
    redis_pipeline.start("--concurrency", "4", "--lease", "5")
    redis_pipeline.wait_for(lambda: len(redis_pipeline.effects()) == 200, 60, "every effect")
    redis_pipeline.wait_for(lambda: redis_pipeline.pending() == 0, 20, "the stream to empty")
    assert set(redis_pipeline.effects()) == set(ids)
    assert set(redis_pipeline.effects().values()) == {1}


def test_failed_runs_come_back_after_their_delay_and_dead_letters_keep_the_body(
    redis_pipeline: RedisPipeline,
) -> None:
    redis_pipeline.publish(
        [{"task_type": "flaky", "id": "f", "succeed_on": 3}, {"task_type": "fatal", "id": "x"}]
    )
    redis_pipeline.publish_raw([b"\x00\xffnot json"])
    redis_pipeline.start("--concurrency", "2", "--backoff-base", "0.2", "--backoff-cap", "0.5")
    redis_pipeline.wait_for(lambda: redis_pipeline.effects() == {"f": 1}, 60, "the flaky job's third run")
    redis_pipeline.wait_for(lambda: redis_pipeline.depth(f"{redis_pipeline.queue}.dlq") == 2, 30, "2 letters")
    times, delays = redis_pipeline.run_times("f"), redis_pipeline.retry_delays("f")
    assert len(times) == 3 and len(delays) == 2
    assert all(0 <= delay <= bound for delay, bound in zip(delays, (0.2, 0.4), strict=True))  # full jitter
    # each retry came back no sooner than the delay drawn for it: a lower bound, which load only widens
    for (before, after), delay in zip(itertools.pairwise(times), delays, strict=True):
        assert after - before >= delay - redis_pipeline.delay_tolerance_s(delay), (times, delays)
    letters = {body: letter.headers for letter, body in redis_pipeline.dead_letters()}
    assert letters[b"\x00\xffnot json"]["x-tq-reason"] == "malformed"
    fatal = next(h for body, h in letters.items() if b'"fatal"' in body)
    assert fatal["x-tq-reason"] == "fatal" and "hunter2" not in fatal["x-tq-error"]
    assert fatal["x-tq-original-queue"] == redis_pipeline.queue


def test_sigterm_finishes_the_running_job_and_gives_the_prefetched_one_back(
    redis_pipeline: RedisPipeline,
) -> None:
    redis_pipeline.publish(
        [
            {"task_type": "sleep", "id": "run", "seconds": 2},
            {"task_type": "sleep", "id": "next", "seconds": 0},
        ]
    )
    worker = redis_pipeline.start("--concurrency", "1", "--prefetch", "2")
    redis_pipeline.wait_for(lambda: redis_pipeline.runs() == {"run": 1}, 20, "the first job to start")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=20) == 0
    assert redis_pipeline.effects() == {"run": 1}
    assert redis_pipeline.depth() == 1  # "next" was prefetched, never started, and given back
    redis_pipeline.start("--concurrency", "1")
    redis_pipeline.wait_for(
        lambda: redis_pipeline.effects() == {"run": 1, "next": 1}, 20, "the given-back job"
    )


def test_a_job_that_kills_its_worker_is_quarantined_as_crash_loop(redis_pipeline: RedisPipeline) -> None:
    redis_pipeline.publish([{"task_type": "poison", "id": "p"}])
    redis_pipeline.start("--concurrency", "1", "--lease", "1", "--crash-limit", "2")
    redis_pipeline.wait_for(
        lambda: redis_pipeline.depth(f"{redis_pipeline.queue}.dlq") == 1, 60, "the quarantine"
    )
    ((letter, body),) = redis_pipeline.dead_letters()
    assert letter.headers["x-tq-reason"] == "crash_loop"
    assert json.loads(body)["id"].endswith("-p")


def test_without_the_store_the_delivery_count_quarantines_a_job_that_kills_its_worker(
    redis_pipeline: RedisPipeline,
) -> None:
    redis_pipeline.publish([{"task_type": "poison", "id": "p"}])
    redis_pipeline.start("--no-dedup", "--concurrency", "1", "--lease", "1", "--crash-limit", "2")
    redis_pipeline.wait_for(
        lambda: redis_pipeline.depth(f"{redis_pipeline.queue}.dlq") == 1, 60, "the quarantine"
    )
    ((letter, _),) = redis_pipeline.dead_letters()
    assert letter.headers["x-tq-reason"] == "crash_loop"
    assert redis_pipeline.runs() == {"p": 2}


def test_a_stopped_worker_loses_its_entries_to_a_live_one_and_cannot_settle_them(
    redis_pipeline: RedisPipeline,
) -> None:
    redis_pipeline.publish([{"task_type": "sleep", "id": "held", "seconds": 3}])
    frozen = redis_pipeline.start("--concurrency", "1", "--lease", "1")
    redis_pipeline.wait_for(lambda: redis_pipeline.runs() == {"held": 1}, 20, "the job to start")
    os.killpg(frozen.pid, signal.SIGSTOP)  # the supervisor and the child that runs the job
    try:
        redis_pipeline.start("--concurrency", "1", "--lease", "1")
        redis_pipeline.wait_for(lambda: redis_pipeline.effects() == {"held": 1}, 30, "the live worker's run")
        assert redis_pipeline.runs() == {"held": 2}  # the live worker's, beside the stopped one's
    finally:
        os.killpg(frozen.pid, signal.SIGCONT)
    thawed = redis_pipeline.logs / "worker-0.log"
    redis_pipeline.wait_for(  # the thawed run finishes: its commit is refused (and its ack)
        lambda: "effect not committed by this run" in thawed.read_text(), 60, "the thawed run's end"
    )
    assert redis_pipeline.effects() == {"held": 1}
    redis_pipeline.wait_for(lambda: redis_pipeline.pending() == 0, 20, "nothing left")


@pytest.mark.slow
def test_a_35_s_job_with_a_10_s_lease_runs_once(redis_pipeline: RedisPipeline) -> None:
    redis_pipeline.publish([{"task_type": "sleep", "id": "long", "seconds": 35}])
    redis_pipeline.start("--concurrency", "1", "--lease", "10")
    redis_pipeline.start("--concurrency", "1", "--lease", "10")  # a second worker, ready to steal
    redis_pipeline.wait_for(lambda: redis_pipeline.effects() == {"long": 1}, 80, "the long job")
    redis_pipeline.wait_for(lambda: redis_pipeline.pending() == 0, 60, "the ack")
    time.sleep(1)
    assert redis_pipeline.runs() == {"long": 1}
