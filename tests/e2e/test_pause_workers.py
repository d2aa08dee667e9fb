"""Workers honour pauses on every broker (RabbitMQ, Redis, SQS on moto, SQLite), with real worker processes.

Two task types flow through two workers; one type is paused mid-run: none of its jobs starts later than one
heartbeat after the pause (plus the slack of a loaded machine), the other type keeps completing, and after the
resume every job has run exactly once, each on its first attempt (no attempt charged, no retry, nothing
dead-lettered). A whole queue paused and resumed the same way, and a worker started while a pause stands
takes nothing paused; retries falling due during a pause wait for the resume without burning an attempt; a
pause that runs out resumes the work without anyone.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from redis_pipeline import RedisPipeline, redis_pipeline_fixture  # noqa: F401 - the fixture
from sqs_pipeline import SqsPipeline, sqs_pipeline_fixture  # noqa: F401 - the fixture
from worker_harness import Pipeline, SQLitePipeline, pipeline_fixture, sqlite_pipeline_fixture  # noqa: F401

from tqadmin.cli import main

TASKS = str(Path(__file__).with_name("pause_tasks.py"))
HEARTBEAT_S = 1.0
SLACK_S = 2.0  # a loaded machine: a store read, a thread scheduled late
WORKER = ("--concurrency", "2", "--heartbeat", str(HEARTBEAT_S), "--pause-recheck", "1")
JOBS = 200
BROKERS = ["pipeline", "redis_pipeline", "sqs_pipeline", "sqlite_pipeline"]
MARKS = {
    "pipeline": pytest.mark.rabbitmq,
    "redis_pipeline": pytest.mark.redis,
    "sqs_pipeline": pytest.mark.sqs,
}


def broker_param(name: str) -> Any:
    return pytest.param(name, marks=[MARKS[name]] if name in MARKS else [], id=name.removesuffix("_pipeline"))


@pytest.fixture(params=[broker_param(name) for name in BROKERS])
def line(request: pytest.FixtureRequest) -> Any:
    if request.param == "pipeline":
        request.applymarker(pytest.mark.rabbitmq)
    pipeline: Pipeline = request.getfixturevalue(request.param)
    yield pipeline
    pipeline.stop_all()
    keys = list(pipeline.redis.scan_iter(f"{pipeline.key}:*"))
    if keys:
        pipeline.redis.delete(*keys)


def starts(p: Pipeline) -> list[tuple[str, str, int, float]]:
    """Every run's start: (short job id, task type, attempt, time)."""
    rows = []
    for entry in p.redis.lrange(f"{p.key}:starts", 0, -1):
        job_id, task_type, attempt, at = entry.split("|")
        rows.append((p.short(job_id), task_type, int(attempt), float(at)))
    return rows


def done(p: Pipeline) -> dict[str, int]:
    return {p.short(k): int(v) for k, v in p.redis.hgetall(f"{p.key}:done").items()}


def cli(p: Pipeline, *argv: str) -> None:
    broker = ["--broker", p.broker_url] if p.broker_url else []
    assert main([*broker, "--store", p.store_url, *argv, "--yes"]) == 0


def started(p: Pipeline, task_type: str) -> int:
    return sum(1 for _, t, _, _ in starts(p) if t == task_type)


def every_job_ran_once_uncharged(p: Pipeline, ids: list[str]) -> None:
    runs = starts(p)
    assert sorted(job for job, _, _, _ in runs) == sorted(ids)  # each started once, none lost
    assert {attempt for _, _, attempt, _ in runs} == {1}  # no attempt charged
    assert done(p) == dict.fromkeys(ids, 1)
    dead = p.depth(p.dlq) if isinstance(p, SQLitePipeline) else len(p.dead_letters())
    assert dead == 0  # nothing dead-lettered


def publish(p: Pipeline, jobs: int, work_s: float) -> list[str]:
    kinds = ("alpha", "beta")
    return p.publish([{"task_type": kinds[i % 2], "id": f"j-{i}", "work_s": work_s} for i in range(jobs)])


