"""Tasks the end-to-end tests run through `tqadmin worker --tasks tests/e2e/e2e_tasks.py`.

Executions and effects are counted apart: ``runs`` is a plain counter bumped on every execution (it may
exceed one under crashes and duplicates), ``effects`` is bumped through ``ctx.once`` (must end at exactly
one).
The Redis keys are named by the job (``key``), so tests running in parallel never share them. Where the
worker runs on the embedded broker and store (``E2E_SQLITE`` names their file), both counters are tables
of that file instead, the effect written inside the store's transaction.
"""

from __future__ import annotations

import os
import sqlite3
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


_SQLITE = os.environ.get("E2E_SQLITE")
COUNTERS = "CREATE TABLE IF NOT EXISTS e2e_{0} (key TEXT, job_id TEXT, n INTEGER, PRIMARY KEY (key, job_id))"
BUMP = "INSERT INTO e2e_{0} VALUES (?, ?, 1) ON CONFLICT (key, job_id) DO UPDATE SET n = n + 1"


def bump(db: Any, counter: str, key: str, job_id: str) -> None:
    """Add one to ``counter`` of ``job_id`` in SQLite (a plain connection, or the store's transaction)."""
    db.execute(COUNTERS.format(counter))
    db.execute(BUMP.format(counter), (key, job_id))


def _ran(ctx: Any, job: dict[str, Any]) -> None:
    if _SQLITE:
        with sqlite3.connect(_SQLITE, timeout=30, isolation_level=None) as db:
            bump(db, "runs", job["key"], ctx.job_id)
        return
    _redis.hincrby(f"{job['key']}:runs", ctx.job_id, 1)


def _effect(ctx: Any, job: dict[str, Any]) -> None:
    key = job["key"]
    if _SQLITE:
        ctx.once(lambda tx: bump(tx, "effects", key, ctx.job_id))
        return
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
    """Fails until run ``succeed_on`` (each failing run taking ``seconds``, 0 unless given); records the time
    of every run to check the retry gaps."""
    _redis.rpush(f"{job['key']}:times:{ctx.job_id}", repr(time.time()))
    if ctx.attempt < job["succeed_on"]:
        time.sleep(job.get("seconds", 0))
        raise TransientError(f"run {ctx.attempt} fails on purpose")
    _ran(ctx, job)
    _effect(ctx, job)


@task("fatal")
def fatal(ctx: Any, job: dict[str, Any]) -> None:
    raise FatalError("cannot work with amqp://bob:hunter2@db.internal/ " + "x" * 5000)


@task("loud")
def loud(ctx: Any, job: dict[str, Any]) -> None:
    """Fails for good with a message of ``size`` letters after a password: what a task may raise."""
    raise FatalError("cannot work with amqp://bob:hunter2@db.internal/ " + "x" * job["size"])


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
