"""Tasks the end-to-end tests run through `tqadmin worker --tasks tests/e2e/e2e_tasks.py`.

Executions and effects are counted apart: ``runs`` is a plain counter bumped on every execution (it may
exceed one under crashes and duplicates), ``effects`` is bumped through ``ctx.once`` (must end at exactly
one).
The Redis keys are named by the job (``key``), so tests running in parallel never share them.
"""

from __future__ import annotations

import os
import time
from typing import Any

import redis

from tqadmin import FatalError, TransientError, task
from tqadmin.store.keys import job_tag

_url = os.environ.get("E2E_REDIS_URL", "redis://127.0.0.1:6379/0")
# a cluster client when the test runs on a Redis Cluster (both connect on first use)
_redis: Any = (
    redis.RedisCluster.from_url(_url) if os.environ.get("E2E_REDIS_CLUSTER") else redis.Redis.from_url(_url)
)


def _ran(ctx: Any, job: dict[str, Any]) -> None:
    _redis.hincrby(f"{job['key']}:runs", ctx.job_id, 1)


def _effect(ctx: Any, job: dict[str, Any]) -> None:
    key = job["key"]
    ctx.once(lambda tx: tx.hincrby(f"{key}:effects", ctx.job_id, 1))


@task("count")
def count(ctx: Any, job: dict[str, Any]) -> None:
    _ran(ctx, job)
    if job.get("work_s"):
        time.sleep(job["work_s"])
    _effect(ctx, job)


@task("count_tagged")
def count_tagged(ctx: Any, job: dict[str, Any]) -> None:
    """``count`` with keys of the job's own hash tag, as a ``ctx.once`` effect must have on Redis Cluster."""
    tag = job_tag(ctx.job_id)
    _redis.incr(f"{job['key']}:run:{tag}")
    if job.get("work_s"):
        time.sleep(job["work_s"])
    ctx.once(lambda tx: tx.incr(f"{job['key']}:effect:{tag}"))


@task("noop")
def noop(ctx: Any, job: dict[str, Any]) -> None:
    """Nothing at all: the benchmark's task."""


@task("flaky", max_retries=5)
def flaky(ctx: Any, job: dict[str, Any]) -> None:
    """Fails until run ``succeed_on``; records the time of every run to check the retry gaps."""
    _redis.rpush(f"{job['key']}:times:{ctx.job_id}", repr(time.time()))
    if ctx.attempt < job["succeed_on"]:
        raise TransientError(f"run {ctx.attempt} fails on purpose")
    _ran(ctx, job)
    _effect(ctx, job)


@task("fatal")
def fatal(ctx: Any, job: dict[str, Any]) -> None:
    raise FatalError("cannot work with amqp://bob:hunter2@db.internal/ " + "x" * 5000)


@task("sleep")
def sleep(ctx: Any, job: dict[str, Any]) -> None:
    _ran(ctx, job)
    time.sleep(job["seconds"])
    _effect(ctx, job)


@task("poison")
def poison(ctx: Any, job: dict[str, Any]) -> None:
    _ran(ctx, job)
    os._exit(1)


@task("exits", max_retries=0)
def exits(ctx: Any, job: dict[str, Any]) -> None:
    """``sys.exit`` in a job thread raises SystemExit there, which ``except Exception`` does not catch."""
    _ran(ctx, job)
    raise SystemExit(0)


@task("attempts", max_retries=2)
def attempts(ctx: Any, job: dict[str, Any]) -> None:
    """Records what each run is told (``ctx.attempt``, the job's ``retry_count``), then fails."""
    _redis.rpush(f"{job['key']}:attempts:{ctx.job_id}", f"{ctx.attempt}:{job['retry_count']}")
    raise TransientError(f"run {ctx.attempt} fails on purpose")
