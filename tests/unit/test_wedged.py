"""The wedged verdict: a live worker whose job threads are all stuck past their task types' usual run times,
or whose intake loop stopped turning, is wedged with a reason; anything short of that is not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tqadmin.config import Overrides, resolve
from tqadmin.errors import BadResponse, ConfigError
from tqadmin.telemetry.counters import TaskStats
from tqadmin.telemetry.progress import BusyThread, Progress, progress_json
from tqadmin.telemetry.snapshot import WorkerSnapshot
from tqadmin.telemetry.wedged import NOT_WEDGED, WedgePolicy, judge, judge_all, usual_run_times

NOW = 1_000_000.0
POLICY = WedgePolicy()


def snapshot(progress: Progress | None, *, runs: dict[str, list[float]] | None = None) -> WorkerSnapshot:
    stats = {}
    for task_type, times in (runs or {}).items():
        entry = TaskStats(done=len(times))
        for t in times:
            entry.run.record(t)
        stats[("q", task_type)] = entry
    return WorkerSnapshot("h:1", "h", 1, ("q",), NOW - 3600, NOW, stats=stats, progress=progress)


def busy(*runs: tuple[str, float]) -> tuple[BusyThread, ...]:
    return tuple(BusyThread(f"job-{i}", task, NOW - running_s) for i, (task, running_s) in enumerate(runs))


def test_the_limit_is_factor_times_p95_never_under_the_floor_and_fixed_without_history() -> None:
    assert POLICY.run_limit_s(0.5) == 60.0  # 10 x 0.5 s is under the 60 s floor
    assert POLICY.run_limit_s(30.0) == 300.0
    assert POLICY.run_limit_s(None) == 600.0


def test_all_threads_past_their_limit_is_wedged_and_says_which_job_and_since_when() -> None:
    progress = Progress(2, busy(("resize", 120.0), ("resize", 900.0)), NOW - 1, NOW - 1000)
    verdict = judge(snapshot(progress), 0.0, {"resize": 0.5}, POLICY)
    assert verdict.wedged is True
    assert verdict.reason is not None
    assert verdict.reason == (  # the latest start: it proves the rest
        "all 2 job threads stuck; the latest: resize job job-0 running 2m00s"
        " (limit 1m00s = max(10 x p95 0.5s, 1m00s)); last run ended 16m40s ago"
    )
    assert verdict.short == "2/2 threads stuck 2m00s+, limit 1m00s"  # the dashboard's cell


def test_a_thread_free_or_one_run_within_its_limit_is_not_wedged() -> None:
    one_free = Progress(3, busy(("resize", 900.0), ("resize", 900.0)), NOW)
    assert judge(snapshot(one_free), 0.0, {"resize": 0.5}, POLICY) == NOT_WEDGED
    one_recent = Progress(2, busy(("resize", 900.0), ("resize", 10.0)), NOW)
    assert judge(snapshot(one_recent), 0.0, {"resize": 0.5}, POLICY) == NOT_WEDGED


def test_a_slow_task_type_is_judged_by_its_own_usual_time() -> None:
    progress = Progress(1, busy(("report", 1200.0)), NOW)
    assert judge(snapshot(progress), 0.0, {"report": 200.0}, POLICY) == NOT_WEDGED  # limit 2000 s
    assert judge(snapshot(progress), 0.0, {}, POLICY).wedged is True  # no history: limit 600 s


def test_an_intake_loop_not_turned_is_wedged_and_the_heartbeat_age_counts() -> None:
    progress = Progress(4, (), NOW - 30.0)
    assert judge(snapshot(progress), 0.0, {}, POLICY) == NOT_WEDGED
    verdict = judge(snapshot(progress), 45.0, {}, POLICY)  # the last heartbeat is 45 s old: 75 s in all
    assert verdict.wedged is True
    assert verdict.reason == "intake loop not turned for 1m15s (limit 1m00s); no run ended yet"


def test_a_worker_that_reports_no_progress_or_no_turns_is_not_guessed() -> None:
    unknown = judge(snapshot(None), 0.0, {}, POLICY)
    assert unknown.wedged is None and unknown.reason
    assert judge(snapshot(Progress(1, (), None)), 10_000.0, {}, POLICY) == NOT_WEDGED


def test_usual_times_come_from_every_workers_telemetry_and_a_dead_worker_is_not_wedged() -> None:
    fast = snapshot(None, runs={"resize": [0.1] * 50})
    stuck = snapshot(Progress(1, busy(("resize", 120.0)), NOW))
    assert usual_run_times([fast.stats]) == {"resize": pytest.approx(0.1, rel=0.02)}
    alive = judge_all([(fast, 0.0, True), (stuck, 0.0, True)], POLICY)
    assert [v.wedged for v in alive] == [None, True]  # 120 s > 60 s: the fast worker's history counts
    assert judge_all([(stuck, 0.0, False)], POLICY) == [NOT_WEDGED]


def test_progress_travels_in_the_heartbeat_and_reads_as_ages() -> None:
    progress = Progress(2, busy(("resize", 5.0)), NOW - 1.5, NOW - 7.0)
    again = WorkerSnapshot.decode(snapshot(progress).encode())
    assert again.progress == progress
    assert WorkerSnapshot.decode(snapshot(None).encode()).progress is None
    assert progress_json(progress, NOW + 2.0) == {
        "threads": 2,
        "busy": [{"id": "job-0", "task": "resize", "running_s": 7.0}],
        "intake_turn_age_s": 3.5,
        "last_completion_age_s": 9.0,
    }


def test_the_profile_sets_the_policy_and_refuses_what_is_not_a_positive_number(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[profiles.p]\nwedged_factor = 4\nwedged_intake_s = 30\n")
    settings = resolve(Overrides(profile="p", config_path=str(config)), environ={})
    assert settings.wedged == WedgePolicy(factor=4.0, intake_s=30.0)
    config.write_text("[profiles.p]\nwedged_min_s = 0\n")
    with pytest.raises(ConfigError, match="wedged_min_s must be a positive number"):
        resolve(Overrides(profile="p", config_path=str(config)), environ={})


def test_a_heartbeat_whose_progress_holds_no_time_is_unreadable_not_a_crash() -> None:
    document = snapshot(Progress(1, busy(("resize", 1.0)), NOW)).to_json()
    document["progress"]["busy"][0]["since"] = float("nan")
    with pytest.raises(BadResponse, match="unreadable"):
        WorkerSnapshot.decode(json.dumps(document))
