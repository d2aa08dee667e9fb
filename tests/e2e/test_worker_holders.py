"""No copy of a job waits out a lease whose holder is known.

- After a connection loss (the broker restarting, a network cut) RabbitMQ redelivers what the closed channel
  held, the jobs being run too. A copy of a job this worker process is still running finds the claim ``HELD``
  by that process: it joins the run and is settled with its outcome (acked as a duplicate once the run is
  done; carrying the run's retry when it failed, since the original delivery went with the channel), instead
  of being sent to wait out the renewed lease in a delay queue (16.8 s after a ``stop_app`` / ``start_app``).
  A copy held by another worker's run looks again within a second, not once that lease has run out.
- A worker process that dies leaves claims: the supervisor gives them up at once from its claim register, the
  running job's charged its crash, the waiting ones released, instead of leaving them to their leases (30 s
  each time a job kills its process, before).

Leases are long here (120 s) and every wait is for a condition with a deadline well under the lease: the
mechanism is what is tested, not its speed (bench/recovery.py measures that).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import redis
from worker_harness import REDIS_URL, Pipeline, pipeline_fixture  # noqa: F401 - the fixture

from tests.support.amqp_proxy import AmqpProxy
from tests.support.rabbit_queues import queues_named
from tqadmin.store.factory import open_store
from tqadmin.store.keys import job_key

pytestmark = [pytest.mark.rabbitmq, pytest.mark.redis]

LEASE = ("--lease", "120")
WITHIN_S = 60.0  # half the lease: what waited out a lease could not have happened by then


def record(pipeline: Pipeline, job_id: str) -> tuple[str, int, int]:
    """A job's claim record in the store: its state, fencing token and crashes on record."""
    key = job_key(pipeline.store_prefix, pipeline.id_prefix + job_id)
    client = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    state, token, crashes = client.hmget(key, ["state", "token", "crashes"])
    return state or "", int(token or 0), int(crashes or 0)


def delay_queues(pipeline: Pipeline) -> list[str]:
    """The queues a retry or a wait for a lease would have gone through (the work queue's delay tiers)."""
    return [q for q in queues_named(pipeline.queue) if q not in (pipeline.queue, pipeline.dlq)]


def test_a_copy_of_a_job_still_running_here_after_the_connection_drops_is_acked_once_that_run_is_done(
    pipeline: Pipeline,
) -> None:
    proxy = AmqpProxy()
    try:
        pipeline.publish([{"task_type": "sleep", "id": "long", "seconds": 5}])
        # two job threads: one runs the long job, the other is free to claim the copy when it comes
        pipeline.start("--concurrency", "2", *LEASE, broker=proxy.url())
        pipeline.wait_for(lambda: pipeline.runs() == {"long": 1}, 30, "the long run to start")

        proxy.drop_all()  # the channel closes: the broker requeues the delivery and redelivers it

        pipeline.wait_for(lambda: pipeline.effects() == {"long": 1}, WITHIN_S, "the long run's effect")
        pipeline.wait_for(lambda: pipeline.pending() == 0, WITHIN_S, "the copy to be settled")
        assert pipeline.runs() == {"long": 1}
        assert record(pipeline, "long")[:2] == ("done", 1)  # the copy never took a claim of its own
        assert delay_queues(pipeline) == []  # nor was it sent to wait out the lease
        assert proxy.connections >= 2  # the copy came on a connection of its own
    finally:
        pipeline.stop_all()
        proxy.close()


def test_a_copy_of_a_job_whose_run_fails_after_the_connection_drops_carries_that_runs_retry(
    pipeline: Pipeline,
) -> None:
    """The failed run's retry cannot be published from its original delivery (gone with the channel): the
    copy that joined the run carries it, counting the run made, so the job runs once more, as attempt 2,
    rather than repeat attempt 1 once a lease has run out."""
    proxy = AmqpProxy()
    try:
        pipeline.publish([{"task_type": "flaky", "id": "fails", "succeed_on": 2, "seconds": 5}])
        pipeline.start("--concurrency", "2", "--backoff-base", "0.1", *LEASE, broker=proxy.url())
        pipeline.wait_for(lambda: len(pipeline.run_times("fails")) == 1, 30, "the first run to start")

        proxy.drop_all()

        pipeline.wait_for(lambda: pipeline.effects() == {"fails": 1}, WITHIN_S, "the retried run's effect")
        pipeline.wait_for(lambda: pipeline.pending() == 0, WITHIN_S, "every copy to be settled")
        assert len(pipeline.run_times("fails")) == 2  # attempt 1 (failed), attempt 2: no run repeated
        assert record(pipeline, "fails")[:2] == ("done", 2)  # the retry's claim is the second
        assert pipeline.depth(pipeline.dlq) == 0
    finally:
        pipeline.stop_all()
        proxy.close()


def test_a_copy_held_by_another_workers_run_is_acked_soon_after_that_run_is_done(pipeline: Pipeline) -> None:
    """The holder is elsewhere: the copy looks again after a second (or the rest of the lease, if sooner),
    not once the 120 s lease has run out, so it waits about as long as the other run."""
    pipeline.publish([{"task_type": "count", "id": "elsewhere"}])
    store = open_store(pipeline.store_url)
    try:
        held = store.claim(pipeline.id_prefix + "elsewhere", "another-worker", 120)
        pipeline.start()
        pipeline.wait_for(lambda: delay_queues(pipeline) != [], 30, "the copy to wait, found held")
        assert store.complete(held)  # the other worker's run is done
    finally:
        store.close()
    pipeline.wait_for(lambda: pipeline.pending() == 0, WITHIN_S, "the copy to be acked as a duplicate")
    assert pipeline.runs() == {}  # never run here


def test_the_claims_a_killed_worker_process_held_are_given_up_by_its_supervisor_at_once(
    pipeline: Pipeline,
) -> None:
    """The running job's claim ends as a crash (its next claim counts one), the window's claims are released
    (their jobs run innocent); neither waits out its 120 s lease."""
    waiting = [f"w{i}" for i in range(4)]
    pipeline.publish([{"task_type": "sleep", "id": "victim", "seconds": 5}])
    pipeline.publish([{"task_type": "count", "id": job_id} for job_id in waiting])
    worker = pipeline.start("--concurrency", "1", "--prefetch", "8", *LEASE)
    every = ["victim", *waiting]
    pipeline.wait_for(
        lambda: (
            [record(pipeline, j)[:2] for j in every] == [("running", 1), *[("claimed", 1)] * 4]
            and pipeline.runs() == {"victim": 1}
        ),
        30,
        "the victim's run beside the window's claims",
    )
    (child,) = map(int, Path(f"/proc/{worker.pid}/task/{worker.pid}/children").read_text().split())

    os.kill(child, signal.SIGKILL)  # the supervisor lives on and starts a new worker process

    def given_up(job_id: str) -> bool:
        state, token, _ = record(pipeline, job_id)
        return state == "released" or token > 1  # released, or claimed again since (by the new process)

    pipeline.wait_for(lambda: all(given_up(j) for j in every), WITHIN_S, "the dead process's claims")
    pipeline.wait_for(lambda: len(pipeline.effects()) == 5, WITHIN_S, "every job, run again")
    assert pipeline.effects() == dict.fromkeys(every, 1)
    assert pipeline.runs() == {"victim": 2, **dict.fromkeys(waiting, 1)}
    assert record(pipeline, "victim")[2] == 1  # its run died with the process: one crash on record
    assert [record(pipeline, j)[2] for j in waiting] == [0] * 4  # they only waited: no crash
    assert worker.poll() is None
