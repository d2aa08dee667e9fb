"""What a user sees when `tqadmin worker` cannot start: one line on stderr and the right exit code."""

from worker_harness import Pipeline, pipeline_fixture  # noqa: F401 - fixture


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
