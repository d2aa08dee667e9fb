"""What every worker benchmark shares: draining a pre-filled queue with a consumer, counting and checking
what it ran, rounds in rotated order, and the report (rates with their matched set-up, medians, spreads,
ratios against each peer's fastest configuration, a JSON copy for bench/summary.py).

Each consumer's task counts its executions in its own process (``worker_apps/counting.py``: the same cost for
every framework, no round trip a job), which writes them to files every 50 ms. A drain:

- starts the consumer and waits until its queue, read the way its framework keeps it, is empty, every job
  has run and the counters have stopped changing, or until nothing has moved for ``STALL_S`` with the
  queue empty;
- stops it (SIGTERM, as a user does) and checks: every job ran at least once, and exactly once where the
  framework promises it; the dead-letter queue is empty; nothing is left ready or unacked after the stop
  (a consumer's unacked messages return to its queue when it goes);
- times it from its first execution (start-up excluded) to the later of its last execution and the moment
  its queue was seen empty (polled every 20 ms).

A run that fails a check has no rate: its row says FAILED and why, it gets no ratio, and the bench exits 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent
APPS = HERE / "worker_apps"
CHECKOUT = HERE.parent  # the source tree a tqadmin worker runs from unless told another
AMQP = "amqp://guest:guest@127.0.0.1:5672/%2F"
STORE_URL = "redis://127.0.0.1:6379/0"
POLL_S = 0.02
QUIET_S = 0.2  # the counters write every 50 ms: unchanged this long, they have said all
STALL_S = 3.0  # the queue is empty and no job has run for this long: the rest will not run
DEADLINE_S = 300.0
BEFORE = " [before]"
TQADMIN = "tqadmin"
LOG = "consumer.log"
CLOCK = "clock: first execution to the last job settled (start-up excluded)"

Start = Callable[[Mapping[str, str]], "subprocess.Popen[bytes]"]
"""Starts a consumer with these variables added to its environment."""


@dataclass(frozen=True, slots=True)
class Setup:
    """How a contender runs, printed beside its rate so that matched peers can be seen to be."""

    pool: str
    workers: str  # "8 threads", "1 process"
    prefetch: str

    def text(self) -> str:
        return f"{self.pool}, {self.workers}, prefetch {self.prefetch}"


@dataclass(frozen=True, slots=True)
class Outcome:
    """One drain: its rate (None when a check failed), what the counters saw, and what failed."""

    rate: float | None
    ran: int
    runs: int
    failures: tuple[str, ...] = ()
    trips_per_job: float | None = None
    dlq_checked: bool = False  # its framework has a dead-letter queue, found empty
    calls_per_job: float | None = None  # the broker's API calls per job, where a bench counts them (SQS)


@dataclass(frozen=True, slots=True)
class Contender:
    """One row: ``peer`` names its family (ratios are against a family's fastest configuration)."""

    label: str
    peer: str
    setup: Setup
    run: Callable[[], Outcome]
    once: bool = False  # its framework promises each job's effect once (checked)


@dataclass(slots=True)
class Counts:
    """What the counters of one drain's processes wrote (``worker_apps/counting.py``)."""

    folder: Path

    def summaries(self) -> list[dict[str, float]]:
        return [json.loads(path.read_text()) for path in self.folder.glob("*.json")]

    def runs(self) -> int:
        return sum(int(s["runs"]) for s in self.summaries())

    def counts(self) -> Counter[str]:
        """Executions of each job id, over every process."""
        found: Counter[str] = Counter()
        for path in self.folder.glob("*.ids"):
            found.update(path.read_text().split())
        return found

    def last_error(self) -> str:
        """The consumer's last line on stderr."""
        path = self.folder / LOG
        lines = path.read_text(errors="replace").strip().splitlines() if path.exists() else []
        return lines[-1].strip() if lines else "nothing on stderr"

    def span(self) -> tuple[float, float] | None:
        """The first and last execution, over every process."""
        found = self.summaries()
        return (min(s["first"] for s in found), max(s["last"] for s in found)) if found else None


def drain(
    total: int,
    start: Start,
    left: Callable[[], int],
    *,
    once: bool = False,
    dlq: Callable[[], int] | None = None,
) -> Outcome:
    """Drain a queue holding ``total`` jobs with the consumer ``start`` starts, then check and time it."""
    with tempfile.TemporaryDirectory(prefix="bench-counts-") as folder:
        counts = Counts(Path(folder))
        process = start({"BENCH_COUNTS": folder})
        try:
            empty_at, failures = settle(total, process, left, counts)
        finally:
            stop_process(process)
        ran, span = counts.counts(), counts.span()
    runs = sum(ran.values())
    if len(ran) < total:
        failures.append(f"{total - len(ran)} of {total} jobs never ran")
    twice = sum(1 for n in ran.values() if n > 1)
    if once and twice:
        failures.append(f"{twice} jobs ran more than once, though dedup promises once")
    dead = dlq() if dlq is not None else 0
    if dead:
        failures.append(f"{dead} jobs in the dead-letter queue")
    remaining = left()
    if remaining:
        failures.append(f"{remaining} jobs left ready or unacked after the stop")
    elapsed = max(span[1], empty_at or 0.0) - span[0] if span is not None else 0.0
    if not failures and elapsed <= 0:
        failures.append(
            f"no time between the first execution and the settle (span {span}, empty at {empty_at})"
        )
    if failures:
        return Outcome(None, len(ran), runs, tuple(failures))
    return Outcome(total / elapsed, len(ran), runs, dlq_checked=dlq is not None)


def settle(
    total: int, process: subprocess.Popen[bytes], left: Callable[[], int], counts: Counts
) -> tuple[float | None, list[str]]:
    """Wait until the queue is empty, every job has run and the counters have stopped changing; when the
    queue was first seen empty, and what went wrong while waiting."""
    empty_at = None
    moved_at, seen = time.monotonic(), -1
    deadline = moved_at + DEADLINE_S
    while True:
        depth, now = left(), time.monotonic()
        if depth == 0 and empty_at is None:
            empty_at = now
        elif depth:
            empty_at = None
        runs = counts.runs()
        if runs != seen:
            moved_at, seen = now, runs
        ended = process.poll() is not None  # a consumer that stops by itself has written its counts
        quiet = ended or now - moved_at > QUIET_S
        if empty_at is not None and runs >= total and quiet and len(counts.counts()) >= total:
            return empty_at, []
        if ended:
            code, said = process.returncode, counts.last_error()
            return empty_at, [f"the consumer exited (code {code}) before the jobs had run: {said}"]
        if now > deadline or (empty_at is not None and now - moved_at > STALL_S):
            return empty_at, [f"stopped waiting: {depth} left in the queue, {runs} of {total} executions"]
        time.sleep(POLL_S)


def stop_process(process: subprocess.Popen[bytes], grace_s: float = 20) -> None:
    """SIGTERM, then SIGKILL if it has not ended within ``grace_s``."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def spawn(*command: str, env: Mapping[str, str] | None = None) -> Start:
    """A consumer's command, run with the worker apps importable; its stderr kept in the drain's folder
    (``consumer.log``, what a failed run quotes), its stdout discarded."""
    base = {**os.environ, "PYTHONPATH": str(APPS), **(env or {})}

    def start(extra: Mapping[str, str]) -> subprocess.Popen[bytes]:
        folder = extra.get("BENCH_COUNTS")
        with open(Path(folder) / LOG if folder else os.devnull, "wb") as log:
            return subprocess.Popen(command, env={**base, **extra}, stdout=subprocess.DEVNULL, stderr=log)

    return start


def tqadmin_worker(broker: str, store: str, queue: str, *extra: str) -> list[str]:
    """`tqadmin worker` on the benchmark's no-op task, as a user runs it (``-P``: tqadmin comes from the
    checkout :func:`checkout_env` names, never from the current directory)."""
    command = [sys.executable, "-P", "-m", "tqadmin.cli", "--broker", broker, "--store", store, "worker"]
    return [*command, "--tasks", "tq_tasks", "--queue", queue, *extra]


def checkout_env(tree: Path) -> dict[str, str]:
    """The environment that runs tqadmin and its plugins from the source tree ``tree`` (ahead of the
    installed copy), so one run can time two checkouts (``--compare-with``)."""
    return {"PYTHONPATH": os.pathsep.join(str(p) for p in (tree, tree / "plugins", APPS))}


def tqadmin_drain(
    total: int, command: Sequence[str], store: str, tree: Path, left: Callable[[], int], **checks: object
) -> Outcome:
    """Drain with a tqadmin worker run from ``tree``; its store round trips per job from the heartbeat it
    left at exit. ``checks``: :func:`drain`'s ``once`` and ``dlq``."""
    from tqadmin.store import open_store

    env = {**checkout_env(tree), **({"BENCH_FAIL": "1"} if os.environ.get("BENCH_FAIL") == "1" else {})}
    outcome = drain(total, spawn(*command, env=env), left, **checks)  # type: ignore[arg-type]
    opened = open_store(store)
    try:
        trips = sum(record.snapshot.store_round_trips for record in opened.workers())
    finally:
        opened.close()
    return dataclasses.replace(outcome, trips_per_job=trips / total)


