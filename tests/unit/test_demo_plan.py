"""The demo's queue layout and failure injection: pure decisions, no broker."""

from collections import Counter

import pytest

from tqadmin.demo.chaos import Chaos, Fate
from tqadmin.demo.layout import TASK_QUEUES, plan


def test_with_a_worker_per_task_type_each_type_gets_its_own_queue() -> None:
    layout = plan("demo", 4)
    assert layout.queue_of["resize_image"] == "demo.images"
    assert set(layout.worker_queues) == set(layout.queues) == {f"demo.{q}" for q in TASK_QUEUES.values()}


def test_extra_workers_are_spread_over_the_queues() -> None:
    layout = plan("demo", 6)
    assert Counter(layout.worker_queues).most_common(1)[0][1] == 2
    assert set(layout.worker_queues) == set(layout.queues)


def test_with_fewer_workers_than_task_types_every_type_shares_one_queue() -> None:
    layout = plan("p1", 2)
    assert layout.queues == ("p1.tasks",)
    assert layout.worker_queues == ("p1.tasks", "p1.tasks")
    assert layout.dead_letter_queues == ("p1.tasks.dlq",)


def test_a_demo_owns_its_prefixed_queues_only() -> None:
    layout = plan("demo", 4)
    assert layout.owns("demo.images.retry.1s")
    assert not layout.owns("demonstration.images")


def test_a_demo_needs_a_worker() -> None:
    with pytest.raises(ValueError, match="at least one worker"):
        plan("demo", 0)


def test_the_same_run_of_the_same_job_always_goes_the_same_way() -> None:
    chaos = Chaos(failure_rate=0.5, seed=3)
    first = [chaos.fate("send_email", f"job-{i}", 1) for i in range(50)]
    assert first == [Chaos(failure_rate=0.5, seed=3).fate("send_email", f"job-{i}", 1) for i in range(50)]
    assert first != [Chaos(failure_rate=0.5, seed=4).fate("send_email", f"job-{i}", 1) for i in range(50)]


def test_failures_follow_the_failure_rate_and_fatal_ones_only_strike_the_first_run() -> None:
    chaos = Chaos(failure_rate=0.2, seed=1)
    first = Counter(chaos.fate("charge_card", str(i), 1) for i in range(5000))
    later = Counter(chaos.fate("charge_card", str(i), 2) for i in range(5000))
    assert 0.8 * 0.2 < first[Fate.TRANSIENT] / 5000 < 1.2 * 0.2
    assert first[Fate.FATAL] > 0 and first[Fate.SLOW] > 0
    assert later[Fate.FATAL] == 0


def test_a_zero_failure_rate_never_fails() -> None:
    chaos = Chaos(failure_rate=0.0)
    assert {chaos.fate("resize_image", str(i), a) for i in range(200) for a in (1, 2)} == {Fate.OK}


def test_workers_read_the_knobs_the_orchestrator_passed_down() -> None:
    chaos = Chaos(failure_rate=0.25, seed=11, slow_s=1.5)
    assert Chaos.from_env(chaos.to_env()) == chaos
    assert Chaos.from_env({}) == Chaos()


def test_a_failure_rate_outside_zero_to_one_is_refused() -> None:
    with pytest.raises(ValueError, match="fraction"):
        Chaos(failure_rate=1.5)
