"""A worker whose connection drops gives back the claims of the prefetch window's waiting jobs at once.

The jobs claimed with the window wait in the worker for a job thread; when the channel closes, the broker
requeues their deliveries and redelivers them. Left holding those claims (renewed while they wait), the worker
would make every redelivered copy ``HELD`` and send it to wait out the lease in a delay queue, however soon
the broker was back (16.7 s without a completed job after a ``stop_app`` / ``start_app``). The consumer says
when deliveries were lost with the connection (``Consumer.watch_lost``) and the worker releases their claims
before it claims again, so the copies are claimed at once, with a new fencing token.
"""

from __future__ import annotations

import pytest
from worker_harness import REDIS_URL, Pipeline, pipeline_fixture  # noqa: F401 - the fixture

from tests.support.amqp_proxy import AmqpProxy
from tests.support.rabbit_queues import queues_named

pytestmark = [pytest.mark.rabbitmq, pytest.mark.redis]

WAITING = [f"w{i}" for i in range(4)]


def test_a_lost_connection_releases_the_claims_of_the_window_so_the_redelivered_jobs_are_claimed_at_once(
    pipeline: Pipeline,
) -> None:
    proxy = AmqpProxy()
    try:
        pipeline.publish([{"task_type": "sleep", "id": "slow", "seconds": 8}])
        pipeline.publish([{"task_type": "count", "id": job_id} for job_id in WAITING])
        # one job thread: the slow job runs, the others wait in the window, claimed
        pipeline.start("--concurrency", "1", "--prefetch", "8", broker=proxy.url())
        claimed = dict.fromkeys(WAITING, ("claimed", 1))
        pipeline.wait_for(
            lambda: {j: pipeline.claim_record(j) for j in WAITING} == claimed, 30, "the window's claims"
        )
        assert pipeline.effects() == {}  # the slow job holds the only job thread

        proxy.drop_all()  # the channel closes: the broker requeues the window and redelivers it

        # given back by the worker that holds them (released, or already claimed again by their copies with
        # a new token) while the slow job still runs its only job thread: an order, not a time
        given_back = {("released", 1), ("claimed", 2)}
        pipeline.wait_for(
            lambda: {pipeline.claim_record(j) for j in WAITING} <= given_back, 30, "the releases"
        )
        assert "slow" not in pipeline.effects()
        pipeline.wait_for(lambda: set(pipeline.effects()) >= set(WAITING), 30, "the waiting jobs' effects")
        assert {j: pipeline.effects()[j] for j in WAITING} == dict.fromkeys(WAITING, 1)
        # none ran on its lost delivery, and each copy was claimed as it came: none waited in a delay queue
        assert {j: pipeline.runs()[j] for j in WAITING} == dict.fromkeys(WAITING, 1)
        assert {j: pipeline.claim_record(j) for j in WAITING} == dict.fromkeys(WAITING, ("done", 2))
        assert not [q for q in queues_named(pipeline.queue) if q not in (pipeline.queue, pipeline.dlq)]
    finally:
        pipeline.stop_all()
        proxy.close()
