"""The embedded broker in the worker benchmark: `tqadmin worker` on one SQLite file (its store on the same
file) against Huey's SQLite storage and a plain SQLite claim+delete loop, in the same run on this machine.

Each consumer drains a file pre-filled with N no-op jobs; its rate is measured from its first taken job to
the empty queue (start-up excluded), by counting the queue's rows with sqlite3 every 20 ms. Huey deletes a
task when it dequeues it (no ack: a crash loses it); tqadmin keeps at-least-once with a lease and a token
per row, and with dedup on claims and completes every job in its store besides.

    python bench/worker_sqlite.py [--jobs N] [--rounds R] [--concurrency C] [--prefetch P]

The contenders run one after the other, ``--rounds`` times in turn, and each one's median is reported, so
that a burst of load on a shared machine does not fall on one contender only. ``measure()`` returns the
rows, for a report that puts every broker side by side.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from drain import APPS, CHECKOUT, Sample, drain_rate, report, spawn, tqadmin_sample, tqadmin_worker

from tqadmin.pipeline.job import new_job
from tqadmin.pipeline.publisher import publish_jobs
from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.registry import plugin_for_url

QUEUE = "bench"
TQADMIN_WORKER = "tqadmin worker, dedup on (store on the same file)"
TQADMIN_NO_DEDUP = "tqadmin worker, dedup off"
HUEY = "Huey SqliteHuey consumer (SQLite defaults)"
HUEY_NORMAL = "Huey SqliteHuey consumer, synchronous=NORMAL"
PLAIN_LOOP = "plain SQLite claim + fenced delete loop"


class RowCount:
    """The depth of a queue as its own client counts it: rows left in the file (what ``drain_rate`` polls)."""

    def __init__(self, path: Path, sql: str) -> None:
        self.path = path
        self.sql = sql

    def depth(self, _queue: str) -> int:
        with contextlib.closing(sqlite3.connect(self.path, timeout=30)) as db:
            return int(db.execute(self.sql).fetchone()[0])


def tqadmin_rate(path: Path, total: int, extra: list[str], tree: Path = CHECKOUT) -> Sample:
    """`tqadmin worker` (run from the checkout ``tree``) on one SQLite file, its store on the same file
    (bench/worker.py uses it too)."""
    url = f"sqlite:///{path}"
    with plugin_for_url(url).transport(BrokerConfig(url=url, timeout_s=30)) as transport:
        report = publish_jobs(transport, [new_job("noop") for _ in range(total)], queue=QUEUE)
    assert report.all_confirmed, report.error
    rows = RowCount(path, f"SELECT COUNT(*) FROM tqb_messages WHERE queue = '{QUEUE}'")
    return tqadmin_sample(rows, QUEUE, total, tqadmin_worker(url, url, QUEUE, *extra), url, tree)


def huey_rate(path: Path, total: int, threads: int, sync: str) -> float:
    env = {"BENCH_HUEY_DB": str(path), "BENCH_HUEY_SYNC": sync}
    subprocess.run(
        [sys.executable, "-c", f"import huey_app\nfor _ in range({total}): huey_app.noop()"],
        env={**os.environ, "PYTHONPATH": str(APPS), **env},
        check=True,
    )
    consumer = spawn(
        sys.executable, "-m", "huey.bin.huey_consumer", "huey_app.huey", "-w", str(threads), env=env
    )
    return drain_rate(RowCount(path, "SELECT COUNT(*) FROM task"), QUEUE, total, consumer)


def plain_loop_rate(path: Path, total: int) -> float:
    done = subprocess.run(
        [sys.executable, str(APPS / "sqlite_loop.py"), str(path), str(total)],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.strip())


def measure(
    jobs: int = 20000, concurrency: int = 32, prefetch: int = 256, rounds: int = 3
) -> list[tuple[str, float]]:
    """``(label, median jobs per second)`` of every contender, each run on a fresh file of its own."""
    worker = ["--concurrency", str(concurrency), "--prefetch", str(prefetch)]
    threads = min(concurrency, 8)
    contenders: dict[str, Callable[[Path], float]] = {
        TQADMIN_WORKER: lambda path: tqadmin_rate(path, jobs, worker).rate,
        TQADMIN_NO_DEDUP: lambda path: tqadmin_rate(path, jobs, [*worker, "--no-dedup"]).rate,
        HUEY: lambda path: huey_rate(path, jobs, threads, ""),
        HUEY_NORMAL: lambda path: huey_rate(path, jobs, threads, "normal"),
        PLAIN_LOOP: lambda path: plain_loop_rate(path, jobs),
    }
    rates: dict[str, list[float]] = {label: [] for label in contenders}
    for _ in range(rounds):
        for label, run in contenders.items():
            with tempfile.TemporaryDirectory(prefix="bench-sqlite-") as folder:
                rates[label].append(run(Path(folder) / "queue.db"))
    return [(label, statistics.median(found)) for label, found in rates.items()]


def ratios(results: list[tuple[str, float]]) -> list[tuple[str, float, float | None]]:
    rate = dict(results)
    tq = rate[TQADMIN_WORKER]
    return [
        ("tqadmin (dedup on) / Huey, SQLite defaults", tq / rate[HUEY], 2.0),
        ("tqadmin (dedup on) / Huey, synchronous=NORMAL", tq / rate[HUEY_NORMAL], 2.0),
        ("tqadmin (dedup on) / plain claim+delete loop", tq / rate[PLAIN_LOOP], 0.5),
        ("tqadmin (dedup off) / plain claim+delete loop", rate[TQADMIN_NO_DEDUP] / rate[PLAIN_LOOP], None),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument(
        "--rounds", type=int, default=3, help="runs of each contender, in turn (median shown)"
    )
    parser.add_argument("--concurrency", type=int, default=32, help="tqadmin job threads (Huey: at most 8)")
    parser.add_argument("--prefetch", type=int, default=256, help="tqadmin's prefetch window")
    args = parser.parse_args()
    results = measure(args.jobs, args.concurrency, args.prefetch, args.rounds)
    title = (
        f"{args.jobs} no-op jobs, a fresh SQLite file per run, median of {args.rounds} runs in turn"
        " on a shared machine (figures are noisy)"
    )
    report(title, results, ratios(results))


if __name__ == "__main__":
    main()
