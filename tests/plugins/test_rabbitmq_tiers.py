"""RabbitMQ applies a retry delay through a ladder of TTL queues: every delay within 10 % or 100 ms."""

import random

import pytest
from tqadmin_rabbitmq.tiers import LADDER, MAX_DELAY_S, DelayTiers


@pytest.mark.parametrize("cap_s", [1.0, 60.0, 3600.0])
def test_every_delay_up_to_the_cap_is_applied_within_10_percent_or_100_ms(cap_s: float) -> None:
    tiers = DelayTiers.up_to(cap_s)
    rng = random.Random(5)
    samples = [rng.uniform(0, cap_s) for _ in range(5000)] + [0.0, 0.05, 0.1, 1.0, cap_s]
    for delay in samples:
        applied = tiers.tier_s_for(delay)
        assert abs(applied - delay) <= max(0.1 * delay, 0.1) + 1e-9, (delay, applied)


def test_tiers_are_few_ascending_whole_milliseconds_and_start_at_no_delay() -> None:
    tiers = DelayTiers.up_to(60.0)
    assert tiers.tiers_ms[0] == 0
    assert list(tiers.tiers_ms) == sorted(set(tiers.tiers_ms))
    assert len(tiers.tiers_ms) <= 30
    assert len(DelayTiers.up_to(3600.0).tiers_ms) <= 50


def test_a_one_second_retry_never_shares_a_tier_with_a_sixty_second_one() -> None:
    tiers = DelayTiers.up_to(60.0)
    assert tiers.tier_ms_for(1.0) < tiers.tier_ms_for(2.0) < tiers.tier_ms_for(60.0)
    assert tiers.tier_s_for(-3.0) == 0.0


def test_the_whole_ladder_reaches_the_longest_ttl_rabbitmq_takes_in_under_a_hundred_tiers() -> None:
    assert LADDER.tiers_ms[-1] <= 2**32 - 1
    assert LADDER.upper_s[-1] >= MAX_DELAY_S
    assert len(LADDER.tiers_ms) < 100
    assert LADDER.tiers_ms[: len(DelayTiers.up_to(60.0).tiers_ms)] == DelayTiers.up_to(60.0).tiers_ms
