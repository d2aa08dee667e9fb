"""Worker throughput on the local Redis: tqadmin against Celery, RQ and Dramatiq on Redis, and a raw loop.

Each consumer drains a queue pre-filled with N no-op jobs, set up as tqadmin is where its framework lets it
(its set-up is printed on its row); what it has left is polled the way it keeps it:

- tqadmin worker (dedup off and on): the stream's length (an entry is deleted when settled); its DLQ stream;
- Celery on its Redis transport (acks_late), ``--pool solo`` and ``--pool threads -c N`` with N tqadmin's job
  threads, the same prefetch window: the list plus kombu's unacked hash;
- RQ's SimpleWorker (no fork per job, one at a time): the queue's list plus its started registry (a job is
  settled in its finished registry); its failed registry must be empty;
- Dramatiq's RedisBroker, one process with tqadmin's threads and prefetch: its message hash; its dead-letter
  set (``.XQ``) must be empty;
- the ceiling, a raw redis-py ``XREADGROUP`` + ``XACK`` loop in batches of the prefetch: the group's lag
  plus pending. It does nothing else (no job threads, no decoding, no telemetry): the most one Python process
  gets out of the stream, not a peer, so its ratio has no target and says how much of the time is Redis's.

Every job is counted in its consumer's process and checked after the stop (bench/drain.py); three rounds by
default, the order rotated each round; medians and min-max spreads; ``--json PATH`` for bench/summary.py.

    python bench/worker_redis.py [--jobs N] [--rounds R] [--concurrency C] [--prefetch P] [--json PATH]
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).parent))  # bench/ is not a package

from drain import (
    APPS,
    TQADMIN,
    Contender,
    Outcome,
    Setup,
    arguments,
    bench_path,
    celery_setups,
    celery_worker,
    drain,
    fill_celery,
    parse,
    spawn,
    tqadmin_drain,
    tqadmin_setup,
    tqadmin_worker,
)
from rounds import Target, finish, groups, run_rounds

from tqadmin.pipeline.job import new_job
from tqadmin.pipeline.publisher import publish_jobs
from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.registry import plugin_for_url

REDIS_URL = "redis://127.0.0.1:6379/0"
RQ_JOBS_MAX = 5000  # RQ is an order of magnitude slower: fewer jobs give its rate as well

TQ_OFF, TQ_ON = "tqadmin worker, dedup off", "tqadmin worker, dedup on"
CELERY, RQ, DRAMATIQ, RAW = (
    "Celery on Redis",
    "RQ SimpleWorker",
    "Dramatiq RedisBroker",
    "raw XREADGROUP loop",
)
TARGETS: list[Target] = [
    (TQ_OFF, CELERY, 3.0),
    (TQ_OFF, RAW, None),
    (TQ_ON, CELERY, 1.5),
    (TQ_ON, TQ_OFF, 0.7),
    (TQ_OFF, RQ, None),
    (TQ_OFF, DRAMATIQ, None),
]

bench_path()


class Run:
    """One benchmark run: a key prefix of its own, a fresh queue a drain, every key deleted at the end."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.tag = uuid.uuid4().hex[:8]
        self.prefix = f"bench-{self.tag}"
        self.client = redis.Redis.from_url(REDIS_URL)
        self.runs = 0

    def fresh(self) -> str:
        self.runs += 1
        return f"q{self.runs}"

    def tqadmin(self, tree: Path) -> list[Contender]:
        a = self.args
        found = []
        for label, dedup, threads in ((TQ_OFF, False, a.concurrency), (TQ_ON, True, a.dedup_concurrency)):
            run = lambda d=dedup, t=threads: self.tqadmin_run(d, t, tree)  # noqa: E731
            found.append(Contender(label, TQADMIN, tqadmin_setup(threads, a.prefetch), run, once=dedup))
        return found

    def tqadmin_run(self, dedup: bool, threads: int, tree: Path) -> Outcome:
        from tqadmin_redis.naming import Layout, dlq_name

        queue = self.fresh()
        broker = f"{REDIS_URL}?prefix={self.prefix}"
        store = f"{REDIS_URL}?prefix={self.prefix}-store{self.runs}"
        fill_tqadmin(broker, queue, self.args.jobs)
        layout = Layout(self.prefix)
        stream, dlq = layout.queue(queue).stream, layout.queue(dlq_name(queue)).stream
        options = ["--concurrency", str(threads), "--prefetch", str(self.args.prefetch)]
        command = tqadmin_worker(broker, store, queue, *options, *([] if dedup else ["--no-dedup"]))
        left, dead = self.counter("xlen", stream), self.counter("xlen", dlq)
        return tqadmin_drain(self.args.jobs, command, store, tree, left, once=dedup, dlq=dead)

    def counter(self, command: str, *keys: str) -> Callable[[], int]:
        """The sum of a Redis length command (``xlen``, ``llen``, ``hlen``, ``zcard``) over ``keys``."""
        return lambda: sum(int(getattr(self.client, command)(key)) for key in keys)

    def peers(self) -> list[Contender]:
        if self.args.skip_peers:
            return []
        a = self.args
        found = [
            Contender(
                f"Celery on Redis, {setup.pool}, acks_late", CELERY, setup, lambda t=threads: self.celery(t)
            )  # type: ignore[misc]
            for threads, setup in celery_setups(a.concurrency, a.prefetch)
        ]
        rq = Setup("SimpleWorker, burst", "1 process", "none (one at a time)")
        dramatiq = Setup("1 process", f"{a.concurrency} threads", str(a.prefetch))
        raw = Setup("one loop", "1 thread", f"{a.prefetch} (read batch)")
        found += [
            Contender(RQ, RQ, rq, self.rq),
            Contender(DRAMATIQ, DRAMATIQ, dramatiq, self.dramatiq),
            Contender(RAW, RAW, raw, self.raw),
        ]
        return found

    def raw(self) -> Outcome:
        from tqadmin_redis.naming import GROUP, Layout

        queue = self.fresh()
        fill_tqadmin(f"{REDIS_URL}?prefix={self.prefix}", queue, self.args.jobs)
        stream = Layout(self.prefix).queue(queue).stream

        def left() -> int:
            (group,) = [g for g in self.client.xinfo_groups(stream) if g["name"] == GROUP.encode()]
            return int(group["lag"] or 0) + int(group["pending"])

        command = [str(APPS / "redis_stream_consumer.py"), stream, GROUP, str(self.args.prefetch), REDIS_URL]
        return drain(self.args.jobs, spawn(sys.executable, *command), left)

    def celery(self, threads: int) -> Outcome:
        """Celery's worker on its Redis transport, its keys under a prefix of their own."""
        keyprefix, queue = f"{self.prefix}-celery{self.fresh()}:", "bench_celery"
        per_slot = max(1, self.args.prefetch // max(threads, 1))  # Celery's window is multiplier x slots
        env = {"BENCH_QUEUE": queue, "BENCH_PREFETCH": str(per_slot), "BENCH_BROKER": REDIS_URL}
        env["BENCH_KEYPREFIX"] = keyprefix
        fill_celery(env, self.args.jobs)
        unacked = keyprefix + "unacked"
        left = lambda: int(self.client.llen(keyprefix + queue)) + int(self.client.hlen(unacked))  # noqa: E731
        return drain(self.args.jobs, celery_worker(queue, env, threads), left)

    def rq(self) -> Outcome:
        import rq_app
        from rq import Queue

        queue, jobs = f"bench_rq_{self.tag}_{self.fresh()}", min(self.args.jobs, RQ_JOBS_MAX)
        rq_queue = Queue(queue, connection=self.client)
        pipe = self.client.pipeline()
        for n in range(jobs):
            rq_queue.enqueue(rq_app.noop, n, pipeline=pipe)
        pipe.execute()
        ready, started = f"rq:queue:{queue}", f"rq:wip:{queue}"
        left = lambda: int(self.client.llen(ready)) + int(self.client.zcard(started))  # noqa: E731
        start = spawn(sys.executable, str(APPS / "rq_app.py"), queue, REDIS_URL)
        return drain(jobs, start, left, dlq=self.counter("zcard", f"rq:failed:{queue}"))

    def dramatiq(self) -> Outcome:
        a = self.args
        queue, namespace = "bench_dramatiq", f"{self.prefix}-dramatiq{self.fresh()}"
        env = {"BENCH_QUEUE": queue, "BENCH_KEYPREFIX": namespace, "BENCH_REDIS": REDIS_URL}
        env["dramatiq_queue_prefetch"] = str(a.prefetch)
        fill = f"import dramatiq_redis_app\nfor n in range({a.jobs}): dramatiq_redis_app.noop.send(n)"
        spawn(sys.executable, "-c", fill, env=env)({}).wait()
        command = [
            "-m",
            "dramatiq",
            "dramatiq_redis_app",
            "--processes",
            "1",
            "--threads",
            str(a.concurrency),
        ]
        start = spawn(sys.executable, *command, env=env)
        dead = self.counter("zcard", f"{namespace}:{queue}.XQ")  # Dramatiq's dead-letter set
        return drain(a.jobs, start, self.counter("hlen", f"{namespace}:{queue}.msgs"), dlq=dead)

    def close(self) -> None:
        patterns = (f"{self.prefix}*", f"rq:*bench_rq_{self.tag}*")
        keys = [k for pattern in patterns for k in self.client.scan_iter(pattern, count=1000)]
        for start in range(0, len(keys), 1000):
            self.client.delete(*keys[start : start + 1000])
        for n in range(1, self.runs + 1):
            self.client.srem("rq:queues", f"rq:queue:bench_rq_{self.tag}_q{n}")
        self.client.close()


def fill_tqadmin(broker: str, queue: str, total: int) -> None:
    with plugin_for_url(broker).transport(BrokerConfig(url=broker, timeout_s=30)) as transport:
        report = publish_jobs(transport, [new_job("noop") for _ in range(total)], queue=queue)
    assert report.all_confirmed, report.error


def main() -> int:
    args = parse(arguments(__doc__.splitlines()[0]))
    run = Run(args)
    try:
        found = groups(run.tqadmin, run.peers(), args.compare_with)
        results = run_rounds(found, args.rounds)
    finally:
        run.close()
    rq_jobs = min(args.jobs, RQ_JOBS_MAX)
    title = (
        f"Redis: {args.jobs} no-op jobs (RQ: {rq_jobs}), median of {args.rounds} rounds in rotated order"
        " on a shared machine (figures are noisy)"
    )
    return finish("redis", args, found, results, TARGETS, title)


if __name__ == "__main__":
    sys.exit(main())