def tqadmin_setup(threads: int, prefetch: int) -> Setup:
    return Setup("job threads", f"{threads} threads", str(prefetch))


def fill_celery(env: dict[str, str], total: int) -> None:
    """Queue ``total`` no-op Celery tasks (job ``n`` gets argument ``n``) in a process of their own
    (``celery_app`` reads its broker from the environment at import, and one run uses several)."""
    script = (
        "import celery_app\nfor n in range({}): celery_app.noop.apply_async((n,), queue=celery_app.QUEUE)"
    )
    subprocess.run(
        [sys.executable, "-c", script.format(total)],
        env={**os.environ, "PYTHONPATH": str(APPS), **env},
        check=True,
    )


def celery_worker(queue: str, env: dict[str, str], threads: int) -> Start:
    """Celery's worker on the broker ``env`` names: ``--pool solo`` when ``threads`` is 0, else ``--pool
    threads -c threads``."""
    pool = ["--pool", "solo"] if threads == 0 else ["--pool", "threads", "-c", str(threads)]
    command = [sys.executable, "-m", "celery", "-A", "celery_app", "worker", *pool, "-Q", queue]
    command += ["--loglevel", "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat"]
    return spawn(*command, env=env)


def celery_setups(threads: int, prefetch: int) -> list[tuple[int, Setup]]:
    """Celery's two configurations: solo, and threads as many as tqadmin's job threads (prefetch per
    process: ``worker_prefetch_multiplier`` is per slot, so it is set to give the same window)."""
    return [
        (0, Setup("pool solo", "1 process", str(prefetch))),
        (threads, Setup("pool threads", f"{threads} threads", str(prefetch))),
    ]


def arguments(description: str) -> argparse.ArgumentParser:
    """The options the worker benchmarks take."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each contender, order rotated")
    parser.add_argument("--concurrency", type=int, default=8, help="tqadmin worker job threads, dedup off")
    parser.add_argument("--dedup-concurrency", type=int, default=8, help="job threads, dedup on")
    parser.add_argument("--prefetch", type=int, default=256, help="prefetch of every consumer")
    parser.add_argument("--skip-peers", action="store_true", help="tqadmin's rows only")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the results here too")
    parser.add_argument(
        "--compare-with",
        type=Path,
        metavar="PATH",
        help="a checkout of tqadmin to time beside this one (before/after medians and spreads)",
    )
    return parser


def parse(parser: argparse.ArgumentParser) -> argparse.Namespace:
    args = parser.parse_args()
    if args.compare_with is not None:
        args.compare_with = args.compare_with.resolve()
        if not (args.compare_with / "tqadmin" / "cli.py").is_file():
            parser.error(f"--compare-with {args.compare_with}: not a checkout of tqadmin (no tqadmin/cli.py)")
    return args


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
