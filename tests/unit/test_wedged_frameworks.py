"""Other frameworks' workers judged wedged by what they expose: RQ's one job past its worker's mean run
time, every Sidekiq thread on a job whose run_at is past the limit, every Celery task started and not finished
past its p95; Dramatiq's registry says nothing, and that is said."""

from __future__ import annotations

from tqadmin.frameworks import rq_workers
from tqadmin.frameworks.wedged import judge_foreign
from tqadmin.plugin.workers import CurrentJob, ForeignWorker
from tqadmin.telemetry.counters import TaskStats
from tqadmin.telemetry.wedged import NOT_WEDGED, WedgePolicy

NOW = 1_780_000_000.0
POLICY = WedgePolicy()


def job(job_id: str, task: str | None, running_s: float | None) -> CurrentJob:
    return CurrentJob(job_id, task, "q", None if running_s is None else NOW - running_s)


def worker(framework: str, *jobs: CurrentJob, **fields: object) -> ForeignWorker:
    return ForeignWorker(framework, "w1", True, 1.0, current_jobs=jobs, **fields)  # type: ignore[arg-type]


def test_an_rq_worker_is_wedged_once_its_job_runs_past_ten_times_its_mean_run_time() -> None:
    busy = worker("rq", job("j1", "app.slow", 200.0), usual_run_s=10.0)
    verdict = judge_foreign(busy, POLICY, NOW)
    assert verdict.wedged is True
    assert verdict.reason == (
        "all 1 job slots stuck; the latest: app.slow job j1 running 3m20s"
        " (limit 1m40s = max(10 x mean 10s, 1m00s))"
    )
    assert (
        judge_foreign(worker("rq", job("j1", "app.slow", 90.0), usual_run_s=10.0), POLICY, NOW) == NOT_WEDGED
    )
    fresh = worker("rq", job("j1", "app.slow", 500.0))  # no job finished yet: 600 s
    assert judge_foreign(fresh, POLICY, NOW) == NOT_WEDGED
    assert judge_foreign(worker("rq"), POLICY, NOW) == NOT_WEDGED  # idle


def test_rq_s_mean_run_time_comes_from_its_worker_hash() -> None:
    fields = {
        "total_working_time": "30.5",
        "successful_job_count": "5",
        "failed_job_count": "1",
        "birth": NOW,
    }
    assert rq_workers.worker("rq:worker:w1", fields, 400.0, {}, NOW).usual_run_s == 30.5 / 6
    assert rq_workers.worker("rq:worker:w1", {"birth": NOW}, 400.0, {}, NOW).usual_run_s is None


def test_a_sidekiq_process_is_wedged_when_every_thread_is_on_a_job_older_than_the_limit() -> None:
    old = [job(f"j{i}", "HardJob", 700.0 + i) for i in range(2)]
    assert judge_foreign(worker("sidekiq", *old, concurrency=2), POLICY, NOW).wedged is True
    assert judge_foreign(worker("sidekiq", *old, concurrency=3), POLICY, NOW) == NOT_WEDGED  # a thread free
    unknown = judge_foreign(worker("sidekiq", *old), POLICY, NOW)
    assert unknown.wedged is None and "how many jobs it runs at once" in (unknown.reason or "")


def test_a_celery_worker_is_wedged_when_every_task_it_started_is_past_its_p95() -> None:
    quick = TaskStats(done=100)
    for _ in range(100):
        quick.run.record(0.5)
    stuck = worker("celery", job("u1", "app.add", 90.0))
    assert judge_foreign(stuck, POLICY, NOW, {"app.add": quick}).wedged is True
    moving = worker("celery", job("u1", "app.add", 90.0), job("u2", "app.add", 1.0))
    assert judge_foreign(moving, POLICY, NOW, {"app.add": quick}) == NOT_WEDGED


def test_what_exposes_nothing_is_said_never_guessed() -> None:
    dramatiq = judge_foreign(worker("dramatiq", job("m1", None, None)), POLICY, NOW)
    assert dramatiq.wedged is None and "Dramatiq" in (dramatiq.reason or "")
    no_start = judge_foreign(worker("sidekiq", job("j1", "X", None), concurrency=1), POLICY, NOW)
    assert no_start.wedged is None and "no start time" in (no_start.reason or "")
    unknown = ForeignWorker("celery", "c@h", None, None)
    assert judge_foreign(unknown, POLICY, NOW).wedged is None
    dead = ForeignWorker("rq", "w", False, 90.0, "heartbeat overdue")
    assert judge_foreign(dead, POLICY, NOW) == NOT_WEDGED
