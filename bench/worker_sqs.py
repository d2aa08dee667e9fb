"""`tqadmin worker` on SQS (moto's server), dedup off and on, against a plain boto3 receive-10 /
delete-batch loop, in one run.

Every consumer drains the same kind of queue (created by the plugin: a redrive policy and its DLQ) while
the bench keeps about ``--backlog`` no-op jobs queued until ``--jobs`` were fed: moto's calls slow down with
a queue's length, so a steady backlog keeps the service's cost the same for each. What a consumer has left
is the queue's visible and in-flight messages plus the jobs not fed yet. The worker runs as a user runs it:
visibility heartbeats on (every held message, prefetched ones included, extended every lease / 3), the
plugin's default prefetch; dedup on with a Redis store.

Every job is counted in its consumer's process and checked after the stop (bench/drain.py): all ran, once
each with dedup on, the DLQ empty, nothing left visible or in flight. API calls per job are counted from
moto's request log (one line per call) from the consumer's first take, less the calls the bench itself made
(feeding, polling the depth). Three rounds by default, the order rotated each round; medians and spreads;
``--json PATH`` for bench/summary.py.

    python bench/worker_sqs.py [--jobs N] [--backlog B] [--concurrency C] [--rounds R] [--json PATH]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))  # bench/ is not a package

from drain import (  # noqa: E402
    STORE_URL,
    TQADMIN,
    Contender,
    Outcome,
    Setup,
    arguments,
    delete_store_keys,
    drain,
    parse,
    spawn,
    tqadmin_drain,
    tqadmin_worker,
)
from rounds import Target, finish, groups, run_rounds  # noqa: E402

from tests.support.sqs_server import (  # noqa: E402  # the moto server the tests start, started the same way
    BROKER_URL,
    CREDENTIALS,
    MotoServer,
    client,
)

BATCH = 10
TQ_OFF, TQ_ON, PLAIN = "tqadmin worker, dedup off", "tqadmin worker, dedup on", "plain boto3 loop"
TARGETS: list[Target] = [(TQ_ON, PLAIN, 0.8), (TQ_OFF, PLAIN, None), (TQ_ON, TQ_OFF, 0.7)]
CALLS_TARGET = 0.3


class Bench:
    """One moto server logging every call, the queues the bench made, and the calls it made itself."""

    def __init__(self) -> None:
        self.log = Path(f"/tmp/tqadmin-bench-moto-{os.getpid()}.log")
        self.server = MotoServer(log=self.log)
        self.client = client(self.server.endpoint)
        self.own_calls = 0
        os.environ.update({**CREDENTIALS, "AWS_ENDPOINT_URL": self.server.endpoint})
        self.prefix = f"bench-sqs-{uuid.uuid4().hex[:6]}"
        self.runs = 0

    def calls_so_far(self) -> int:
        return sum(1 for line in self.log.read_text(errors="replace").splitlines() if '"POST / ' in line)

    def declare(self, queue: str) -> str:
        from tqadmin_sqs import SqsPlugin

        from tqadmin.plugin.base import BrokerConfig

        config = BrokerConfig(url=BROKER_URL, options={"endpoint_url": self.server.endpoint})
        with SqsPlugin().transport(config) as transport:
            transport.declare(queue)
        return str(self.client.get_queue_url(QueueName=queue)["QueueUrl"])

    def fresh(self) -> tuple[str, str, str]:
        """A new queue: its name, URL and its DLQ's URL."""
        from tqadmin_sqs import SqsPlugin

        self.runs += 1
        queue = f"{self.prefix}-{self.runs}"
        url = self.declare(queue)
        return queue, url, str(self.client.get_queue_url(QueueName=SqsPlugin().dlq_name(queue))["QueueUrl"])

    def depth(self, url: str) -> int:
        self.own_calls += 1
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        figures = self.client.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
        return sum(int(v) for v in figures.values())

    def feed(self, url: str, count: int, start: int) -> None:
        for first in range(start, start + count, BATCH):
            entries = [
                {"Id": str(i), "MessageBody": json.dumps({"task_type": "noop", "id": f"n-{first + i}"})}
                for i in range(min(BATCH, start + count - first))
            ]
            self.client.send_message_batch(QueueUrl=url, Entries=entries)
            self.own_calls += 1

    def close(self) -> None:
        for url in self.client.list_queues(QueueNamePrefix=self.prefix).get("QueueUrls", []):
            self.client.delete_queue(QueueUrl=url)
        delete_store_keys(self.prefix)
        self.server.stop()
        self.log.unlink(missing_ok=True)


