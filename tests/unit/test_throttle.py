"""Throttle: a warning every job thread would log at once is logged once per interval, with a count."""

from tqadmin.pipeline.throttle import Throttle


def test_the_first_is_allowed_then_none_until_the_interval_has_passed_and_the_held_back_are_counted() -> None:
    now = [100.0]
    throttle = Throttle(10.0, clock=lambda: now[0])
    assert throttle.allow() and throttle.suppressed == 0
    assert [throttle.allow() for _ in range(31)] == [False] * 31
    now[0] += 10.0
    assert throttle.allow() and throttle.suppressed == 31
    now[0] += 10.0
    assert throttle.allow() and throttle.suppressed == 0
