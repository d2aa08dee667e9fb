"""The breaker on real brokers (RabbitMQ, Redis, SQLite) with real worker processes: a task type whose
downstream service is down fails N runs in a row in a worker, which pauses that type for its time through the
pause set; its jobs stop starting (on every worker) while the queue's other type keeps running; once the pause
runs out every job runs, each set-aside job uncharged: a job runs once more than it failed, nothing is
dead-lettered, nothing lost. One audit record of the trip, its author the breaker.
"""

from __future__ import annotations

import json
import time
from contextlib import closing
from pathlib import Path

import pytest
from redis_pipeline import redis_pipeline_fixture  # noqa: F401 - the fixture
from test_pause_workers import HEARTBEAT_S, SLACK_S, TASKS, WORKER, broker_param, done, starts
from worker_harness import Pipeline, SQLitePipeline, pipeline_fixture, sqlite_pipeline_fixture  # noqa: F401

from tqadmin.store.factory import open_pauses
from tqadmin.store.pauses.base import Pause

BREAK_FOR_S = 6.0
BREAKER = ("--break-after", "3", "--break-for", f"{BREAK_FOR_S:g}s", "--backoff-base", "0.5")


def _standing_breaker_pause(p: Pipeline) -> Pause | None:
    with closing(open_pauses(p.store_url)) as pauses:
        return next((x for x in pauses.standing()[1] if x.target.task_type == "delta"), None)


def _fails(p: Pipeline) -> list[tuple[str, float]]:
    rows = [entry.split("|") for entry in p.redis.lrange(f"{p.key}:fails", 0, -1)]
    return [(p.short(job), float(at)) for job, at in rows]


@pytest.mark.parametrize(
    "broker",
    [broker_param("pipeline"), broker_param("redis_pipeline"), broker_param("sqlite_pipeline")],
)
def test_the_breaker_pauses_a_failing_task_type_until_its_time_is_up(
    request: pytest.FixtureRequest, broker: str, isolated_env: Path
) -> None:
    p: Pipeline = request.getfixturevalue(broker)
    try:
        _run(p, isolated_env)
    finally:
        p.stop_all()
        keys = list(p.redis.scan_iter(f"{p.key}:*"))
        if keys:
            p.redis.delete(*keys)


def _run(p: Pipeline, home: Path) -> None:
    p.redis.set(f"{p.key}:broken", 1)  # the payments service is down
    jobs = [{"task_type": ("delta", "beta")[i % 2], "id": f"j-{i}", "work_s": 0.3} for i in range(60)]
    ids = p.publish(jobs)
    for _ in range(2):
        p.start_with_tasks(TASKS, *WORKER, *BREAKER)
    seen: dict[str, Pause] = {}

    def tripped() -> bool:
        pause = _standing_breaker_pause(p)
        if pause is not None:
            seen["pause"] = pause
        return pause is not None

    p.wait_for(tripped, 120, "the breaker to trip")
    pause = seen["pause"]
    assert pause.until is not None
    p.redis.delete(f"{p.key}:broken")  # the service is back; the pause stands until its time is up
    p.wait_for(lambda: len(done(p)) == len(ids), 180, "every job after the pause ran out")
    time.sleep(HEARTBEAT_S)

    runs = starts(p)
    fails = _fails(p)
    tripped_by = max(at for _, at in fails if at <= pause.since)
    delta_starts = sorted(at for _, t, _, at in runs if t == "delta")
    during = [at for at in delta_starts if pause.since + HEARTBEAT_S + SLACK_S < at < pause.until - 1.0]
    assert during == [], p.log_text()  # no delta job started while it was paused
    after = [at for at in delta_starts if at >= pause.until - 1.0]
    assert after, p.log_text()  # the set-aside jobs ran after the pause ran out
    beta_during = [at for _, t, _, at in runs if t == "beta" and pause.since < at < pause.until]
    assert beta_during  # the queue's other type kept running
    print(
        f"trip {pause.since - tripped_by:+.3f} s after the failure that made it; "
        f"first delta start {after[0] - pause.until:+.2f} s after the pause ran out; "
        f"{len(beta_during)} beta starts while paused"
    )

    assert done(p) == dict.fromkeys(ids, 1)  # every job done once, nothing lost
    failures: dict[str, int] = {}
    for job, _ in fails:
        failures[job] = failures.get(job, 0) + 1
    attempts: dict[str, list[int]] = {}
    for job, _, attempt, _ in runs:
        attempts.setdefault(job, []).append(attempt)
    # a job ran once more than it failed, its attempts 1, 2, ...: none charged for being set aside
    assert {j: sorted(a) for j, a in attempts.items()} == {
        j: list(range(1, failures.get(j, 0) + 2)) for j in ids
    }
    dead = p.depth(p.dlq) if isinstance(p, SQLitePipeline) else len(p.dead_letters())
    assert dead == 0

    records = [json.loads(line) for line in (home / "audit.jsonl").read_text().splitlines()]
    trips = [r for r in records if r.get("via") == "breaker"]
    assert len(trips) == 1, trips
    (trip,) = trips
    assert trip["action"] == "pause" and trip["task_type"] == "delta" and trip["target"] == p.queue
    assert trip["who"].startswith("breaker@") and trip["who"] == pause.who
    assert trip["reason"].startswith("breaker: 3 failures in a row; last: ConnectionError")
    assert "s3cret" not in trip["reason"]
    logs = "".join(path.read_text(errors="replace") for path in p.logs.glob("worker-*.log"))
    assert logs.count("breaker: task type delta failed 3 times in a row; paused for 6s") == 1
