"""Each queue's verdict from successive observations over a window (tqadmin.telemetry.verdict): stalled only
when work waited throughout the window with someone serving it and a source proving nothing completed; the
reason says what was seen; unknown, with why, where no source can prove it; never a guess."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import pytest

from tqadmin.telemetry.verdict import (
    DEGRADED,
    IDLE,
    MAX_OBSERVATIONS,
    NO_CONSUMER,
    OK,
    PAUSED,
    STALLED,
    UNKNOWN,
    Observation,
    QueueVerdict,
    QueueWatch,
    VerdictPolicy,
    WorkerView,
)

T0 = 1_780_000_000.0  # an epoch time; readings every 10 s over a 60 s window
WINDOW = VerdictPolicy(window_s=60)


def obs(at: float, **figures: object) -> Observation:
    base = Observation("orders", T0 + at, ready=340, unacked=0, consumers=4, ack_rate=0.0)
    return replace(base, **figures)  # type: ignore[arg-type]


def watched(readings: Iterable[Observation], policy: VerdictPolicy = WINDOW) -> QueueVerdict:
    watch = QueueWatch(policy)
    verdict = None
    for reading in readings:
        verdict = watch.observe([reading])["orders"]
    assert verdict is not None
    return verdict


def every(step: float = 10, until: float = 60, **figures: object) -> list[Observation]:
    return [obs(t, **figures) for t in range(0, int(until) + 1, int(step))]


def test_work_waiting_throughout_with_consumers_and_no_ack_is_stalled_and_says_why() -> None:
    verdict = watched(every(until=130))
    assert verdict == QueueVerdict(STALLED, "ready 340 for 2m10s, 4 consumers, no ack in 2m10s")
    assert verdict.unhealthy


def test_the_reason_names_the_last_ack_seen() -> None:
    readings = [obs(0, ack_rate=2.0), *every(until=80)[1:]]
    verdict = watched([obs(-10, ack_rate=2.0), *readings])
    assert verdict.verdict == STALLED
    assert verdict.reason.endswith("no ack since 20:26:40"), verdict.reason  # T0, in UTC


def test_work_held_unacked_in_a_prefetch_without_running_is_stalled() -> None:
    verdict = watched(every(ready=0, unacked=10, consumers=1))
    assert verdict == QueueVerdict(STALLED, "10 held unacked for 1m00s, 1 consumer, no ack in 1m00s")


def test_nothing_is_stalled_before_the_window_has_been_watched() -> None:
    verdict = watched(every(until=50))
    assert verdict == QueueVerdict(UNKNOWN, "watched 50s of the 1m00s window")


def test_one_ack_in_the_window_is_progress() -> None:
    readings = every()
    readings[3] = replace(readings[3], ack_rate=0.1)
    assert watched(readings).verdict == OK


def test_a_queue_that_emptied_once_in_the_window_did_not_wait_throughout() -> None:
    readings = every()
    readings[2] = replace(readings[2], ready=0)
    assert watched(readings).verdict == OK


def test_an_empty_queue_is_idle_and_delayed_retries_do_not_count() -> None:
    assert watched(every(ready=0, delayed=12)) == QueueVerdict(
        IDLE, "nothing waiting; 12 delayed, not yet due"
    )
    assert watched([obs(0, ready=0, consumers=0)]) == QueueVerdict(IDLE, "nothing waiting")


def test_work_without_any_consumer_is_no_consumer_at_once() -> None:
    verdict = watched([obs(0, consumers=0)])
    assert verdict == QueueVerdict(NO_CONSUMER, "ready 340, no consumer and no live worker")
    assert not verdict.unhealthy


def test_work_held_unacked_while_the_broker_counts_no_consumer_has_a_holder_and_can_stall() -> None:
    """A client that took the messages with a get, or a consumer the broker's statistics lag behind."""
    verdict = watched(every(ready=0, unacked=2, consumers=0))
    assert verdict == QueueVerdict(
        STALLED, "2 held unacked for 1m00s, a client holding them, no ack in 1m00s"
    )


def test_a_paused_queue_is_paused_whatever_waits() -> None:
    verdict = watched(every(paused="paused 12m left: downstream down"))
    assert verdict == QueueVerdict(PAUSED, "paused 12m left: downstream down")


def worker(name: str = "w1", **fields: object) -> WorkerView:
    return replace(WorkerView(name), **fields)  # type: ignore[arg-type]


def test_without_an_ack_rate_the_workers_counts_prove_a_stall() -> None:
    """SQS: no ack rate, no consumer count; the tqadmin worker's completion count did not move."""
    readings = every(ack_rate=None, consumers=None, workers=(worker(completed=7),))
    verdict = watched(readings)
    assert verdict == QueueVerdict(STALLED, "ready 340 for 1m00s, 1 worker, no completion in 1m00s")


