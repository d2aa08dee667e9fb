"""The backoff every reconnect and restart loop uses: capped, jittered, never a storm, never overflowing."""

import random

import pytest

from tqadmin.connect.backoff import RECONNECT_CAP_S, Backoff, reconnect_backoff


def test_waits_double_from_the_base_up_to_the_cap() -> None:
    backoff = Backoff(0.25, 4.0)
    assert [backoff.bound(n) for n in range(1, 8)] == [0.25, 0.5, 1.0, 2.0, 4.0, 4.0, 4.0]


def test_hours_of_straight_failures_neither_overflow_nor_exceed_the_cap() -> None:
    """``base * 2**attempt`` raised OverflowError after about a thousand failures in a row."""
    backoff = Backoff(0.1, 5.0, random.Random(1))
    assert backoff.bound(1_000_000) == 5.0
    assert 2.5 <= backoff.delay(10**9) <= 5.0


def test_each_wait_is_jittered_between_half_its_bound_and_its_bound() -> None:
    backoff = Backoff(0.25, 4.0, random.Random(7))
    for failures in (1, 3, 50):
        draws = [backoff.delay(failures) for _ in range(2000)]
        bound = backoff.bound(failures)
        assert bound / 2 <= min(draws) and max(draws) <= bound
        assert max(draws) - min(draws) > bound / 3, "not jittered"


def test_a_fleet_that_lost_the_broker_retries_a_handful_of_times_a_second_never_past_the_cap() -> None:
    """50 workers lose the broker at t=0 and retry for a minute: measure attempts per second over the
    outage's steady part and the longest gap any worker leaves (its time to see a broker come back)."""
    workers, outage_s = 50, 60.0
    attempts: list[float] = []
    longest_gap = 0.0
    for seed in range(workers):
        backoff = reconnect_backoff(random.Random(seed))
        now, failures = 0.0, 0
        while now < outage_s:
            failures += 1
            wait = backoff.delay(failures)
            longest_gap = max(longest_gap, wait)
            now += wait
            attempts.append(now)
    steady = [t for t in attempts if 10.0 <= t < outage_s]
    per_worker_per_s = len(steady) / (outage_s - 10.0) / workers
    assert longest_gap <= RECONNECT_CAP_S
    assert per_worker_per_s <= 2 / RECONNECT_CAP_S  # one attempt every cap/2 seconds at most
    busiest_second = max(sum(1 for t in steady if s <= t < s + 1) for s in range(10, int(outage_s)))
    assert busiest_second < 2 * len(steady) / (outage_s - 10.0), "attempts came in lock step"


@pytest.mark.parametrize(("base", "cap"), [(0, 1), (-1, 1), (2, 1)])
def test_a_backoff_that_could_not_wait_is_refused(base: float, cap: float) -> None:
    with pytest.raises(ValueError, match="backoff"):
        Backoff(base, cap)


def test_a_listener_waiting_for_its_source_looks_again_from_2_5_s_doubling_to_2_minutes() -> None:
    from tqadmin.connect.backoff import absent_backoff

    backoff = absent_backoff(random.Random(7))
    assert [backoff.bound(n) for n in (1, 2, 3, 6, 7, 1000)] == [2.5, 5.0, 10.0, 80.0, 120.0, 120.0]
    assert all(60.0 <= backoff.delay(n) <= 120.0 for n in range(7, 200))
