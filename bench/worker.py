"""Worker throughput, dedup off and on, on every broker the worker supports, against Celery, in one run.

For each broker (``--brokers``: rabbitmq, sqlite, redis) `tqadmin worker` drains a queue pre-filled with N
no-op jobs with the completion store off (``--no-dedup``) and on; beside each rate, the store round trips per
job the worker counted (its last heartbeat's ``store_round_trips`` over N: claims, completion marks,
renewals and heartbeats). The baseline is Celery ``--pool solo`` (acks_late) on RabbitMQ, and on Redis too
where the broker is Redis. Every contender runs ``--rounds`` times in turn and the median is shown (as
bench/move.py does), so a burst of load on the shared machine does not fall on one contender only. Stores:
Redis for RabbitMQ and Redis (a prefix of its own per run), the queue's own file for SQLite.

SQS has its own benchmark (bench/worker_sqs.py, on moto's server: API calls per job); the peers of each
broker (Dramatiq, RQ, Huey, raw client loops) are in bench/worker_redis.py and bench/worker_sqlite.py, and for
RabbitMQ here, after the rounds, unless ``--skip-peers``: the publisher against pika's publish-and-wait-each
loop, a raw pika consumer and Dramatiq.

    python bench/worker.py [--jobs N] [--rounds R] [--brokers rabbitmq,sqlite,redis] [--skip-peers]
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
TRIPS_TARGET = 0.1


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


def publish_confirm_each(queue: str, total: int) -> float:
    connection = pika.BlockingConnection(pika.URLParameters(AMQP))
    channel = connection.channel()
    channel.queue_declare(queue, durable=True)
    channel.confirm_delivery()
    body = new_job("noop").encode()
    started = time.perf_counter()
    for _ in range(total):
        channel.basic_publish("", queue, body, pika.BasicProperties(delivery_mode=2), mandatory=True)
    elapsed = time.perf_counter() - started
    connection.close()
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

    def rabbitmq(self, dedup: bool) -> Sample:
        queue = self.rabbit.new_queue("tq")
        fill_tqadmin(queue, self.args.jobs)
        self.runs += 1
        store = f"{STORE_URL}?prefix=bench-{self.tag}-{self.runs}"
        command = tqadmin_worker(AMQP, store, queue, *self.worker_options(dedup))
        return tqadmin_sample(self.rabbit, queue, self.args.jobs, command, store)

    def sqlite(self, dedup: bool) -> Sample:
        from worker_sqlite import tqadmin_rate

        with tempfile.TemporaryDirectory(prefix="bench-sqlite-") as folder:
            return tqadmin_rate(Path(folder) / "queue.db", self.args.jobs, self.worker_options(dedup))

    def redis(self, dedup: bool) -> Sample:
        from worker_redis import tqadmin_redis

        self.runs += 1
        return tqadmin_redis(f"bench-{self.tag}-{self.runs}", self.args.jobs, self.worker_options(dedup))

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

    def contenders(self) -> dict[tuple[str, str], Callable[[], Sample]]:
        found: dict[tuple[str, str], Callable[[], Sample]] = {("rabbitmq", CELERY): self.celery}
        for broker in self.args.brokers:
            measure = getattr(self, broker)
            found[broker, TQ_OFF] = lambda m=measure: m(False)
            found[broker, TQ_ON] = lambda m=measure: m(True)
            if broker == "redis":
                found[broker, CELERY_REDIS] = self.celery_redis
        return found

    def peers(self) -> dict[str, float]:
        n, prefetch = self.args.jobs, str(self.args.prefetch)
        rates: dict[str, float] = {}
        rates["tqadmin publish (windowed confirms)"] = fill_tqadmin(self.rabbit.new_queue("pub"), n)
        raw = self.rabbit.new_queue("pubraw")
        rates["pika publish, confirm each"] = publish_confirm_each(raw, max(n // 4, 1000))
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
        f"\n{args.jobs} no-op jobs, median of {args.rounds} runs in turn on a shared machine"
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


def main() -> None:
    parser = arguments(__doc__.splitlines()[0])
    parser.set_defaults(jobs=10000)
    parser.add_argument(
        "--rounds", type=int, default=3, help="runs of each contender, in turn (median shown)"
    )
    parser.add_argument(
        "--brokers", default=",".join(BROKERS), help="comma-separated, of " + ", ".join(BROKERS)
    )
    parser.add_argument("--skip-peers", action="store_true", help="no publisher, raw pika or Dramatiq runs")
    args = parser.parse_args()
    args.brokers = [b.strip() for b in args.brokers.split(",") if b.strip()]
    unknown = sorted(set(args.brokers) - set(BROKERS))
    if unknown:
        parser.error(f"unknown broker {', '.join(unknown)}: choose among {', '.join(BROKERS)}")
    run = Run(args)
    samples: dict[tuple[str, str], list[Sample]] = {}
    peers: dict[str, float] = {}
    try:
        contenders = run.contenders()
        for round_no in range(args.rounds):
            for (broker, label), measure in contenders.items():
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
                (
                    "tqadmin publish / pika confirm-each",
                    peers["tqadmin publish (windowed confirms)"] / peers["pika publish, confirm each"],
                    3.0,
                ),
            ]
        )


if __name__ == "__main__":
    main()
