"""Chaos on the Redis broker: workers SIGKILLed and SIGSTOPped, Redis restarted, a replay killed half-way."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis_pipeline import ClusterPipeline, RedisPipeline
from test_replay_killed import kill_half_way, tqadmin
from tqadmin_redis.naming import Layout
from tqadmin_redis.transfer import ADMIN_LEASE_S

from tests.support.redis_servers import PersistentRedis
from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.registry import plugin_for_url

pytestmark = [pytest.mark.redis, pytest.mark.slow]

JOBS = 20_000
WORKER = ("--concurrency", "4", "--prefetch", "16", "--lease", "2", "--crash-limit", "10")
STOLEN = ("gave its delivery to another consumer", "acks refused", "had passed to another consumer")


@pytest.fixture
def persistent_redis() -> Iterator[PersistentRedis]:
    server = PersistentRedis()
    yield server
    server.close()


def test_kills_a_stopped_worker_and_a_redis_restart_lose_nothing_and_steal_from_no_live_worker(
    persistent_redis: PersistentRedis,
    unique: str,
    tmp_path: Path,
    isolated_env: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pipeline = RedisPipeline(f"tqc_{unique}", tmp_path, redis_url=persistent_redis.url)
    try:
        ids = pipeline.publish([{"task_type": "count", "id": f"c-{i}", "work_s": 0.01} for i in range(JOBS)])
        workers = [pipeline.start(*WORKER) for _ in range(4)]
        stopped = workers[3]
        # what happens when (seconds after the start), beside a SIGKILL every 2 s among workers 0-2
        events = {
            # the whole process group: a SIGSTOP to the supervisor alone leaves its child working on
            6.0: lambda: os.killpg(stopped.pid, signal.SIGSTOP),  # past its 2 s lease: its entries move on
            12.0: lambda: os.killpg(stopped.pid, signal.SIGCONT),  # its late settlements are refused
            16.0: persistent_redis.server.restart,
        }
        kills, started = 0, time.monotonic()
        deadline = started + 150
        while len(pipeline.effects()) < JOBS and time.monotonic() < deadline:
            time.sleep(2)
            victim = kills % 3
            pipeline.kill(workers[victim])
            workers[victim] = pipeline.start(*WORKER)
            kills += 1
            for at in [at for at in events if time.monotonic() - started >= at]:
                events.pop(at)()
        os.killpg(stopped.pid, signal.SIGCONT)
        pipeline.wait_for(lambda: len(pipeline.effects()) == JOBS, 60, "every job's effect")
        pipeline.wait_for(lambda: pipeline.pending() == 0, 30, "the stream to empty")

        effects, runs = pipeline.effects(), pipeline.runs()
        assert set(effects) == set(ids)  # 0 lost
        assert set(effects.values()) == {1}  # every effect exactly once
        assert pipeline.depth(f"{pipeline.queue}.dlq") == 0
        assert not events and kills >= 5  # every event happened
        stopped_log = pipeline.logs / f"worker-{3}.log"
        for log in sorted(pipeline.logs.glob("worker-*.log")):
            if log != stopped_log:
                text = log.read_text(errors="replace")
                assert not any(s in text for s in STOLEN), (
                    f"{log.name} lost an entry while alive:\n{text[-2000:]}"
                )
        executions = sum(runs.values())
        with capsys.disabled():
            print(
                f"\nredis chaos: {JOBS} jobs, {kills} SIGKILLs, 1 SIGSTOP, 1 Redis restart, {executions} runs"
                f" ({executions - JOBS} re-run), {sum(effects.values())} effects, 0 lost"
            )
    finally:
        pipeline.cleanup()


def test_a_replay_of_20000_dead_letters_killed_half_way_and_run_again_loses_nothing(
    unique: str, isolated_env: Path
) -> None:
    url = f"redis://127.0.0.1:6379/0?prefix=tqrp-{unique}"
    client = redis.Redis()
    target = "orders"
    with plugin_for_url(url).transport(BrokerConfig(url=url)) as transport:
        transport.declare(target)
    dlq = Layout(f"tqrp-{unique}").dlq(target).stream
    headers = json.dumps({"x-tq-original-queue": target, "x-tq-reason": "max_retries"})
    try:
        pipe = client.pipeline(transaction=False)
        for i in range(JOBS):
            pipe.xadd(
                dlq,
                {
                    "body": json.dumps({"task_type": "t", "id": f"job-{i}"}),
                    "id": f"job-{i}",
                    "headers": headers,
                },
            )
        pipe.execute()
        work = Layout(f"tqrp-{unique}").queue(target).stream
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        argv = ("--broker", url, "replay", f"{target}.dlq", "--client-side")
        kill_half_way(tqadmin(*argv, "--rate", "4000"), lambda: int(client.xlen(work)), JOBS)
        time.sleep(ADMIN_LEASE_S + 1)  # what the killed run held is anybody's once its lease has passed
        second = subprocess.run(
            tqadmin(*argv, "--json"), env=env, capture_output=True, text=True, timeout=180, check=False
        )
        assert second.returncode == 0, second.stderr
        assert client.xlen(dlq) == 0
        arrived = [fields[b"id"].decode() for _, fields in client.xrange(work)]
        assert set(arrived) == {f"job-{i}" for i in range(JOBS)}
        assert len(arrived) - JOBS <= 2 * 500, "more duplicates than the unacked window allows"
    finally:
        keys = list(client.scan_iter(f"tqrp-{unique}:*"))
        if keys:
            client.delete(*keys)


@pytest.mark.redis_cluster
def test_on_a_redis_cluster_sigkilling_a_worker_every_2_s_loses_nothing_and_runs_every_effect_once(
    redis_cluster_url: str,
    unique: str,
    tmp_path: Path,
    isolated_env: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pipeline = ClusterPipeline(f"tqk_{unique}", tmp_path, redis_url=redis_cluster_url)
    try:
        outcome = pipeline.chaos(
            jobs=3000, processes=3, kill_every_s=2, work_s=0.03, worker=WORKER, task_type="count_tagged"
        )
        with capsys.disabled():
            print(f"\nredis cluster chaos: {outcome}")
    finally:
        pipeline.cleanup()
