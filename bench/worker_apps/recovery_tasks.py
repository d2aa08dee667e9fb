"""Tasks of bench/recovery.py for `tqadmin worker`: work that takes a while, and a job that kills its worker
process.

Each job names its Redis hash (``key``): ``<key>:done`` gets the time its effect committed (through
``ctx.once``, so once), ``<key>:runs`` counts its runs.
"""

from __future__ import annotations

import os
import time
from typing import Any

import redis

from tqadmin import task

_redis = redis.Redis.from_url(os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"))


@task("work")
def work(ctx: Any, job: dict[str, Any]) -> None:
    """Sleeps ``work_s``; with ``until_released``, then until the bench sets ``<key>:released``
    (120 s at most)."""
    key = job["key"]
    _redis.hincrby(f"{key}:runs", ctx.job_id, 1)
    time.sleep(job["work_s"])
    if job.get("until_released"):
        deadline = time.monotonic() + 120
        while not _redis.exists(f"{key}:released") and time.monotonic() < deadline:
            time.sleep(0.05)
    ctx.once(lambda tx: tx.hset(f"{key}:done", ctx.job_id, repr(time.time())))


@task("poison")
def poison(ctx: Any, job: dict[str, Any]) -> None:
    """Kills its worker process, as a segfault or the OOM killer would."""
    _redis.hincrby(f"{job['key']}:runs", ctx.job_id, 1)
    os._exit(1)
