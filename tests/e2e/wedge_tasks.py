"""Tasks that wedge a real worker process, for tests/e2e/test_worker_wedged.py.

``block`` holds its job thread until the file the job names exists. ``wedge_intake`` stops the worker
process's intake loop: it signals its own process, whose handler runs in the main thread (the one that runs
the consumer's I/O loop) and waits there until the job's ``release`` file exists; the job thread returns at
once. A job whose ``once`` file already exists does not wedge again (the run after a watchdog restart), and
each run is counted in the job's ``runs`` file, one line a run.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

from tqadmin import task

_release: list[Path] = []


def _wait_for(path: Path) -> None:
    while not path.exists():
        time.sleep(0.05)


def _hold_intake(_signum: int, _frame: object) -> None:
    _wait_for(_release[-1])


signal.signal(signal.SIGUSR1, _hold_intake)  # loaded in the main thread, before the fork: the child keeps it


def _count(job: dict[str, Any]) -> None:
    with Path(job["runs"]).open("a") as runs:
        runs.write(f"{os.getpid()}\n")


@task("block")
def block(ctx: Any, job: dict[str, Any]) -> None:
    _count(job)
    _wait_for(Path(job["release"]))


@task("wedge_intake", max_retries=0)
def wedge_intake(ctx: Any, job: dict[str, Any]) -> None:
    _count(job)
    once = Path(job["once"])
    if once.exists():
        return
    once.touch()
    _release.append(Path(job["release"]))
    os.kill(os.getpid(), signal.SIGUSR1)


@task("note")
def note(ctx: Any, job: dict[str, Any]) -> None:
    _count(job)
