"""A queue's window read back from its recorded history (tqadmin.telemetry.verdict_inputs.recorded): the
verdict at once where 10 s points cover the window without a gap, ``None`` (watch instead) otherwise."""

from __future__ import annotations

from dataclasses import replace

from tqadmin.telemetry.verdict import STALLED, Observation, VerdictPolicy, WorkerView, judge
from tqadmin.telemetry.verdict_inputs import recorded

NOW = 1_780_000_100.0
POLICY = VerdictPolicy(window_s=60)


def current(**changes: object) -> Observation:
    base = Observation("orders", NOW, ready=340, unacked=4, consumers=1, workers=(WorkerView("w1", 9),))
    return replace(base, **changes)  # type: ignore[arg-type]


def points(start: int, end: int, **figures: float) -> list[tuple[int, dict[str, float]]]:
    """10 s buckets from ``start`` to ``end`` seconds before NOW (each read at its bucket's end)."""
    return [
        (int(NOW) - s, {"ready": 340, "in_flight": 4, "ack_rate": 0.0, **figures})
        for s in range(start, end, -10)
    ]


def test_points_that_cover_the_window_give_it_whole_ending_with_the_reading_just_made() -> None:
    window = recorded(current(), points(80, 0), 10, 60, before=(WorkerView("w1", 9),))
    assert window is not None and window[-1] == current()
    assert window[0].at <= NOW - 60 < window[1].at
    assert all(o.workers == (WorkerView("w1", 9),) for o in window[:-1])
    assert judge(window, POLICY).verdict == STALLED


def test_a_count_that_rose_since_the_windows_start_is_progress() -> None:
    window = recorded(
        current(ack_rate=None), points(80, 0, ack_rate=None), 10, 60, before=(WorkerView("w1", 8),)
    )
    assert window is not None
    assert judge(window, POLICY).verdict == "ok"


def test_history_that_starts_inside_the_window_is_not_enough() -> None:
    assert recorded(current(), points(40, 0), 10, 60) is None


def test_a_gap_in_the_points_is_not_enough() -> None:
    gappy = [p for p in points(80, 0) if p[0] != int(NOW) - 40 and p[0] != int(NOW) - 30]
    assert recorded(current(), gappy, 10, 60) is None


def test_points_that_stopped_long_ago_are_not_enough() -> None:
    assert recorded(current(), points(200, 60), 10, 60) is None
