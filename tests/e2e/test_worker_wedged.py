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
from worker_harness import SQLitePipeline, sqlite_pipeline_fixture  # noqa: F401 - the fixture

TASKS = str(Path(__file__).with_name("wedge_tasks.py"))
LIMIT_S = 3.0  # the profile's limits below: short, so the tests take seconds
HEARTBEAT = ("--heartbeat", "0.5")
Tq = Callable[..., tuple[int, Any, str]]


def profile(tmp_path: Path, **keys: float) -> Path:
    path = tmp_path / "config.toml"
    path.write_text("[profiles.w]\n" + "".join(f"{key} = {value}\n" for key, value in keys.items()))
    return path


def listed(tq_json: Tq, pipeline: SQLitePipeline, config: Path) -> list[dict[str, Any]]:
    """tqadmin's workers of ``pipeline`` as ``tqadmin workers --json`` lists them under the profile."""
    where = ("--broker", pipeline.broker_url or "", "--store", pipeline.store_url)
    code, doc, err = tq_json("--config", str(config), "--profile", "w", *where, "workers")
    assert code == 0, err
    return [w for w in doc["workers"] if w["framework"] == "tqadmin" and w["alive"]]


def runs(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def until_wedged(
    tq_json: Tq, pipeline: SQLitePipeline, config: Path, check: Callable[[dict[str, Any]], None]
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


def until_moving(tq_json: Tq, pipeline: SQLitePipeline, config: Path) -> None:
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
    assert "all 2 job threads busy past their usual run time" in reason, reason
    assert (
        "block job tqe_" in reason
        and "no run of it finished yet" in reason
        and "no run finished yet" in reason
    )
    assert worker["progress"]["threads"] == 2 and worker["progress"]["last_completion_age_s"] is None
    assert detected_s >= LIMIT_S - 1.0  # never before the limit (the jobs started at most ~1 s earlier)
    release.touch()
    until_moving(tq_json, sqlite_pipeline, config)
    with capsys.disabled():
        print(f"\nblocked threads: wedged {detected_s:.1f} s after both runs started (limit {LIMIT_S:.0f} s)")


def test_a_worker_whose_intake_loop_stops_turning_is_wedged_while_its_heartbeat_is_fresh(
    sqlite_pipeline: SQLitePipeline, tq_json: Tq, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = profile(tmp_path, wedged_intake_s=LIMIT_S)
    release, ran = tmp_path / "release", tmp_path / "runs"
    sqlite_pipeline.start_with_tasks(TASKS, "--concurrency", "2", *HEARTBEAT)
    job = {
        "task_type": "wedge_intake",
        "release": str(release),
        "runs": str(ran),
        "once": str(tmp_path / "once"),
    }
    sqlite_pipeline.publish([{**job, "id": "w"}])
    capsys.readouterr()  # what publish printed
    sqlite_pipeline.wait_for(lambda: runs(ran) == 1, 60, "the job running")

    def fresh(worker: dict[str, Any]) -> None:
        assert worker["heartbeat_age_s"] < 5, worker  # the monitor thread beats on

    worker, detected_s = until_wedged(tq_json, sqlite_pipeline, config, fresh)
    assert worker["wedged_reason"].startswith("intake loop not turned for "), worker
    assert worker["progress"]["intake_turn_age_s"] > LIMIT_S
    assert detected_s >= LIMIT_S - 1.0
    release.touch()
    until_moving(tq_json, sqlite_pipeline, config)
    with capsys.disabled():
        print(f"\nintake loop stuck: wedged {detected_s:.1f} s after the run (limit {LIMIT_S:.0f} s)")
