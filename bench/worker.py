"""Worker throughput on RabbitMQ, dedup off and on, against its peers matched to tqadmin's set-up, in one run.

`tqadmin worker` drains a queue pre-filled with N no-op jobs with the completion store off (``--no-dedup``)
and on (a Redis store, a prefix of its own per run); beside each rate, the store round trips per job its
last heartbeat counted. Its peers, each set up as tqadmin is and saying so on its row: Celery (acks_late)
``--pool solo`` and ``--pool threads -c N`` with N tqadmin's job threads, the same prefetch window;
Dramatiq, one process with tqadmin's threads and prefetch; a raw pika consumer with the same prefetch.
Ratios are against each peer's fastest configuration. Every job is counted in its worker's process and
checked after the stop (bench/drain.py): all ran, once each with dedup on, the dead-letter queue empty,
nothing left ready or unacked (after the stop a consumer's unacked messages are back in the ready count a
passive declare reads). RabbitMQ's unacked count is not readable live (the management API's figures lag by
its statistics interval), so the clock stops at the later of the last execution and the queue seen empty.

Three rounds by default, the order rotated each round; medians and min-max spreads. ``--compare-with PATH``
times a change: tqadmin's rows run from this checkout (after) and from the checkout at PATH (before, e.g.
``git worktree add ../before BASE``) in the same rounds, each pair in turn. ``--json PATH`` writes the
results for bench/summary.py. ``BENCH_FAIL=1`` makes tqadmin's task fail fatally (the checks must fail).
Other brokers: bench/worker_sqlite.py, bench/worker_redis.py, bench/worker_sqs.py; the publisher has its
own benchmark (bench/publisher.py).

    python bench/worker.py [--jobs N] [--rounds R] [--skip-peers] [--compare-with PATH] [--json PATH]
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pika
import pika.exceptions
from drain import (
    AMQP,
    APPS,
    STORE_URL,
    TQADMIN,
    Contender,
    Outcome,
    Setup,
    arguments,
    celery_setups,
    celery_worker,
    delete_store_keys,
    drain,
    fill_celery,
    parse,
    spawn,
    tqadmin_drain,
    tqadmin_setup,
    tqadmin_worker,
)
from rounds import Target, finish, groups, run_rounds
from tqadmin_rabbitmq import RabbitMQPlugin

from tqadmin.pipeline.job import new_job
from tqadmin.pipeline.publisher import publish_jobs
from tqadmin.plugin.base import BrokerConfig

TQ_OFF, TQ_ON = "tqadmin worker, dedup off", "tqadmin worker, dedup on"
CELERY, DRAMATIQ, PIKA = "Celery", "Dramatiq", "raw pika"
TRIPS_TARGET = 0.1
TARGETS: list[Target] = [
    (TQ_OFF, CELERY, 3.0),
    (TQ_ON, CELERY, 2.0),
    (TQ_ON, TQ_OFF, 0.7),
    (TQ_OFF, DRAMATIQ, None),
    (TQ_OFF, PIKA, 0.9),
]


def transport():
    return RabbitMQPlugin().transport(BrokerConfig(url=AMQP, timeout_s=30))


class Broker:
    """One polling connection, and clean-up of every queue the benchmark created."""

    def __init__(self) -> None:
        self.connection = pika.BlockingConnection(pika.URLParameters(AMQP))
        self.channel = self.connection.channel()
        self.created: list[str] = []

    def ready(self, queue: str) -> int:
        """Messages ready in ``queue`` (a passive declare; 0 when it does not exist)."""
        try:
            return int(self.channel.queue_declare(queue, passive=True).method.message_count)
        except pika.exceptions.ChannelClosedByBroker:  # not found: the channel is closed, open another
            self.channel = self.connection.channel()
            return 0

    def left(self, queue: str) -> Callable[[], int]:
        return lambda: self.ready(queue)

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

    def tqadmin(self, tree: Path) -> list[Contender]:
        a = self.args
        return [
            Contender(
                label,
                TQADMIN,
                tqadmin_setup(threads, a.prefetch),
                lambda d=dedup, t=threads: self.tqadmin_run(d, t, tree),  # type: ignore[misc]
                once=dedup,
            )
            for label, dedup, threads in ((TQ_OFF, False, a.concurrency), (TQ_ON, True, a.dedup_concurrency))
        ]

    def tqadmin_run(self, dedup: bool, threads: int, tree: Path) -> Outcome:
        queue = self.rabbit.new_queue("tq")
        fill_tqadmin(queue, self.args.jobs)
        self.runs += 1
        store = f"{STORE_URL}?prefix=bench-{self.tag}-{self.runs}"
        options = ["--prefetch", str(self.args.prefetch), "--concurrency", str(threads)]
        command = tqadmin_worker(AMQP, store, queue, *options, *([] if dedup else ["--no-dedup"]))
        left, dlq = self.rabbit.left(queue), self.rabbit.left(queue + ".dlq")
        return tqadmin_drain(self.args.jobs, command, store, tree, left, once=dedup, dlq=dlq)

    def peers(self) -> list[Contender]:
        if self.args.skip_peers:
            return []
        a = self.args
        found = [
            Contender(f"Celery {setup.pool}, acks_late", CELERY, setup, lambda t=threads: self.celery(t))  # type: ignore[misc]
            for threads, setup in celery_setups(a.concurrency, a.prefetch)
        ]
        dramatiq = Setup("1 process", f"{a.concurrency} threads", str(a.prefetch))
        found.append(Contender("Dramatiq", DRAMATIQ, dramatiq, self.dramatiq))
        found.append(
            Contender("raw pika consumer", PIKA, Setup("no pool", "1 thread", str(a.prefetch)), self.pika)
        )
        return found

    def celery(self, threads: int) -> Outcome:
        queue = self.rabbit.new_queue("celery")
        per_slot = max(1, self.args.prefetch // max(threads, 1))  # Celery's window is multiplier x slots
        env = {"BENCH_QUEUE": queue, "BENCH_PREFETCH": str(per_slot)}
        fill_celery(env, self.args.jobs)
        return drain(self.args.jobs, celery_worker(queue, env, threads), self.rabbit.left(queue))

    def dramatiq(self) -> Outcome:
        a = self.args
        queue = self.rabbit.new_queue("dramatiq")
        env = {"BENCH_QUEUE": queue, "dramatiq_queue_prefetch": str(a.prefetch)}
        fill = f"import dramatiq_app\nfor n in range({a.jobs}): dramatiq_app.noop.send(n)"
        spawn(sys.executable, "-c", fill, env=env)({}).wait()
        command = ["-m", "dramatiq", "dramatiq_app", "--processes", "1", "--threads", str(a.concurrency)]
        start = spawn(sys.executable, *command, env=env)
        return drain(a.jobs, start, self.rabbit.left(queue), dlq=self.rabbit.left(queue + ".XQ"))

    def pika(self) -> Outcome:
        queue = self.rabbit.new_queue("pika")
        fill_tqadmin(queue, self.args.jobs)
        start = spawn(sys.executable, str(APPS / "pika_consumer.py"), queue, str(self.args.prefetch))
        return drain(self.args.jobs, start, self.rabbit.left(queue))

    def close(self) -> None:
        self.rabbit.delete_all()
        delete_store_keys(f"bench-{self.tag}")


def main() -> int:
    args = parse(arguments(__doc__.splitlines()[0]))
    run = Run(args)
    try:
        found = groups(run.tqadmin, run.peers(), args.compare_with)
        results = run_rounds(found, args.rounds)
    finally:
        run.close()
    title = (
        f"RabbitMQ: {args.jobs} no-op jobs, median of {args.rounds} rounds in rotated order on a shared"
        " machine (figures are noisy)"
    )
    per_job = [(TQ_ON, "store_round_trips_per_job", TRIPS_TARGET)]
    return finish("rabbitmq", args, found, results, TARGETS, title, per_job)


if __name__ == "__main__":
    sys.exit(main())