def test_a_paused_task_type_is_set_aside_and_runs_once_after_resume(line: Pipeline) -> None:
    p = line
    ids = publish(p, JOBS, 0.05)
    for _ in range(2):
        p.start_with_tasks(TASKS, *WORKER)
    p.wait_for(lambda: started(p, "alpha") >= 10, 120, "alpha jobs to start")
    cli(p, "pause", p.queue, "--task-type", "alpha", "--for", "10m", "--reason", "vendor down")
    paused_at = time.time()
    p.wait_for(lambda: started(p, "beta") == JOBS // 2, 180, "every beta job while alpha is paused")
    p.wait_for(lambda: len(done(p)) == started(p, "alpha") + JOBS // 2, 60, "the runs under way to finish")
    time.sleep(HEARTBEAT_S * 2)  # a look after the beta jobs: still no alpha start
    alpha_starts = [at for _, t, _, at in starts(p) if t == "alpha"]
    last_alpha = max(alpha_starts)
    assert last_alpha <= paused_at + HEARTBEAT_S + SLACK_S, (last_alpha - paused_at, p.log_text())
    assert len(alpha_starts) < JOBS // 2  # some alpha jobs were set aside
    print(f"paused after {len(alpha_starts)} alpha starts; last alpha start {last_alpha - paused_at:+.2f} s")

    cli(p, "resume", p.queue, "--task-type", "alpha")
    try:
        p.wait_for(lambda: len(done(p)) == JOBS, 180, "every job after the resume")
    except BaseException:
        missing = sorted(set(ids) - set(done(p)))
        print(f"not done: {len(missing)} {missing[:10]}; queued {p.pending()}; dead {len(p.dead_letters())}")
        raise
    time.sleep(HEARTBEAT_S)
    every_job_ran_once_uncharged(p, ids)


@pytest.mark.parametrize("broker", [broker_param("redis_pipeline"), broker_param("sqlite_pipeline")])
def test_a_paused_queue_takes_nothing_until_resumed(request: pytest.FixtureRequest, broker: str) -> None:
    p: Pipeline = request.getfixturevalue(broker)
    try:
        cli(p, "pause", p.queue, "--for", "forever", "--reason", "maintenance")
        ids = publish(p, 40, 0.0)
        p.start_with_tasks(TASKS, *WORKER)  # started while the pause stands
        time.sleep(HEARTBEAT_S * 4)
        assert starts(p) == []
        cli(p, "resume", p.queue)
        p.wait_for(lambda: len(done(p)) == len(ids), 120, "every job after the resume")
        every_job_ran_once_uncharged(p, ids)
    finally:
        _clean(p)


def _clean(p: Pipeline) -> None:
    p.stop_all()
    keys = list(p.redis.scan_iter(f"{p.key}:*"))
    if keys:
        p.redis.delete(*keys)


@pytest.mark.parametrize("broker", [broker_param("redis_pipeline"), broker_param("sqlite_pipeline")])
def test_retries_falling_due_during_a_pause_wait_for_the_resume(
    request: pytest.FixtureRequest, broker: str
) -> None:
    p: Pipeline = request.getfixturevalue(broker)
    try:
        ids = p.publish([{"task_type": "gamma", "id": f"g-{i}"} for i in range(10)])
        p.start_with_tasks(TASKS, *WORKER, "--backoff-base", "4", "--backoff-cap", "4")
        p.wait_for(lambda: started(p, "gamma") >= 10, 120, "every first run")
        cli(p, "pause", p.queue, "--task-type", "gamma", "--for", "forever")
        paused_at = time.time()
        time.sleep(6)  # every retry (at most 4 s) falls due while the pause stands
        late = [at - paused_at for _, _, _, at in starts(p) if at > paused_at + HEARTBEAT_S + SLACK_S]
        assert late == [], p.log_text()
        cli(p, "resume", p.queue, "--task-type", "gamma")
        p.wait_for(lambda: len(done(p)) == len(ids), 120, "every retry after the resume")
        time.sleep(HEARTBEAT_S)
        runs: dict[str, list[int]] = {}
        for job, _, attempt, _ in starts(p):
            runs.setdefault(job, []).append(attempt)
        assert {job: sorted(a) for job, a in runs.items()} == {job: [1, 2] for job in ids}  # nothing burnt
        assert done(p) == dict.fromkeys(ids, 1)
    finally:
        _clean(p)


@pytest.mark.parametrize("broker", [broker_param("redis_pipeline"), broker_param("sqlite_pipeline")])
def test_an_expiry_resumes_without_anyone_and_is_audited_once(
    request: pytest.FixtureRequest, broker: str, isolated_env: Path
) -> None:
    home = isolated_env
    p: Pipeline = request.getfixturevalue(broker)
    try:
        cli(p, "pause", p.queue, "--for", "4s")
        until = time.time() + 4
        ids = publish(p, 20, 0.0)
        for _ in range(2):
            p.start_with_tasks(TASKS, *WORKER)
        p.wait_for(lambda: len(done(p)) == len(ids), 120, "every job after the expiry")
        first = min(at for _, _, _, at in starts(p))
        assert first >= until - 1.0  # nothing before the pause ran out (the worker's clock may lead a little)
        every_job_ran_once_uncharged(p, ids)
        time.sleep(HEARTBEAT_S * 2)  # both workers have read the pause set since it ran out
        audit = [json.loads(line) for line in (home / "audit.jsonl").read_text().splitlines()]
        ends = [r for r in audit if r["action"] == "resume"]
        assert len(ends) == 1, ends  # the end said once, by one of the workers, with no command run
        (end,) = ends
        assert (end["outcome"], end["who"], end["reason"], end["via"]) == (
            "expired",
            "expiry",
            "resumed by expiry",
            "worker",
        )
        assert end["target"] == p.queue and end["task_type"] is None
        print(f"first start {first - until:+.2f} s after the pause ran out")
    finally:
        _clean(p)
