"""Worker throughput, dedup off and on, on every broker the worker supports, against Celery, in one run.

For each broker (``--brokers``: rabbitmq, sqlite, redis) `tqadmin worker` drains a queue pre-filled with N
no-op jobs with the completion store off (``--no-dedup``) and on; beside each rate, the store round trips per
job the worker counted (its last heartbeat's ``store_round_trips`` over N: claims, completion marks,
renewals and heartbeats). The baseline is Celery ``--pool solo`` (acks_late) on RabbitMQ, and on Redis too
where the broker is Redis. Every contender runs ``--rounds`` times in turn and the median is shown (as
bench/move.py does), the order rotated each round, so a burst of load on the shared machine does not fall on
one contender only. Stores: Redis for RabbitMQ and Redis (a prefix of its own per run), the queue's own file
for SQLite.

``--compare-with PATH`` times a change: the tqadmin contenders run from this checkout (after) and from the
checkout at PATH (before, e.g. ``git worktree add ../before BASE``) in the same rounds, each pair in turn
(before first in odd rounds, after first in even ones); a table gives the before and after medians with
their min-max spread, and says whether the after-median lies within the before-spread or above it.

SQS has its own benchmark (bench/worker_sqs.py, on moto's server: API calls per job); the peers of each
broker (Dramatiq, RQ, Huey, raw client loops) are in bench/worker_redis.py and bench/worker_sqlite.py, and for
RabbitMQ here, after the rounds, unless ``--skip-peers``: a raw pika consumer and Dramatiq. The publisher has
its own benchmark (bench/publisher.py).

    python bench/worker.py [--jobs N] [--rounds R] [--brokers rabbitmq,sqlite,redis] [--skip-peers]
                           [--compare-with PATH]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pika
from drain import (
    AMQP,
    APPS,
    CHECKOUT,
    STORE_URL,
    Sample,
    arguments,
    celery_solo,
    delete_store_keys,
    drain_rate,
    fill_celery,
    median,
    print_ratios,
    spawn,
    tqadmin_sample,
    tqadmin_worker,
)
from tqadmin_rabbitmq import RabbitMQPlugin

from tqadmin.pipeline.job import new_job
from tqadmin.pipeline.publisher import publish_jobs
from tqadmin.plugin.base import BrokerConfig

BROKERS = ("rabbitmq", "sqlite", "redis")
TQ_OFF, TQ_ON = "tqadmin worker, dedup off", "tqadmin worker, dedup on"
CELERY, CELERY_REDIS = "Celery --pool solo, acks_late (RabbitMQ)", "Celery on Redis, --pool solo, acks_late"
BEFORE = " [before]"
TRIPS_TARGET = 0.1

Key = tuple[str, str]
"""A contender: its broker and label."""
Group = list[tuple[Key, Callable[[], Sample]]]
"""Contenders that run back to back in a round: one, or the before and after of a tqadmin worker."""


def transport():
    return RabbitMQPlugin().transport(BrokerConfig(url=AMQP, timeout_s=30))


class Broker:
    """One polling connection, and clean-up of every queue the benchmark created."""

    def __init__(self) -> None:
        self.connection = pika.BlockingConnection(pika.URLParameters(AMQP))
        self.channel = self.connection.channel()
        self.created: list[str] = []

    def depth(self, queue: str) -> int:
        return int(self.channel.queue_declare(queue, passive=True).method.message_count)

    def new_queue(self, kind: str) -> str:
        queue = f"bench_{kind}_{uuid.uuid4().hex[:8]}"
        self.created.append(queue)
        return queue

    def delete_all(self) -> None:
        for name in self.created:
            for suffix in ("", ".dlq", ".DQ", ".XQ"):
                self.channel.queue_delete(name + suffix)
        for tier in transport_tiers(self.created):
            self.channel.queue_delete(tier)
        self.connection.close()


def transport_tiers(queues: list[str]) -> list[str]:
    from tqadmin_rabbitmq.naming import tier_queue
    from tqadmin_rabbitmq.tiers import DelayTiers

    return [tier_queue(q, t) for q in queues for t in DelayTiers.up_to(60).tiers_s if t > 0]


def fill_tqadmin(queue: str, total: int) -> float:
    jobs = [new_job("noop") for _ in range(total)]
    started = time.perf_counter()
    with transport() as t:
        report = publish_jobs(t, jobs, queue=queue)
    elapsed = time.perf_counter() - started
    assert report.all_confirmed, report.error
    return total / elapsed


class Run:
    """One benchmark run: the RabbitMQ connection, the store prefix, the options, and clean-up."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.tag = uuid.uuid4().hex[:8]
        self.rabbit = Broker()
        self.runs = 0

    def worker_options(self, dedup: bool) -> list[str]:
        a = self.args
        threads = a.dedup_concurrency if dedup else a.concurrency
        return [
            "--prefetch",
            str(a.prefetch),
            "--concurrency",
            str(threads),
            *([] if dedup else ["--no-dedup"]),
        ]

    def rabbitmq(self, dedup: bool, tree: Path) -> Sample:
        queue = self.rabbit.new_queue("tq")
        fill_tqadmin(queue, self.args.jobs)
        self.runs += 1
        store = f"{STORE_URL}?prefix=bench-{self.tag}-{self.runs}"
        command = tqadmin_worker(AMQP, store, queue, *self.worker_options(dedup))
        return tqadmin_sample(self.rabbit, queue, self.args.jobs, command, store, tree)

    def sqlite(self, dedup: bool, tree: Path) -> Sample:
        from worker_sqlite import tqadmin_rate

        with tempfile.TemporaryDirectory(prefix="bench-sqlite-") as folder:
            return tqadmin_rate(Path(folder) / "queue.db", self.args.jobs, self.worker_options(dedup), tree)

    def redis(self, dedup: bool, tree: Path) -> Sample:
        from worker_redis import tqadmin_redis

        self.runs += 1
        prefix = f"bench-{self.tag}-{self.runs}"
        return tqadmin_redis(prefix, self.args.jobs, self.worker_options(dedup), tree=tree)

    def celery(self) -> Sample:
        queue = self.rabbit.new_queue("celery")
        env = {"BENCH_QUEUE": queue, "BENCH_PREFETCH": str(self.args.prefetch)}
        fill_celery(env, self.args.jobs)
        return Sample(drain_rate(self.rabbit, queue, self.args.jobs, celery_solo(queue, env)))

    def celery_redis(self) -> Sample:
        from worker_redis import celery_rate

        self.runs += 1
        return Sample(
            celery_rate(f"bench-{self.tag}-{self.runs}-celery:", self.args.jobs, self.args.prefetch)
        )

    def contenders(self) -> list[Group]:
        """What runs each round, in this order before rotation: a tqadmin worker from this checkout, and
        with ``--compare-with`` from the other one right beside it."""
        before: Path | None = self.args.compare_with
        found: list[Group] = [[(("rabbitmq", CELERY), self.celery)]]
        for broker in self.args.brokers:
            measure = getattr(self, broker)
            for label, dedup in ((TQ_OFF, False), (TQ_ON, True)):
                group: Group = [((broker, label), lambda m=measure, d=dedup: m(d, CHECKOUT))]
                if before is not None:
                    group.insert(0, ((broker, label + BEFORE), lambda m=measure, d=dedup: m(d, before)))
                found.append(group)
            if broker == "redis":
                found.append([((broker, CELERY_REDIS), self.celery_redis)])
        return found

    def peers(self) -> dict[str, float]:
        n, prefetch = self.args.jobs, str(self.args.prefetch)
        rates: dict[str, float] = {}
        queue = self.rabbit.new_queue("pika")
        fill_tqadmin(queue, n)
        consumer = spawn(sys.executable, str(APPS / "pika_consumer.py"), queue, prefetch)
        rates["raw pika consumer"] = drain_rate(self.rabbit, queue, n, consumer)
        queue = self.rabbit.new_queue("dramatiq")
        fill = f"import dramatiq_app\nfor _ in range({n}): dramatiq_app.noop.send()"
        spawn(sys.executable, "-c", fill, env={"BENCH_QUEUE": queue})().wait()
        dramatiq = spawn(
            sys.executable, "-m", "dramatiq", "dramatiq_app", "--processes", "1", env={"BENCH_QUEUE": queue}
        )
        rates["Dramatiq, 1 process"] = drain_rate(self.rabbit, queue, n, dramatiq)
        return rates

    def close(self) -> None:
        self.rabbit.delete_all()
        delete_store_keys(f"bench-{self.tag}")


