"""Tasks of the pause tests: ``alpha`` and ``beta`` record each run's start (time, attempt) in Redis, under
the job's ``key``, work ``work_s``, then count the run done there (whatever the broker)."""

from __future__ import annotations

import os
import time
from typing import Any

import redis

from tqadmin import task

_redis = redis.Redis.from_url(os.environ.get("E2E_REDIS_URL", "redis://127.0.0.1:6379/0"))


def _run(ctx: Any, job: dict[str, Any]) -> None:
    key = job["key"]
    _redis.rpush(f"{key}:starts", f"{ctx.job_id}|{ctx.task_type}|{ctx.attempt}|{time.time()!r}")
    time.sleep(job.get("work_s", 0))
    _redis.hincrby(f"{key}:done", ctx.job_id, 1)


@task("alpha", max_retries=3)
def alpha(ctx: Any, job: dict[str, Any]) -> None:
    _run(ctx, job)


@task("beta", max_retries=3)
def beta(ctx: Any, job: dict[str, Any]) -> None:
    _run(ctx, job)


@task("gamma", max_retries=3)
def gamma(ctx: Any, job: dict[str, Any]) -> None:
    """Fails its first run (a retry falls due later), then succeeds."""
    key = job["key"]
    _redis.rpush(f"{key}:starts", f"{ctx.job_id}|{ctx.task_type}|{ctx.attempt}|{time.time()!r}")
    if ctx.attempt == 1:
        raise RuntimeError("first run fails on purpose")
    _redis.hincrby(f"{key}:done", ctx.job_id, 1)


@task("delta", max_retries=10)
def delta(ctx: Any, job: dict[str, Any]) -> None:
    """Fails while ``<key>:broken`` is set (a downstream service down: the breaker's case), each failure's
    time noted in ``<key>:fails``; succeeds once it is cleared."""
    key = job["key"]
    _redis.rpush(f"{key}:starts", f"{ctx.job_id}|{ctx.task_type}|{ctx.attempt}|{time.time()!r}")
    if _redis.exists(f"{key}:broken"):
        _redis.rpush(f"{key}:fails", f"{ctx.job_id}|{time.time()!r}")
        raise ConnectionError("payments at https://svc:s3cret@psp.example answer 503")
    time.sleep(job.get("work_s", 0))
    _redis.hincrby(f"{key}:done", ctx.job_id, 1)