class Feeder:
    """What a consumer has left, read as the bench keeps ``backlog`` jobs queued (fed as it reads), and the
    API calls the consumer made from its first take."""

    def __init__(self, bench: Bench, url: str, jobs: int, backlog: int) -> None:
        self.bench, self.url, self.jobs, self.backlog = bench, url, jobs, min(backlog, jobs)
        bench.feed(url, self.backlog, 0)
        self.fed = self.backlog
        self.calls_at: tuple[int, int] | None = None

    def __call__(self) -> int:
        left = self.bench.depth(self.url)
        if self.calls_at is None and left < self.backlog:
            self.calls_at = (self.bench.calls_so_far(), self.bench.own_calls)
        if self.fed < self.jobs and left < self.backlog:
            more = min(self.jobs - self.fed, self.backlog - left)
            self.bench.feed(self.url, more, self.fed)
            self.fed += more
            left += more
        return left + self.jobs - self.fed

    def with_calls(self, outcome: Outcome) -> Outcome:
        if self.calls_at is None:
            return outcome
        calls, own = self.calls_at
        consumer = self.bench.calls_so_far() - calls - (self.bench.own_calls - own)
        return dataclasses.replace(outcome, calls_per_job=consumer / self.jobs)


def plain_loop(endpoint: str, url: str) -> None:
    """The alternative: receive 10 (long poll), run (count) each, delete the batch; until SIGTERM."""
    from counting import ran

    sqs = client(endpoint)
    running = [True]
    signal.signal(signal.SIGTERM, lambda *_: running.__setitem__(0, False))
    while running[0]:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
        for message in got:
            ran(json.loads(message["Body"])["id"])  # what a consumer does with a job at the least
        if got:
            entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)]
            sqs.delete_message_batch(QueueUrl=url, Entries=entries)


def contenders(
    bench: Bench, args: argparse.Namespace
) -> tuple[Callable[[Path], list[Contender]], list[Contender]]:
    """tqadmin's rows (from a checkout) and the plain loop's."""

    def tqadmin_run(dedup: bool, threads: int, tree: Path) -> Outcome:
        queue, url, dlq = bench.fresh()
        store = f"{STORE_URL}?prefix={bench.prefix}-store{bench.runs}"
        command = tqadmin_worker(BROKER_URL, store, queue, "--concurrency", str(threads))
        feeder = Feeder(bench, url, args.jobs, args.backlog)
        dead = lambda: bench.depth(dlq)  # noqa: E731
        extra = [] if dedup else ["--no-dedup"]
        outcome = tqadmin_drain(args.jobs, [*command, *extra], store, tree, feeder, once=dedup, dlq=dead)
        return feeder.with_calls(outcome)

    def tqadmin(tree: Path) -> list[Contender]:
        found = []
        for label, dedup, threads in (
            (TQ_OFF, False, args.concurrency),
            (TQ_ON, True, args.dedup_concurrency),
        ):
            setup = Setup("job threads", f"{threads} threads", "plugin default")
            run = lambda d=dedup, t=threads: tqadmin_run(d, t, tree)  # noqa: E731
            found.append(Contender(label, TQADMIN, setup, run, once=dedup))
        return found

    def plain() -> Outcome:
        _queue, url, dlq = bench.fresh()
        feeder = Feeder(bench, url, args.jobs, args.backlog)
        start = spawn(sys.executable, __file__, "--plain-loop", bench.server.endpoint, url)
        return feeder.with_calls(drain(args.jobs, start, feeder, dlq=lambda: bench.depth(dlq)))

    peers = (
        []
        if args.skip_peers
        else [Contender(PLAIN, PLAIN, Setup("one loop", "1 thread", "10 (batch)"), plain)]
    )
    return tqadmin, peers


def main() -> int:
    parser = arguments(__doc__.split("\n\n")[0])
    parser.set_defaults(jobs=3000)
    parser.add_argument("--backlog", type=int, default=50, help="jobs kept queued while feeding")
    parser.add_argument("--plain-loop", nargs=2, metavar=("ENDPOINT", "URL"), help=argparse.SUPPRESS)
    args = parse(parser)
    if args.plain_loop:
        plain_loop(*args.plain_loop)
        return 0
    bench = Bench()
    try:
        tqadmin, peers = contenders(bench, args)
        found = groups(tqadmin, peers, args.compare_with)
        results = run_rounds(found, args.rounds)
    finally:
        bench.close()
    title = (
        f"SQS (moto's server on 127.0.0.1): {args.jobs} no-op jobs, {args.backlog} kept queued, median of"
        f" {args.rounds} rounds in rotated order on a shared machine"
    )
    per_job = [(label, "api_calls_per_job", CALLS_TARGET) for label in (TQ_OFF, TQ_ON)]
    return finish("sqs", args, found, results, TARGETS, title, per_job)


if __name__ == "__main__":
    sys.exit(main())
