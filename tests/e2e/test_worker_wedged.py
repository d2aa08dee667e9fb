"""Wedged workers, with real worker processes on the embedded broker: a worker whose job threads all block is
named wedged in ``tqadmin workers --json`` once their runs pass the limit, with why; so is one whose intake
loop stops turning while its heartbeat stays fresh; each is no longer wedged once it moves again. Each test
prints how long detection took (the limit plus a heartbeat at most, plus the poll)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from redis_pipeline import redis_pipeline_fixture  # noqa: F401 - the fixture
from worker_harness import (  # noqa: F401 - the fixtures
    Pipeline,
    SQLitePipeline,
    pipeline_fixture,
    sqlite_pipeline_fixture,
)

TASKS = str(Path(__file__).with_name("wedge_tasks.py"))
LIMIT_S = 3.0  # the profile's limits below: short, so the tests take seconds
HEARTBEAT = ("--heartbeat", "0.5")
Tq = Callable[..., tuple[int, Any, str]]
BROKERS = [  # brokers whose idle intake loop turns well within LIMIT_S (SQS's long poll waits 5 s)
    pytest.param("pipeline", marks=[pytest.mark.rabbitmq, pytest.mark.redis], id="rabbitmq"),
    pytest.param("redis_pipeline", marks=[pytest.mark.redis], id="redis"),
    pytest.param("sqlite_pipeline", id="sqlite"),
]
NAMES = {"pipeline": "RabbitMQ", "redis_pipeline": "Redis", "sqlite_pipeline": "SQLite"}


def profile(tmp_path: Path, **keys: float) -> Path:
    path = tmp_path / "config.toml"
    path.write_text("[profiles.w]\n" + "".join(f"{key} = {value}\n" for key, value in keys.items()))
    return path


def listed(tq_json: Tq, pipeline: Pipeline, config: Path) -> list[dict[str, Any]]:
    """tqadmin's workers of ``pipeline`` as ``tqadmin workers --json`` lists them under the profile."""
    broker = ("--broker", pipeline.broker_url) if pipeline.broker_url else ()
    code, doc, err = tq_json(
        "--config", str(config), "--profile", "w", *broker, "--store", pipeline.store_url, "workers"
    )
    if code == 3 and "no SQLite database" in err:
        return []  # the worker has not created the embedded file yet
    assert code in (0, 5), err  # 5: other frameworks' registries unreadable on this broker, ours listed
    return [w for w in doc["workers"] if w["framework"] == "tqadmin" and w["alive"]]


