"""The embedded broker in the worker benchmark: `tqadmin worker` on one SQLite file (its store on the same
file), dedup on and off, against Huey's SQLite storage and a batched SQLite claim+delete loop, in one run.

Each consumer drains a fresh file pre-filled with N no-op jobs. Its peers are set up as tqadmin is and say
so on their rows: Huey with as many worker threads as tqadmin has job threads, its durability set
explicitly (``fsync=True``: synchronous=FULL; and synchronous=NORMAL, as tqadmin's file); the ceiling,
``worker_apps/sqlite_loop.py``, claims and deletes in batches of tqadmin's prefetch, one transaction a
turn, as tqadmin's consumer does (plugins/tqadmin_sqlite/consuming.py), and does nothing else: no job
threads, no decoding, no telemetry. It is the most one Python process gets out of the file, not a peer:
its ratio (no target) says how much of tqadmin's time is the broker's. Huey deletes a task when it dequeues
it (no ack: a crash loses it), so its job is settled when its task has returned; tqadmin keeps at-least-once
with a lease and a token per row, and with dedup on completes every job in its store too.

Every job is counted in its consumer's process and checked after the stop (bench/drain.py): all ran, once
each with dedup on, tqadmin's dead-letter queue empty, no row left. The clock runs from the first execution
(start-up excluded) to the later of the last execution and the queue's rows seen at 0 (counted by sqlite3
every 20 ms). Three rounds by default, the order rotated each round; medians and min-max spreads.
``--compare-with PATH`` times tqadmin's rows from another checkout too; ``--json PATH`` writes the results
for bench/summary.py; ``BENCH_FAIL=1`` makes tqadmin's task fail fatally (the checks must fail).

    python bench/worker_sqlite.py [--jobs N] [--rounds R] [--concurrency C] [--prefetch P] [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from drain import (
    APPS,
    TQADMIN,
    Contender,
    Outcome,
    Setup,
    arguments,
    drain,
    parse,
    spawn,
    tqadmin_drain,
    tqadmin_setup,
    tqadmin_worker,
)
from rounds import Target, finish, groups, run_rounds
from tqadmin_sqlite import SQLitePlugin

from tqadmin.pipeline.job import new_job
from tqadmin.pipeline.publisher import publish_jobs
from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.registry import plugin_for_url

QUEUE = "bench"
TQ_ON = "tqadmin worker, dedup on (store on the same file)"
TQ_OFF = "tqadmin worker, dedup off"
HUEY, LOOP = "Huey", "batched SQLite loop"
TARGETS: list[Target] = [(TQ_ON, HUEY, 2.0), (TQ_ON, LOOP, None), (TQ_OFF, LOOP, None), (TQ_ON, TQ_OFF, 0.7)]


def rows_left(path: Path, sql: str) -> Callable[[], int]:
    """Rows a query counts in the file (before its table exists: -1, not empty)."""

    def left() -> int:
        with contextlib.closing(sqlite3.connect(path, timeout=30)) as db:
            try:
                return int(db.execute(sql).fetchone()[0])
            except sqlite3.OperationalError:  # no such table yet
                return -1

    return left


@contextlib.contextmanager
def fresh_file() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="bench-sqlite-") as folder:
        yield Path(folder) / "queue.db"


def tqadmin_run(total: int, options: list[str], dedup: bool, tree: Path) -> Outcome:
    """`tqadmin worker` (run from the checkout ``tree``) on a fresh SQLite file, its store in the file."""
    with fresh_file() as path:
        url = f"sqlite:///{path}"
        with plugin_for_url(url).transport(BrokerConfig(url=url, timeout_s=30)) as transport:
            report = publish_jobs(transport, [new_job("noop") for _ in range(total)], queue=QUEUE)
        assert report.all_confirmed, report.error
        count = "SELECT COUNT(*) FROM tqb_messages WHERE queue = '{}'"
        left = rows_left(path, count.format(QUEUE))
        dlq = rows_left(path, count.format(SQLitePlugin().dlq_name(QUEUE)))
        command = tqadmin_worker(url, url, QUEUE, *options, *([] if dedup else ["--no-dedup"]))
        return tqadmin_drain(total, command, url, tree, left, once=dedup, dlq=dlq)


def huey_run(total: int, threads: int, sync: str) -> Outcome:
    with fresh_file() as path:
        env = {"BENCH_HUEY_DB": str(path), "BENCH_HUEY_SYNC": sync}
        subprocess.run(
            [sys.executable, "-c", f"import huey_app\nfor n in range({total}): huey_app.noop(n)"],
            env={**os.environ, "PYTHONPATH": str(APPS), **env},
            check=True,
        )
        command = ["-m", "huey.bin.huey_consumer", "huey_app.huey", "-w", str(threads), "-k", "thread"]
        return drain(
            total, spawn(sys.executable, *command, env=env), rows_left(path, "SELECT COUNT(*) FROM task")
        )


def loop_run(total: int, batch: int) -> Outcome:
    with fresh_file() as path:
        start = spawn(sys.executable, str(APPS / "sqlite_loop.py"), str(path), str(total), str(batch))
        return drain(total, start, rows_left(path, "SELECT COUNT(*) FROM jobs"))


def contenders(args: argparse.Namespace) -> tuple[Callable[[Path], list[Contender]], list[Contender]]:
    """tqadmin's rows (from a checkout) and its peers, set up alike."""
    n, prefetch = args.jobs, args.prefetch

    def tqadmin(tree: Path) -> list[Contender]:
        found = []
        for label, dedup, threads in (
            (TQ_OFF, False, args.concurrency),
            (TQ_ON, True, args.dedup_concurrency),
        ):
            options = ["--concurrency", str(threads), "--prefetch", str(prefetch)]
            run = lambda o=options, d=dedup: tqadmin_run(n, o, d, tree)  # noqa: E731
            found.append(Contender(label, TQADMIN, tqadmin_setup(threads, prefetch), run, once=dedup))
        return found

    peers: list[Contender] = []
    if args.skip_peers:
        return tqadmin, peers
    if importlib.util.find_spec("huey") is None:
        print("Huey: not installed (pip install huey): its rows are skipped", file=sys.stderr)
    else:
        for sync, said in (("full", "fsync=True, synchronous=FULL"), ("normal", "synchronous=NORMAL")):
            setup = Setup(f"thread workers, {said}", f"{args.concurrency} threads", "none (one at a time)")
            run = lambda s=sync: huey_run(n, args.concurrency, s)  # noqa: E731
            peers.append(Contender(f"Huey SqliteHuey, {said}", HUEY, setup, run))
    setup = Setup("one loop", "1 thread", f"{prefetch} (claim batch)")
    peers.append(Contender("batched claim+delete loop", LOOP, setup, lambda: loop_run(n, prefetch)))
    return tqadmin, peers


def main() -> int:
    args = parse(arguments(__doc__.splitlines()[0]))
    tqadmin, peers = contenders(args)
    found = groups(tqadmin, peers, args.compare_with)
    results = run_rounds(found, args.rounds)
    title = (
        f"SQLite: {args.jobs} no-op jobs, a fresh file per run, median of {args.rounds} rounds in rotated"
        " order on a shared machine (figures are noisy)"
    )
    return finish("sqlite", args, found, results, TARGETS, title)


if __name__ == "__main__":
    sys.exit(main())
