"""A pause outlives what can restart under it: the state store (a Redis of the test's own, with an append-only
file, restarted while the pause stands) and the worker (killed and started again). Broker, store and the
tasks' counters all live in that Redis; the paused task type starts nothing through both restarts, the other
type runs, and after the resume every job has run exactly once, uncharged."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis_pipeline import RedisPipeline
from test_pause_workers import HEARTBEAT_S, TASKS, WORKER, cli, done, every_job_ran_once_uncharged, started

from tests.support.redis_servers import PersistentRedis
from tqadmin.cli import main

pytestmark = [pytest.mark.redis]


@pytest.fixture
def server() -> Iterator[PersistentRedis]:
    made = PersistentRedis()
    yield made
    made.close()


@pytest.fixture
def line(server: PersistentRedis, unique: str, tmp_path: Path, isolated_env: Path) -> Iterator[RedisPipeline]:
    pipeline = RedisPipeline(f"tqpr_{unique}", tmp_path, redis_url=server.url)
    yield pipeline
    pipeline.stop_all()


def test_a_pause_survives_a_store_restart_and_a_worker_restart(
    line: RedisPipeline, server: PersistentRedis, capsys: pytest.CaptureFixture[str]
) -> None:
    p = line
    cli(p, "pause", p.queue, "--task-type", "alpha", "--for", "forever", "--reason", "vendor down")
    ids = p.publish([{"task_type": ("alpha", "beta")[i % 2], "id": f"j-{i}"} for i in range(20)])
    worker = p.start_with_tasks(TASKS, *WORKER)
    p.wait_for(lambda: started(p, "beta") == 10, 120, "every beta job while alpha is paused")

    restarted_at = time.time()
    server.server.restart()  # SHUTDOWN writes the AOF out; the same port and directory again
    p.kill(worker)
    p.start_with_tasks(TASKS, *WORKER)
    time.sleep(HEARTBEAT_S * 5)  # the new worker has read the pause set from the restarted store
    assert started(p, "alpha") == 0, p.log_text()
    capsys.readouterr()  # what the publisher and the pause said
    assert main(["--store", p.store_url, "--json", "pauses"]) == 0
    (pause,) = json.loads(capsys.readouterr().out)["pauses"]
    assert (pause["queue"], pause["task_type"], pause["reason"]) == (p.queue, "alpha", "vendor down")
    print(f"the pause stood {time.time() - restarted_at:.1f} s past the store's restart")

    cli(p, "resume", p.queue, "--task-type", "alpha")
    p.wait_for(lambda: len(done(p)) == len(ids), 120, "every job after the resume")
    time.sleep(HEARTBEAT_S)
    every_job_ran_once_uncharged(p, ids)