def runs(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def until_wedged(
    tq_json: Tq, pipeline: Pipeline, config: Path, check: Callable[[dict[str, Any]], None]
) -> tuple[dict[str, Any], float]:
    """Poll until the worker is wedged, ``check``-ing every reading on the way; the worker and the time."""
    started = time.monotonic()
    while time.monotonic() - started < 60:
        for worker in listed(tq_json, pipeline, config):
            check(worker)
            if worker["wedged"]:
                return worker, time.monotonic() - started
        time.sleep(0.2)
    raise AssertionError(f"not wedged within 60 s; worker log:\n{pipeline.log_text()}")


def until_moving(tq_json: Tq, pipeline: Pipeline, config: Path) -> None:
    pipeline.wait_for(
        lambda: any(w["wedged"] is False for w in listed(tq_json, pipeline, config)), 60, "not wedged"
    )


def test_a_worker_whose_threads_all_block_past_the_limit_is_wedged_with_why(
    sqlite_pipeline: SQLitePipeline, tq_json: Tq, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = profile(tmp_path, wedged_no_history_s=LIMIT_S, wedged_min_s=1)
    release, ran = tmp_path / "release", tmp_path / "runs"
    sqlite_pipeline.start_with_tasks(TASKS, "--concurrency", "2", *HEARTBEAT)
    job = {"task_type": "block", "release": str(release), "runs": str(ran)}
    sqlite_pipeline.publish([{**job, "id": "a"}, {**job, "id": "b"}])
    capsys.readouterr()  # what publish printed
    sqlite_pipeline.wait_for(lambda: runs(ran) == 2, 60, "both jobs running")

    def consistent(worker: dict[str, Any]) -> None:
        """Each reading: wedged exactly when both threads are busy past the limit (by the reading's ages)."""
        busy = [b["running_s"] for b in worker["progress"]["busy"]]
        if busy and abs(min(busy) - LIMIT_S) > 0.05:  # not on the edge, where rounding decides
            assert worker["wedged"] is (len(busy) == 2 and min(busy) > LIMIT_S), worker

    worker, detected_s = until_wedged(tq_json, sqlite_pipeline, config, consistent)
    reason = worker["wedged_reason"]
    assert "all 2 job threads stuck; the latest: block job tqe_" in reason, reason
    assert "no usual run time known" in reason and reason.endswith("; no run ended yet"), reason
    assert worker["progress"]["threads"] == 2 and worker["progress"]["last_completion_age_s"] is None
    assert detected_s >= LIMIT_S - 2.0  # never before the limit (the jobs started a poll or so earlier)
    release.touch()
    until_moving(tq_json, sqlite_pipeline, config)
    with capsys.disabled():
        print(f"\nblocked threads: wedged {detected_s:.1f} s after both runs started (limit {LIMIT_S:.0f} s)")


@pytest.mark.parametrize("broker", BROKERS)
def test_a_worker_whose_intake_loop_stops_turning_is_wedged_while_its_heartbeat_is_fresh(
    broker: str,
    request: pytest.FixtureRequest,
    tq_json: Tq,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Idle past the limit first: an idle loop turns (RabbitMQ's on a pika timer), so it is not wedged."""
    pipeline: Pipeline = request.getfixturevalue(broker)
    config = profile(tmp_path, wedged_intake_s=LIMIT_S)
    release, ran = tmp_path / "release", tmp_path / "runs"
    pipeline.start_with_tasks(TASKS, "--concurrency", "2", *HEARTBEAT)
    pipeline.wait_for(lambda: bool(listed(tq_json, pipeline, config)), 60, "the worker listed")
    time.sleep(LIMIT_S + 1)
    (idle,) = listed(tq_json, pipeline, config)
    assert idle["wedged"] is False and idle["progress"]["intake_turn_age_s"] < LIMIT_S, idle
    job = {
        "task_type": "wedge_intake",
        "release": str(release),
        "runs": str(ran),
        "once": str(tmp_path / "once"),
    }
    pipeline.publish([{**job, "id": "w"}])
    capsys.readouterr()  # what publish printed
    pipeline.wait_for(lambda: runs(ran) == 1, 60, "the job running")

    def fresh(worker: dict[str, Any]) -> None:
        assert worker["heartbeat_age_s"] < 5, worker  # the monitor thread beats on

    worker, detected_s = until_wedged(tq_json, pipeline, config, fresh)
    assert worker["wedged_reason"].startswith("intake loop not turned for "), worker
    assert worker["progress"]["intake_turn_age_s"] > LIMIT_S
    assert detected_s >= LIMIT_S - 2.0  # the last turn may precede the run by a turn (1 s) and a poll
    release.touch()
    until_moving(tq_json, pipeline, config)
    with capsys.disabled():
        print(
            f"\nintake loop stuck ({NAMES[broker]}): wedged {detected_s:.1f} s after the run"
            f" (limit {LIMIT_S:.0f} s)"
        )


def test_the_watchdog_restarts_a_worker_whose_intake_loop_stopped_and_nothing_is_lost(
    sqlite_pipeline: SQLitePipeline, tq_json: Tq, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--watchdog 2``: the worker process whose intake loop is stuck is killed and a new one takes over;
    the kill is in the log and in the new process's heartbeat, every job ran, none left or dead-lettered.
    (``--lease 2``: what the killed process held comes back once its lease on the embedded broker ends.)"""
    config = profile(tmp_path, wedged_intake_s=60)
    wedge, notes = tmp_path / "wedge-runs", [tmp_path / f"note-{i}" for i in range(3)]
    sqlite_pipeline.start_with_tasks(
        TASKS, "--concurrency", "2", "--watchdog", "2", "--lease", "2", *HEARTBEAT
    )
    job = {"runs": str(wedge), "once": str(tmp_path / "once"), "release": str(tmp_path / "never")}
    sqlite_pipeline.publish([{"task_type": "wedge_intake", **job, "id": "w"}])
    sqlite_pipeline.wait_for(lambda: runs(wedge) == 1, 60, "the wedging run")
    stuck_at = time.monotonic()
    sqlite_pipeline.publish(  # behind the stuck intake loop: taken by the next process
        [{"task_type": "note", "runs": str(path), "id": f"n{i}"} for i, path in enumerate(notes)]
    )
    capsys.readouterr()  # what publish printed
    sqlite_pipeline.wait_for(lambda: "killed by the watchdog" in sqlite_pipeline.log_text(), 60, "the kill")
    killed_s = time.monotonic() - stuck_at
    sqlite_pipeline.wait_for(lambda: all(runs(path) >= 1 for path in notes), 60, "every job run")
    sqlite_pipeline.wait_for(lambda: sqlite_pipeline.depth() == 0, 60, "the queue empty")
    assert sqlite_pipeline.depth(sqlite_pipeline.dlq) == 0
    assert 1 <= runs(wedge) <= 2  # run again only if its ack had not gone out before the kill
    log = sqlite_pipeline.log_text()
    assert "its intake loop has not turned for" in log and "(--watchdog 2)" in log, log
    (worker,) = listed(tq_json, sqlite_pipeline, config)
    assert (worker["restarts"], worker["watchdog_restarts"], worker["wedged"]) == (1, 1, False), worker
    assert killed_s >= 2.0 - 0.5  # never before --watchdog (the run started just before stuck_at)
    with capsys.disabled():
        print(f"\nwatchdog: intake loop stuck -> process killed {killed_s:.1f} s later (--watchdog 2)")