def print_table(results: dict[tuple[str, str], Sample], args: argparse.Namespace) -> None:
    print(
        f"\n{args.jobs} no-op jobs, median of {args.rounds} runs in rotated turns on a shared machine"
        f" (figures are noisy); threads: {args.concurrency} dedup off, {args.dedup_concurrency} dedup on;"
        f" prefetch {args.prefetch}\n"
    )
    width = max(len(label) for _, label in results)
    print(f"  {'broker':<9} {'':<{width}}  {'jobs/s':>9}  store round trips/job")
    for (broker, label), sample in results.items():
        trips = "" if sample.trips_per_job is None else f"{sample.trips_per_job:8.3f}"
        print(f"  {broker:<9} {label:<{width}}  {sample.rate:>9,.0f}  {trips}")
    celery = results["rabbitmq", CELERY].rate
    ratios: list[tuple[str, float, float | None]] = []
    for broker in args.brokers:
        off, on = results[broker, TQ_OFF], results[broker, TQ_ON]
        ratios += [
            (f"{broker}: dedup on  / Celery solo", on.rate / celery, 2.0),
            (f"{broker}: dedup on  / dedup off", on.rate / off.rate, 0.7),
            (f"{broker}: dedup off / Celery solo", off.rate / celery, 3.0),
        ]
        if broker == "redis":
            on_redis = results[broker, CELERY_REDIS].rate
            ratios += [
                (f"{broker}: dedup on  / Celery on Redis", on.rate / on_redis, 2.0),
                (f"{broker}: dedup off / Celery on Redis", off.rate / on_redis, 3.0),
            ]
    print_ratios(ratios)
    print("\nstore round trips per job, dedup on")
    for broker in args.brokers:
        trips = results[broker, TQ_ON].trips_per_job or 0.0
        met = "met" if trips <= TRIPS_TARGET else "MISSED"
        print(f"  {broker:<9} {trips:6.3f}  (target <= {TRIPS_TARGET:g}: {met})")


