"""What the producer published is what the worker, the dead-letter queue and a replay see, byte for byte.

Bodies are written the way no JSON encoder of ours would: odd spacing and key order, floats with trailing
zeros and exponents, escaped unicode. They go through retries, timeouts, a crash-loop quarantine and a replay.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from worker_harness import Pipeline, pipeline_fixture  # noqa: F401 - the fixture

from tests.support.rabbit_queues import delete_queues, drain
from tqadmin.cli import main

pytestmark = [pytest.mark.rabbitmq, pytest.mark.redis]


def body(pipeline: Pipeline, job_id: str, task_type: str, extra: str = "") -> bytes:
    """A job written by hand: the spacing, order and number spellings are the point."""
    return (
        f'{{ "n" :1.50 , "e": 1E3,"key" : "{pipeline.key}", "u": "\\u00e9\\ud83d\\ude00",'
        f'  "id":"{pipeline.id_prefix}{job_id}" ,"task_type" : "{task_type}"{extra} }}'
    ).encode()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_retried_timed_out_quarantined_and_replayed_jobs_keep_the_producers_bytes(
    pipeline: Pipeline, unique: str
) -> None:
    """The run count travels in the x-tq-retry-count header; the body is never encoded again."""
    published = {
        "retried": body(pipeline, "retried", "attempts"),
        "timed-out": body(pipeline, "timed-out", "sleep", ', "seconds": 3'),
        "crashed": body(pipeline, "crashed", "poison"),
    }
    pipeline.declare(pipeline.queue)
    pipeline.publish_raw(list(published.values()))
    pipeline.start(
        "--concurrency", "2", "--job-timeout", "1", "--max-retries", "1", "--lease", "1",
        "--crash-limit", "2", "--backoff-base", "0.05", "--backoff-cap", "0.1",
    )  # fmt: skip
    # The poison job kills its worker at any moment, so a job dead-lettered just before the kill (its copy
    # confirmed, its original not yet acked) is dead-lettered again: at least once, never changed.
    letters: list[tuple[Any, bytes]] = []

    def every_reason() -> bool:
        letters.extend(drain(f"{pipeline.queue}.dlq"))
        return len({properties.headers["x-tq-reason"] for properties, _ in letters}) == 3

    pipeline.wait_for(every_reason, 90, "a dead letter for each of the three jobs")
    by_reason: dict[str, set[str]] = {}
    for properties, data in letters:
        by_reason.setdefault(properties.headers["x-tq-reason"], set()).add(sha(data))
    assert by_reason == {
        "max_retries": {sha(published["retried"])},
        "timeout": {sha(published["timed-out"])},
        "crash_loop": {sha(published["crashed"])},
    }
    # every run was told its attempt and a retry_count that counts the retries, not the body's 0
    runs = pipeline.redis.lrange(f"{pipeline.key}:attempts:{pipeline.id_prefix}retried", 0, -1)
    assert runs[0] == "1:0" and set(runs) == {"1:0", "2:1", "3:2"}

    # a replay sends the same bytes back (to a queue of its own here, to read them without a worker)
    pipeline.stop_all()
    dlq = f"{pipeline.queue}.dlq"
    for properties, data in letters:
        pipeline.publish_raw_to(dlq, data, properties.headers)
    target = f"tqe_{unique}_replayed"
    pipeline.declare(target)
    try:
        assert main(["replay", dlq, "--to", target, "--client-side"]) == 0
        replayed = drain(target)
    finally:
        delete_queues(target)
    assert {sha(data) for _, data in replayed} == {sha(b) for b in published.values()}
    assert all(properties.headers["x-tq-replays"] == 1 for properties, _ in replayed)
    assert all(json.loads(data)["n"] == 1.5 for _, data in replayed)  # still a job, just never re-encoded