def test_a_workers_count_that_rose_is_progress() -> None:
    readings = every(ack_rate=None, consumers=None, workers=(worker(completed=7),))
    readings[4] = replace(readings[4], workers=(worker(completed=8),))
    readings[5:] = [replace(r, workers=(worker(completed=8),)) for r in readings[5:]]
    assert watched(readings).verdict == OK


def test_a_count_that_fell_is_a_restarted_worker_not_a_completion() -> None:
    readings = every(ack_rate=None, consumers=None, workers=(worker(completed=7),))
    readings[-1] = replace(readings[-1], workers=(worker(completed=0),))
    assert watched(readings).verdict == STALLED


def test_a_worker_whose_every_slot_held_the_same_job_since_before_the_window_proves_no_completion() -> None:
    """An RQ worker on one job: no counts, but its only slot has held that job since before the window."""
    rq = worker("rq:w1", slots=1, busy_since=(T0 - 5,))
    verdict = watched(every(ack_rate=None, consumers=None, workers=(rq,)))
    assert verdict.verdict == STALLED


def test_a_slot_that_took_a_job_in_the_window_may_have_completed_one() -> None:
    rq = worker("rq:w1", slots=1, busy_since=(T0 + 30,))
    verdict = watched(every(ack_rate=None, consumers=None, workers=(rq,)))
    assert verdict.verdict == UNKNOWN
    assert verdict.reason.endswith("the broker gives no ack rate and no completion count comes from rq:w1")


def test_a_recent_last_completion_is_progress() -> None:
    recent = worker(completed=None, last_completion_at=T0 + 45)
    assert watched(every(ack_rate=None, consumers=None, workers=(recent,))).verdict == OK


def test_consumers_that_report_nothing_leave_the_verdict_unknown_never_a_guess() -> None:
    readings = every(ack_rate=None, consumers=3, workers=(worker(completed=7),))
    verdict = watched(readings)
    assert verdict.verdict == UNKNOWN
    assert "the broker gives no ack rate and 2 of its consumers report nothing" in verdict.reason


def test_no_consumer_count_and_no_worker_known_is_unknown() -> None:
    verdict = watched([obs(0, consumers=None, ack_rate=None)])
    assert verdict.verdict == UNKNOWN
    assert verdict.reason == "ready 340; the broker counts no consumers and no worker tqadmin knows serves it"


def test_a_backlog_growing_throughout_the_window_is_degraded() -> None:
    readings = [obs(t, ready=100 + t, ack_rate=1.0, growing=t >= 30) for t in range(0, 61, 10)]
    verdict = watched(readings)
    assert verdict == QueueVerdict(DEGRADED, "backlog growing from 100 to 160 in 1m00s, 4 consumers")


def test_a_backlog_that_drains_slower_than_the_limit_is_degraded() -> None:
    verdict = watched(every(ack_rate=1.0, drain_s=7200.0))
    assert verdict == QueueVerdict(DEGRADED, "ready 340 drains in 2h00m (limit 1h00m), 4 consumers")


