"""``tqadmin health`` on other frameworks' real workers: an RQ worker whose job blocks stalls its RQ queue
(RQ counts no completions tqadmin can read per queue, but its one job slot held the same job since before the
window: nothing completed), exit 7 within the window and a poll; the detection time is printed."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from framework_brokers import rq_worker, wait_for
from rq import Queue

from tests.conftest import REDIS_URL

pytestmark = pytest.mark.redis
Tq = Callable[..., tuple[int, Any, str]]
WINDOW_S = 4.0


def test_a_real_rq_worker_whose_job_blocks_stalls_its_queue(
    isolated_env: Any,
    redis_keys: redis.Redis,
    unique: str,
    tq_json: Tq,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    name, queue = f"tqt-{unique}-w1", f"tqt-{unique}-stuck"
    release = tmp_path / "release"
    with rq_worker(name, queue, tmp_path):
        jobs = Queue(queue, connection=redis_keys)
        for i in range(3):
            jobs.enqueue("holding.hold", str(release), job_id=f"tqt-{unique}-j{i}")

        def busy() -> bool:
            _, doc, _ = tq_json("--broker", REDIS_URL, "workers")
            return any(w["name"] == name and w["current_jobs"] for w in doc["workers"])

        wait_for(busy, "the RQ worker busy on the first job", 60)
        blocked_at = time.monotonic()
        try:
            code, doc, err = tq_json(
                "--broker", REDIS_URL, "health", "--window", str(WINDOW_S), "--filter", queue
            )
        finally:
            release.touch()
        detected_s = time.monotonic() - blocked_at
    (row,) = [q for q in doc["queues"] if q["name"] == f"rq:{queue}"]
    assert (code, row["verdict"]) == (7, "stalled"), (row, err)
    assert "1 consumer" in row["reason"] and "no completion in" in row["reason"], row
    with capsys.disabled():
        print(
            f"\nhealth: RQ worker on a blocking job: stalled {detected_s:.1f} s after it was seen busy"
            f" (--window {WINDOW_S:g}): {row['reason']}"
        )
