"""What every worker benchmark shares: timing a consumer that drains a pre-filled queue, and reading back what
the tqadmin worker told its store (round trips), so each bench/worker*.py measures the same way.

A consumer's rate is measured from its first take to the empty queue (start-up excluded), by polling the
queue's depth every 20 ms the way its own framework keeps it (``Depth``).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

HERE = Path(__file__).parent
APPS = HERE / "worker_apps"
CHECKOUT = HERE.parent  # the source tree a tqadmin worker runs from unless told another
AMQP = "amqp://guest:guest@127.0.0.1:5672/%2F"
STORE_URL = "redis://127.0.0.1:6379/0"


class Depth(Protocol):
    def depth(self, queue: str) -> int:
        """Jobs the consumer has still to settle."""


class Left:
    """A depth read by a function (what a consumer has left, read the way its framework keeps it)."""

    def __init__(self, left: Callable[[], int]) -> None:
        self._left = left

    def depth(self, _queue: str) -> int:
        return self._left()


@dataclass(frozen=True, slots=True)
class Sample:
    """One drain: jobs per second, and for a tqadmin worker its store round trips per job."""

    rate: float
    trips_per_job: float | None = None


def drain_rate(broker: Depth, queue: str, total: int, start: Callable[[], subprocess.Popen[bytes]]) -> float:
    """Start a consumer on a queue holding ``total`` jobs; jobs/s from its first take to the empty queue."""
    process = start()
    try:
        first_at = None
        taken_at_first = 0
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            ready = broker.depth(queue)
            now = time.perf_counter()
            if first_at is None and ready < total:
                first_at, taken_at_first = now, total - ready
            if ready == 0 and first_at is not None:
                return (total - taken_at_first) / (now - first_at)
            time.sleep(0.02)
        raise SystemExit(f"{queue} did not drain")
    finally:
        stop_process(process)


def stop_process(process: subprocess.Popen[bytes], grace_s: float = 20) -> None:
    """SIGTERM, then SIGKILL if it has not ended within ``grace_s``."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def spawn(*command: str, env: dict[str, str] | None = None) -> Callable[[], subprocess.Popen[bytes]]:
    full_env = {**os.environ, "PYTHONPATH": str(APPS), **(env or {})}
    return lambda: subprocess.Popen(
        command, env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def tqadmin_worker(broker: str, store: str, queue: str, *extra: str) -> list[str]:
    """`tqadmin worker` on the benchmark's no-op task, as a user runs it (``-P``: tqadmin comes from the
    checkout :func:`checkout_env` names, never from the current directory)."""
    command = [sys.executable, "-P", "-m", "tqadmin.cli", "--broker", broker, "--store", store, "worker"]
    return [*command, "--tasks", "tq_tasks", "--queue", queue, *extra]


def checkout_env(tree: Path) -> dict[str, str]:
    """The environment that runs tqadmin and its plugins from the source tree ``tree`` (ahead of the
    installed copy), so one run can time two checkouts (bench/worker.py ``--compare-with``)."""
    return {"PYTHONPATH": os.pathsep.join(str(p) for p in (tree, tree / "plugins", APPS))}


def tqadmin_sample(
    broker: Depth, queue: str, total: int, command: Sequence[str], store: str, tree: Path = CHECKOUT
) -> Sample:
    """Drain ``queue`` with a tqadmin worker run from ``tree``; its round trips per job from the heartbeat
    it left at exit."""
    from tqadmin.store import open_store

    rate = drain_rate(broker, queue, total, spawn(*command, env=checkout_env(tree)))
    opened = open_store(store)
    try:
        trips = sum(record.snapshot.store_round_trips for record in opened.workers())
    finally:
        opened.close()
    return Sample(rate, trips / total)


def fill_celery(env: dict[str, str], total: int) -> None:
    """Queue ``total`` no-op Celery tasks in a process of their own (``celery_app`` reads its broker from the
    environment at import, and one run uses several)."""
    script = "import celery_app\nfor _ in range({}): celery_app.noop.apply_async(queue=celery_app.QUEUE)"
    subprocess.run(
        [sys.executable, "-c", script.format(total)],
        env={**os.environ, "PYTHONPATH": str(APPS), **env},
        check=True,
    )


def celery_solo(queue: str, env: dict[str, str]) -> Callable[[], subprocess.Popen[bytes]]:
    """Celery's worker, one process, no pool (``--pool solo``), on the broker ``env`` names."""
    command = [sys.executable, "-m", "celery", "-A", "celery_app", "worker", "--pool", "solo", "-Q", queue]
    command += ["--loglevel", "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat"]
    return spawn(*command, env=env)


def median(samples: Sequence[Sample]) -> Sample:
    trips = [s.trips_per_job for s in samples if s.trips_per_job is not None]
    return Sample(statistics.median(s.rate for s in samples), statistics.median(trips) if trips else None)


def report(title: str, rows: list[tuple[str, float]], ratios: list[tuple[str, float, float | None]]) -> None:
    """Print a worker benchmark's rates and its ratios against their targets."""
    print(f"\n{title}\n")
    width = max(len(label) for label, _ in rows)
    for label, rate in rows:
        print(f"  {label:<{width}}  {rate:>9,.0f} jobs/s")
    print_ratios(ratios)


def print_ratios(ratios: list[tuple[str, float, float | None]]) -> None:
    print("\nratios")
    width = max(len(label) for label, _, _ in ratios)
    for label, ratio, target in ratios:
        goal = f"(target >= {target:g}x: {'met' if ratio >= target else 'MISSED'})" if target else ""
        print(f"  {label:<{width}}  {ratio:5.2f}x  {goal}")


def arguments(description: str) -> argparse.ArgumentParser:
    """The options the worker benchmarks take."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--concurrency", type=int, default=8, help="tqadmin worker job threads, dedup off")
    parser.add_argument("--dedup-concurrency", type=int, default=8, help="job threads, dedup on")
    parser.add_argument("--prefetch", type=int, default=256, help="prefetch of every consumer")
    return parser


def delete_store_keys(prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(STORE_URL)
    keys = list(client.scan_iter(f"*{prefix}*", count=1000))
    for start in range(0, len(keys), 1000):
        client.delete(*keys[start : start + 1000])
    client.close()


def bench_path() -> None:
    """Let a bench script import its siblings and the worker apps (bench/ is not a package)."""
    for folder in (str(HERE), str(APPS)):
        if folder not in sys.path:
            sys.path.insert(0, folder)