def test_completions_far_under_arrivals_with_a_rising_backlog_is_degraded() -> None:
    readings = [obs(t, ready=100 + t // 10, ack_rate=0.2, publish_rate=5.0) for t in range(0, 61, 10)]
    verdict = watched(readings)
    assert verdict == QueueVerdict(DEGRADED, "completing 0.2/s of 5/s arriving, ready 106, 4 consumers")


def test_a_burst_that_drains_is_ok() -> None:
    readings = [obs(t, ready=max(0, 300 - 5 * t), ack_rate=50.0, drain_s=20.0) for t in range(0, 61, 10)]
    assert watched(readings).verdict in (OK, IDLE)
    assert watched(readings[:4]).verdict == OK


def test_a_queue_no_longer_listed_is_forgotten_and_memory_stays_bounded() -> None:
    watch = QueueWatch(VerdictPolicy(window_s=10_000))
    for i in range(3 * MAX_OBSERVATIONS):
        watch.observe([obs(i)])
    assert len(watch._tracks["orders"].readings) == MAX_OBSERVATIONS
    watch.observe([replace(obs(10**6), name="other")])
    assert set(watch._tracks) == {"other"}


def test_a_clock_that_steps_back_keeps_the_newer_reading() -> None:
    readings = [*every(), obs(55, ack_rate=3.0)]
    assert watched(readings).verdict == OK


def test_a_window_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        VerdictPolicy(window_s=0)


def test_a_backlog_that_shrank_between_two_readings_is_progress_even_without_acks() -> None:
    """A consumer that takes messages without acking them (RabbitMQ's no-ack) leaves the ack rate at 0."""
    readings = every()
    readings[3:] = [replace(r, ready=300) for r in readings[3:]]
    assert watched(readings).verdict == OK


def test_a_stall_with_a_paused_task_type_is_paused_and_says_both() -> None:
    """The workers set the paused type's jobs aside: what waits may be all theirs."""
    verdict = watched(every(paused_types="task type charge paused 9m left: vendor 503"))
    assert verdict == QueueVerdict(
        PAUSED,
        "task type charge paused 9m left: vendor 503; ready 340 for 1m00s, 4 consumers, no ack in 1m00s",
    )
    moving = every(paused_types="task type charge paused 9m left: vendor 503")
    moving[2] = replace(moving[2], ack_rate=1.0)
    assert watched(moving).verdict == OK, "the other types complete: not paused"


def test_work_set_aside_for_a_paused_task_type_is_paused_not_idle() -> None:
    types = "task type charge paused 9m left: vendor 503"
    verdict = watched(every(ready=0, delayed=3, paused_types=types))
    assert verdict == QueueVerdict(PAUSED, f"{types}; nothing ready; 3 delayed, not yet due")
    assert watched(every(ready=0, delayed=0, paused_types=types)).verdict == IDLE


def test_without_a_consumer_count_a_window_in_which_nobody_received_anything_is_no_consumer() -> None:
    """SQS counts no consumers: ready work that nobody took (nothing in flight, nothing left) for a window."""
    untouched = every(consumers=None, ack_rate=None)
    assert watched(untouched) == QueueVerdict(
        NO_CONSUMER, "ready 340 for 1m00s, nothing received, no worker known"
    )
    taken = every(consumers=None, ack_rate=None)
    taken[3] = replace(taken[3], unacked=1)
    assert watched(taken).verdict == UNKNOWN, "someone received one: a consumer tqadmin does not know"


SIDEKIQ_TOTAL = "Sidekiq's stat:processed + stat:failed"
SHARED = "it counts every Sidekiq process on this Redis, and they also serve sidekiq:b"


def total(completed: int, shared: str | None = None) -> WorkerView:
    """A Sidekiq process's view: its framework's global total as its completions, flushed every 10 s."""
    return worker("sidekiq:p1", completed=completed, counted_by=SIDEKIQ_TOTAL, shared=shared, flush_s=10.0)


def sidekiq_window(shared: str | None = None, rises: bool = False, **figures: object) -> list[Observation]:
    """A minute of a Sidekiq queue, its total at 41, or rising to 42 half-way (with ``figures`` from then)."""
    readings = every(ack_rate=None, consumers=None, workers=(total(41, shared),))
    if rises:
        later = [replace(r, workers=(total(42, shared),), **figures) for r in readings[3:]]  # type: ignore[arg-type]
        readings[3:] = later
    return readings


def test_a_global_total_that_did_not_move_proves_a_stall_and_the_reason_says_by_what() -> None:
    """Sidekiq: no consumer count, no ack rate; the total of every process's jobs stood through the window."""
    assert watched(sidekiq_window()) == QueueVerdict(
        STALLED,
        f"ready 340 for 1m00s, 1 worker, no completion in 1m00s ({SIDEKIQ_TOTAL} did not move)",
    )
    assert watched(sidekiq_window(SHARED)).verdict == STALLED  # whatever else it counts: nothing ended


def test_a_total_that_rose_is_progress_where_every_worker_it_counts_serves_this_queue_alone() -> None:
    assert watched(sidekiq_window(rises=True)) == QueueVerdict(
        OK, f"ready 340, completing ({SIDEKIQ_TOTAL} rose, every worker it counts serving this queue alone)"
    )


def test_a_total_that_rose_but_also_counts_other_queues_proves_nothing_here_never_a_guess() -> None:
    verdict = watched(sidekiq_window(SHARED, rises=True))
    assert verdict == QueueVerdict(
        UNKNOWN, f"ready 340 for 1m00s, 1 worker; {SIDEKIQ_TOTAL} rose, but {SHARED}"
    )
    assert watched(sidekiq_window(SHARED, rises=True, ready=339)).verdict == OK  # work left the queue


def test_a_total_flushed_less_often_than_the_window_proves_nothing_in_it() -> None:
    short = VerdictPolicy(window_s=6)
    verdict = watched(every(step=2, until=8, ack_rate=None, consumers=None, workers=(total(41),)), short)
    assert verdict.verdict == UNKNOWN
    assert verdict.reason.endswith(
        f"{SIDEKIQ_TOTAL} moves only every 10s, longer than the window: it proves nothing in it"
    )


def test_a_process_whose_every_thread_held_its_job_since_before_the_window_needs_no_total() -> None:
    """Sidekiq's ``run_at`` per thread: every thread busy since before the window completed nothing."""
    stuck = worker("sidekiq:p1", slots=2, busy_since=(T0 - 30, T0 - 5))
    assert watched(every(ack_rate=None, consumers=None, workers=(stuck,))).verdict == STALLED