def in_turn(groups: list[Group], round_no: int) -> Group:
    """Round ``round_no``'s order: the groups rotated by one a round, and each pair's order swapped every
    other round, so neither side of a comparison always runs first or right after the same neighbour."""
    shift = round_no % len(groups)
    rotated = groups[shift:] + groups[:shift]
    return [item for group in rotated for item in (group if round_no % 2 == 0 else group[::-1])]


def print_comparison(samples: dict[Key, list[Sample]], args: argparse.Namespace) -> None:
    """Before (``--compare-with``) against after (this checkout): medians, min-max spreads, and the verdict
    the issue asks for: the after-median within the before-spread or above it."""
    print(f"\nbefore: {args.compare_with}\nafter:  {CHECKOUT}\n")
    rows = [key for key in samples if (key[0], key[1] + BEFORE) in samples]
    width = max(len(label) for _, label in rows)
    print(f"  {'broker':<9} {'':<{width}}  {'before':>9} {'(min-max)':>19}  {'after':>9} {'(min-max)':>19}")
    for broker, label in rows:
        before = [s.rate for s in samples[broker, label + BEFORE]]
        after = [s.rate for s in samples[broker, label]]
        was, now = statistics.median(before), statistics.median(after)
        verdict = "SLOWER" if now < min(before) else "above" if now > max(before) else "within"
        print(
            f"  {broker:<9} {label:<{width}}  {was:>9,.0f} {spread(before):>19}"
            f"  {now:>9,.0f} {spread(after):>19}"
            f"  after/before {now / was:5.2f}x  {verdict} the before-spread"
        )


def spread(rates: list[float]) -> str:
    return f"({min(rates):,.0f}-{max(rates):,.0f})"


def main() -> None:
    parser = arguments(__doc__.splitlines()[0])
    parser.set_defaults(jobs=10000)
    parser.add_argument(
        "--rounds", type=int, default=3, help="runs of each contender, in turn (median shown)"
    )
    parser.add_argument(
        "--brokers", default=",".join(BROKERS), help="comma-separated, of " + ", ".join(BROKERS)
    )
    parser.add_argument("--skip-peers", action="store_true", help="no raw pika or Dramatiq runs")
    parser.add_argument(
        "--compare-with",
        type=Path,
        metavar="PATH",
        help="a checkout of tqadmin to time beside this one (before/after medians and spreads)",
    )
    args = parser.parse_args()
    args.brokers = [b.strip() for b in args.brokers.split(",") if b.strip()]
    unknown = sorted(set(args.brokers) - set(BROKERS))
    if unknown:
        parser.error(f"unknown broker {', '.join(unknown)}: choose among {', '.join(BROKERS)}")
    if args.compare_with is not None:
        args.compare_with = args.compare_with.resolve()
        if not (args.compare_with / "tqadmin" / "cli.py").is_file():
            parser.error(f"--compare-with {args.compare_with}: not a checkout of tqadmin (no tqadmin/cli.py)")
    run = Run(args)
    samples: dict[Key, list[Sample]] = {}
    peers: dict[str, float] = {}
    try:
        contenders = run.contenders()
        for round_no in range(args.rounds):
            for (broker, label), measure in in_turn(contenders, round_no):
                sample = measure()
                samples.setdefault((broker, label), []).append(sample)
                trips = (
                    "" if sample.trips_per_job is None else f", {sample.trips_per_job:.3f} round trips/job"
                )
                print(
                    f"  round {round_no + 1}: {broker} {label}: {sample.rate:,.0f} jobs/s{trips}",
                    file=sys.stderr,
                )
        if not args.skip_peers:
            peers = run.peers()
    finally:
        run.close()
    print_table({key: median(found) for key, found in samples.items()}, args)
    if args.compare_with is not None:
        print_comparison(samples, args)
    if peers:
        celery = statistics.median(s.rate for s in samples["rabbitmq", CELERY])
        print("\nRabbitMQ peers, one run\n")
        width = max(map(len, peers))
        for label, rate in peers.items():
            print(f"  {label:<{width}}  {rate:>9,.0f} jobs/s")
        off = statistics.median(s.rate for s in samples.get(("rabbitmq", TQ_OFF), [Sample(0.0)]))
        print_ratios(
            [
                ("tqadmin dedup off / Dramatiq", off / peers["Dramatiq, 1 process"], None),
                ("tqadmin dedup off / raw pika", off / peers["raw pika consumer"], None),
                ("Celery solo / raw pika", celery / peers["raw pika consumer"], None),
            ]
        )


if __name__ == "__main__":
    main()
