"""Every benchmark task counts its executions here, in its own process, at the same cost for every framework:
one ``list.append`` and one clock read a job (no network round trip), so a worker that skips or loses jobs
cannot post a rate for work it did not do.

``BENCH_COUNTS`` names a folder. In each process that runs a job, a thread of its own writes there every
50 ms while jobs run: the ids run since its last turn, appended to ``<pid>.ids`` (one a line), and
``<pid>.json`` (executions so far, first and last execution time), replaced whole; once more at a normal
exit (a consumer that ends by itself). Nothing else is left to an exit hook: tqadmin's worker child ends
with ``os._exit``, Celery and Dramatiq each their own way, and the bench stops every consumer with SIGTERM,
so it reads the files once they have stopped changing instead (bench/drain.py).

Times are ``time.monotonic()``: CLOCK_MONOTONIC, one clock for every process on the machine, so the bench
compares them with its own. Without ``BENCH_COUNTS`` nothing is counted.
"""

from __future__ import annotations

import atexit
import json
import os
import threading
import time
from pathlib import Path

FOLDER = os.environ.get("BENCH_COUNTS")
FLUSH_S = 0.05

_runs: list[object] = []  # the id of every execution, in order (append is atomic: no lock between threads)
_times: list[float] = [0.0, 0.0]  # first and last execution time
_owner = [0]  # the pid whose flushing thread runs (a forked child starts its own)
_starting = threading.Lock()
_writing = threading.Lock()
_written = [0]  # executions already in the ids file


def ran(job_id: object) -> None:
    """Count one execution of ``job_id``."""
    if FOLDER is None:
        return
    _runs.append(job_id)
    now = time.monotonic()
    if _owner[0] != os.getpid():
        _start(now)
    _times[1] = now


def _start(now: float) -> None:
    """The first job in this process: start its flushing thread."""
    with _starting:
        if _owner[0] == os.getpid():
            return
        _times[:] = [now, now]  # before the owner: a thread that sees the owner set updates only the last
        _owner[0] = os.getpid()
        threading.Thread(target=_flush, args=(Path(str(FOLDER)),), name="bench-counts", daemon=True).start()


def _flush(folder: Path) -> None:
    while True:
        _write(folder)
        time.sleep(FLUSH_S)


def _write(folder: Path) -> None:
    """Write what ran since the last write (by the flushing thread, and once more at a normal exit)."""
    with _writing:
        total = len(_runs)
        if total == _written[0]:
            return
        pid = os.getpid()
        with (folder / f"{pid}.ids").open("a", encoding="utf-8") as ids:
            ids.write("".join(f"{job_id}\n" for job_id in _runs[_written[0] : total]))
        _written[0] = total
        summary = {"pid": pid, "runs": total, "first": _times[0], "last": _times[1]}
        partial = folder / f"{pid}.tmp"
        partial.write_text(json.dumps(summary))
        partial.replace(folder / f"{pid}.json")  # whole or not at all: read at any moment


def _at_exit() -> None:
    if FOLDER is not None and _owner[0] == os.getpid():
        _write(Path(FOLDER))


atexit.register(_at_exit)
