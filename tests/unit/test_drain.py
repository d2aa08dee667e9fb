"""The drain estimate: depth slope over a window of readings, "growing" only when a rise holds throughout."""

from __future__ import annotations

import pytest

from tqadmin.plugin.models import QueueListing, QueueStats
from tqadmin.reading.drain import MAX_READINGS, DrainWindow


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def queue(name: str, depth: int, **figures: float | None) -> QueueStats:
    return QueueStats(name=name, messages=depth, ready=depth, unacked=0, consumers=1, **figures)  # type: ignore[arg-type]


def readings(window: DrainWindow, clock: Clock, depths: list[int], step_s: float = 5.0) -> QueueStats:
    last = None
    for depth in depths:
        (last,) = window.observe([queue("work", depth)])
        clock.now += step_s
    assert last is not None
    return last


def test_a_falling_depth_drains_at_its_slope() -> None:
    clock = Clock()
    window = DrainWindow(60, clock=clock)
    last = readings(window, clock, [100, 90, 80, 70])  # 10 every 5 s: 2 a second, 70 left
    assert last.growing is False
    assert last.drain_s == pytest.approx(35.0)


def test_a_depth_rising_throughout_the_window_is_growing_with_no_estimate() -> None:
    clock = Clock()
    window = DrainWindow(20, clock=clock)
    last = readings(window, clock, [10, 12, 12, 15, 20])
    assert last.growing is True and last.drain_s is None


def test_a_rise_seen_over_less_than_half_the_window_is_not_called_growing() -> None:
    clock = Clock()
    window = DrainWindow(60, clock=clock)
    last = readings(window, clock, [10, 20, 30], step_s=5.0)  # 10 s of a 60 s window
    assert last.growing is False and last.drain_s is None


def test_a_depth_that_rose_and_fell_is_neither_growing_nor_estimated_when_flat_overall() -> None:
    clock = Clock()
    window = DrainWindow(60, clock=clock)
    last = readings(window, clock, [10, 20, 10, 20, 10, 20])
    assert last.growing is False


def test_old_readings_leave_the_window() -> None:
    clock = Clock()
    window = DrainWindow(20, clock=clock)
    readings(window, clock, [500, 400, 300])  # fell fast, long ago
    clock.now += 100
    last = readings(window, clock, [300, 301, 302, 303, 304, 305])
    assert last.growing is True


def test_an_empty_queue_drains_in_no_time() -> None:
    clock = Clock()
    window = DrainWindow(60, clock=clock)
    (first,) = window.observe([queue("work", 0)])
    assert first.drain_s == 0 and first.growing is None
    clock.now += 5
    (second,) = window.observe([queue("work", 0)])
    assert second.drain_s == 0 and second.growing is False


def test_one_reading_estimates_from_the_rates_and_does_not_guess_growth() -> None:
    window = DrainWindow(60, clock=Clock())
    (ahead,) = window.observe([queue("work", 100, ack_rate=12.0, publish_rate=2.0)])
    assert ahead.drain_s == pytest.approx(10.0) and ahead.growing is None
    window = DrainWindow(60, clock=Clock())
    (behind,) = window.observe([queue("work", 100, ack_rate=1.0, publish_rate=2.0)])
    assert behind.drain_s is None and behind.growing is None
    window = DrainWindow(60, clock=Clock())
    (unknown,) = window.observe([queue("work", 100, ack_rate=None, publish_rate=2.0)])
    assert unknown.drain_s is None


def test_queues_are_kept_apart_and_a_vanished_queue_is_forgotten() -> None:
    clock = Clock()
    window = DrainWindow(60, clock=clock)
    window.observe([queue("a", 10), queue("b", 10)])
    clock.now += 5
    a, b = window.observe([queue("a", 5), queue("b", 20)])
    assert a.drain_s == pytest.approx(5.0) and b.drain_s is None
    clock.now += 5
    window.observe([queue("a", 4)])
    clock.now += 5
    (b_again,) = window.observe([queue("b", 1)])  # its earlier readings were dropped with it
    assert b_again.growing is None


def test_a_clock_that_did_not_move_replaces_the_reading_and_memory_is_bounded() -> None:
    clock = Clock()
    window = DrainWindow(10_000, clock=clock)
    for depth in range(3 * MAX_READINGS):
        window.observe([queue("work", 1000 - depth)])
        clock.now += 1
    window.observe([queue("work", 1)])
    (same,) = window.observe([queue("work", 1)])
    assert same.drain_s is not None
    assert len(window._depths["work"]) <= MAX_READINGS


def test_apply_keeps_the_listing_and_fills_the_figures() -> None:
    window = DrainWindow(60, clock=Clock())
    listing = QueueListing((queue("work", 0),), broker="memory")
    applied = window.apply(listing)
    assert applied.broker == "memory" and applied.queues[0].drain_s == 0
    assert applied.queues[0].to_json()["drain_s"] == 0


def test_a_window_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        DrainWindow(0)
