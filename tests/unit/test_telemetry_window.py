"""Windowed figures from two cumulative readings per worker, merged across workers, with a fake clock."""

import pytest

from tqadmin.errors import BadResponse
from tqadmin.telemetry.counters import TaskStats, Telemetry, merge_stats
from tqadmin.telemetry.snapshot import Reading, WorkerHistory, WorkerSnapshot
from tqadmin.telemetry.window import window_stats


def _snapshot(worker: str, at: float, telemetry: Telemetry, started_at: float = 0.0) -> WorkerSnapshot:
    return WorkerSnapshot(worker, "host", 1, ("q",), started_at, at, (), telemetry.read())


def _run(telemetry: Telemetry, done: int, failed: int, task_type: str = "resize", run_s: float = 0.1) -> None:
    for _ in range(done):
        telemetry.started("q", task_type, 0.5)
        telemetry.finished("q", task_type, run_s, ok=True)
    for _ in range(failed):
        telemetry.started("q", task_type, 0.5)
        telemetry.finished("q", task_type, run_s, ok=False)
        telemetry.retried("q", task_type)


def test_throughput_failure_rate_and_percentiles_come_from_deltas_over_the_window() -> None:
    a, b = Telemetry(), Telemetry()
    _run(a, done=1000, failed=0)  # before the window: must not count
    a_before = _snapshot("a", 100.0, a)
    b_before = _snapshot("b", 100.0, b)
    _run(a, done=300, failed=100, run_s=2.0)
    _run(b, done=300, failed=100, run_s=2.0)
    now = 160.0
    histories = [
        WorkerHistory(Reading(now, _snapshot("a", now, a)), Reading(100.0, a_before)),
        WorkerHistory(Reading(now, _snapshot("b", now, b)), Reading(100.0, b_before)),
    ]
    stats = window_stats(now, 60.0, histories)
    assert stats.workers == 2
    assert stats.throughput == 600 / 60
    assert stats.failure_rate == 200 / 800
    resize = stats.task_types["resize"]
    assert (resize.done, resize.failed, resize.retried) == (600, 200, 200)
    assert resize.run.quantile(0.5) is not None
    assert abs(resize.run.quantile(0.5) - 2.0) <= 0.02 * 2.0  # type: ignore[operator]
    document = stats.to_json()
    assert document["window_s"] == 60.0
    assert document["task_types"]["resize"]["done"] == 600
    assert set(document["task_types"]["resize"]["wait"]) == {"p50", "p95", "p99"}


def test_a_worker_born_inside_the_window_counts_from_zero_over_its_own_life() -> None:
    telemetry = Telemetry()
    _run(telemetry, done=50, failed=0)
    latest = _snapshot("new", 200.0, telemetry, started_at=190.0)
    stats = window_stats(200.0, 30.0, [WorkerHistory(Reading(200.0, latest), None)])
    assert stats.total.done == 50
    assert stats.throughput == 50 / 10


def test_a_young_worker_beside_an_old_one_keeps_the_whole_window() -> None:
    old, young = Telemetry(), Telemetry()
    old_before = _snapshot("old", 170.0, old)
    _run(old, done=30, failed=0)
    _run(young, done=30, failed=0)
    histories = [
        WorkerHistory(Reading(200.0, _snapshot("old", 200.0, old)), Reading(170.0, old_before)),
        WorkerHistory(Reading(200.0, _snapshot("young", 200.0, young, started_at=195.0)), None),
    ]
    assert window_stats(200.0, 30.0, histories).throughput == 60 / 30


def test_an_older_baseline_widens_the_span_so_the_rate_stays_right() -> None:
    telemetry = Telemetry()
    before = _snapshot("w", 95.0, telemetry)
    _run(telemetry, done=130, failed=0)
    stats = window_stats(
        160.0, 60.0, [WorkerHistory(Reading(160.0, _snapshot("w", 160.0, telemetry)), Reading(95.0, before))]
    )
    assert stats.span_s == 65.0
    assert stats.throughput == 2.0


def test_an_idle_window_has_zero_rates_and_no_percentiles() -> None:
    stats = window_stats(10.0, 5.0, [])
    assert (stats.throughput, stats.failure_rate, stats.task_types) == (0.0, 0.0, {})


def test_snapshots_round_trip_through_compact_json() -> None:
    telemetry = Telemetry()
    _run(telemetry, done=3, failed=1)
    telemetry.deduplicated("q", "resize")
    telemetry.dead_lettered("q", "(malformed)", "malformed")
    snapshot = WorkerSnapshot("w-1", "box", 42, ("q", "r"), 1.5, 9.25, ("job-7",), telemetry.read())
    decoded = WorkerSnapshot.decode(snapshot.encode())
    assert decoded == snapshot
    assert decoded.current_job == "job-7"
    assert decoded.totals().counts() == {
        "done": 3,
        "failed": 1,
        "retried": 1,
        "dead_lettered": 1,
        "deduplicated": 1,
    }


def test_merging_worker_tables_adds_them_key_by_key() -> None:
    one = {("q", "a"): TaskStats(done=1), ("q", "b"): TaskStats(failed=2)}
    two = {("q", "a"): TaskStats(done=3)}
    merged = merge_stats([one, two])
    assert merged[("q", "a")].done == 4
    assert merged[("q", "b")].failed == 2
    assert merge_stats([two, one]) == merged


def test_an_unreadable_stored_snapshot_is_a_broker_answer_error_not_a_crash() -> None:
    for junk in (b"not json", b"[]", b'{"no": "id"}', b'{"id": "w", "tasks": [{"q": 1}]}'):
        with pytest.raises(BadResponse, match="heartbeat"):
            WorkerSnapshot.decode(junk)


def test_a_worker_id_reused_by_a_new_process_counts_from_zero_not_negative() -> None:
    old, new = Telemetry(), Telemetry()
    _run(old, done=500, failed=0)
    _run(new, done=20, failed=0)
    baseline = Reading(98.0, _snapshot("w", 98.0, old, started_at=0.0))  # the old process, last in history
    latest = Reading(160.0, _snapshot("w", 160.0, new, started_at=99.0))  # restarted just before the window
    assert window_stats(160.0, 60.0, [WorkerHistory(latest, baseline)]).total.done == 20
