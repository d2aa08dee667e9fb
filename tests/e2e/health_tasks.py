"""Tasks for tests/e2e/test_health.py: ``block`` holds its job thread until the job's ``release`` file
exists, ``slow`` sleeps its ``seconds``, ``later`` always fails for a retry (the worker's backoff decides
when), ``quick`` does nothing. Each run is counted in the job's ``runs`` file when it names one."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tqadmin import TransientError, task


def _count(job: dict[str, Any]) -> None:
    if "runs" in job:
        with Path(job["runs"]).open("a") as runs:
            runs.write("run\n")


@task("block")
def block(ctx: Any, job: dict[str, Any]) -> None:
    _count(job)
    release = Path(job["release"])
    while not release.exists():
        time.sleep(0.05)


@task("slow")
def slow(ctx: Any, job: dict[str, Any]) -> None:
    _count(job)
    time.sleep(job["seconds"])


@task("later", max_retries=5)
def later(ctx: Any, job: dict[str, Any]) -> None:
    _count(job)
    raise TransientError("fails on purpose, to be retried later")


@task("quick")
def quick(ctx: Any, job: dict[str, Any]) -> None:
    _count(job)
