"""The retry policy is a pure function of (attempt, failure, budget, rng): jitter, budgets, crashes."""

import random
import statistics

import pytest

from tqadmin.pipeline.retry import DeadLetter, Failure, Retry, RetryPolicy


def test_the_delay_before_run_k_plus_1_is_drawn_within_full_jitter_bounds() -> None:
    policy = RetryPolicy(base_s=0.5, cap_s=8.0, max_retries=10)
    rng = random.Random(7)
    for attempt in range(1, 11):
        bound = min(8.0, 0.5 * 2 ** (attempt - 1))
        for _ in range(200):
            decision = policy.after_failure(attempt, Failure.TRANSIENT, rng)
            assert isinstance(decision, Retry)
            assert 0.0 <= decision.delay_s <= bound
            assert decision.next_attempt == attempt + 1


def test_jitter_is_uniform_over_the_whole_range() -> None:
    policy = RetryPolicy(base_s=1.0, cap_s=100.0, max_retries=10)
    rng = random.Random(42)
    delays = [policy.after_failure(4, Failure.TRANSIENT, rng).delay_s for _ in range(4000)]  # type: ignore[union-attr]
    assert statistics.mean(delays) == pytest.approx(4.0, rel=0.05)
    assert min(delays) < 0.1
    assert max(delays) > 7.9
    deciles = [
        sum(1 for d in delays if k <= d < k + 0.8) for k in (0.0, 0.8, 1.6, 2.4, 3.2, 4.0, 4.8, 5.6, 6.4, 7.2)
    ]
    assert all(300 < n < 500 for n in deciles)


def test_the_cap_bounds_late_delays_and_huge_attempts_do_not_overflow() -> None:
    policy = RetryPolicy(base_s=1.0, cap_s=30.0, max_retries=5000)
    assert policy.delay_bound(6) == 30.0
    assert policy.delay_bound(3000) == 30.0
    assert policy.delay_bound(1) == 1.0


def test_max_retries_n_means_n_plus_1_runs_then_dead_letter_max_retries() -> None:
    policy = RetryPolicy(max_retries=2)
    rng = random.Random(1)
    assert isinstance(policy.after_failure(1, Failure.TRANSIENT, rng), Retry)
    assert isinstance(policy.after_failure(2, Failure.TRANSIENT, rng), Retry)
    assert policy.after_failure(3, Failure.TRANSIENT, rng) == DeadLetter("max_retries")


def test_the_decorators_budget_wins_over_the_workers_default() -> None:
    policy = RetryPolicy(max_retries=5)
    rng = random.Random(1)
    assert policy.after_failure(1, Failure.TRANSIENT, rng, max_retries=0) == DeadLetter("max_retries")
    assert isinstance(
        RetryPolicy(max_retries=0).after_failure(1, Failure.TRANSIENT, rng, max_retries=3), Retry
    )


def test_fatal_errors_dead_letter_at_once_whatever_the_budget() -> None:
    assert RetryPolicy(max_retries=9).after_failure(1, Failure.FATAL, random.Random()) == DeadLetter("fatal")


def test_a_timed_out_run_is_retried_and_the_last_one_dead_letters_as_timeout() -> None:
    policy = RetryPolicy(max_retries=1)
    rng = random.Random(3)
    assert isinstance(policy.after_failure(1, Failure.TIMEOUT, rng), Retry)
    assert policy.after_failure(2, Failure.TIMEOUT, rng) == DeadLetter("timeout")


def test_a_job_that_killed_its_worker_crash_limit_times_is_quarantined() -> None:
    policy = RetryPolicy(crash_limit=3)
    assert policy.before_run(2) is None
    assert policy.before_run(3) == DeadLetter("crash_loop")


def test_nonsense_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(base_s=-1)
    with pytest.raises(ValueError):
        RetryPolicy(crash_limit=0)
    with pytest.raises(ValueError):
        RetryPolicy().after_failure(0, Failure.TRANSIENT, random.Random())
