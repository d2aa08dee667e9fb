"""What a user sees when `tqadmin worker` cannot start (one line on stderr, the right exit code), and a
worker started before its broker is up, which waits for it."""

import pytest
from worker_harness import Pipeline, pipeline_fixture  # noqa: F401 - fixture

from tests.support.amqp_proxy import AmqpProxy

pytestmark = [pytest.mark.rabbitmq, pytest.mark.redis]


def test_a_refused_login_is_one_line_without_the_drivers_log_or_a_traceback(pipeline: Pipeline) -> None:
    worker = pipeline.start(broker="amqp://guest:wrong-secret@127.0.0.1:5672/%2F", verbose=False)
    assert worker.wait(timeout=30) == 3
    lines = pipeline.log_text().strip().splitlines()
    assert len(lines) == 1, lines
    assert "refused the login" in lines[0] and "wrong-secret" not in lines[0]


def test_a_state_store_that_cannot_be_reached_is_exit_3_at_start_not_a_worker_that_never_claims(
    pipeline: Pipeline,
) -> None:
    worker = pipeline.start("--store", "redis://:store-secret@127.0.0.1:1/0", verbose=False)
    assert worker.wait(timeout=30) == 3
    lines = pipeline.log_text().strip().splitlines()
    assert len(lines) == 1, lines
    assert "cannot reach the state store" in lines[0] and "store-secret" not in lines[0]


def test_a_worker_started_before_its_broker_is_up_waits_for_it_then_runs_the_jobs(pipeline: Pipeline) -> None:
    """A compose file or a restarted node starts workers beside a broker that is still booting: each first
    connection is refused, and the worker waits (the reconnect backoff, START_WAIT_S at most) instead of
    exiting 3."""
    proxy = AmqpProxy()
    try:
        proxy.go_down()
        worker = pipeline.start(broker=proxy.url(), verbose=False)
        pipeline.wait_for(lambda: len(proxy.attempts) >= 3, 30, "the worker to try a few times")
        assert worker.poll() is None, pipeline.log_text()
        proxy.come_back()
        ids = pipeline.publish([{"task_type": "count", "id": f"j{i}"} for i in range(5)])
        pipeline.wait_for(lambda: len(pipeline.effects()) == len(ids), 60, "the jobs to run")
        assert "no broker yet" in pipeline.log_text()
    finally:
        pipeline.stop_all()
        proxy.close()
