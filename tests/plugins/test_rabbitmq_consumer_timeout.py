"""A worker whose runs may outlast RabbitMQ's consumer timeout is told so at start, naming both values."""

from tqadmin_rabbitmq.timeouts import DEFAULT_CONSUMER_TIMEOUT_S, consumer_timeout_s, job_timeout_warning


def test_the_queue_argument_wins_over_the_policy_and_the_default_fills_in() -> None:
    both = {
        "arguments": {"x-consumer-timeout": 60_000},
        "effective_policy_definition": {"consumer-timeout": 5},
    }
    assert consumer_timeout_s(both)[0] == 60.0
    assert consumer_timeout_s({"effective_policy_definition": {"consumer-timeout": 90_000}})[0] == 90.0
    assert consumer_timeout_s({}) == (DEFAULT_CONSUMER_TIMEOUT_S, consumer_timeout_s({})[1])
    assert consumer_timeout_s({"arguments": {"x-consumer-timeout": 0}})[0] is None  # 0: no timeout


def test_a_job_timeout_over_the_consumer_timeout_is_warned_about_with_both_values() -> None:
    warning = job_timeout_warning("q", 3600.0, {})
    assert warning is not None and "--job-timeout 3600 s" in warning and "1800 s" in warning
    assert "no --job-timeout" in (job_timeout_warning("q", None, {}) or "")
    assert job_timeout_warning("q", 300.0, {}) is None
    assert job_timeout_warning("q", None, {"arguments": {"x-consumer-timeout": 0}}) is None
