"""`tqadmin worker` on SQS (moto's server) against a plain boto3 receive-10 / delete-batch loop, same run.

Both consumers drain the same kind of queue (created by the plugin: a redrive policy and its DLQ) while a
feeder keeps about ``--backlog`` no-op jobs queued until ``--jobs`` were fed: moto's calls slow down with a
queue's length, so a steady backlog keeps the service's cost the same for both. The rate is jobs per second
from the first job taken to the last one deleted. The worker runs as a user runs it: dedup on (Redis store),
visibility heartbeats on (every held message, prefetched ones included, extended every lease / 3).

API calls per job are counted from moto's request log (one line per call), less the calls the bench itself
made (feeding, polling the depth): what the consumer cost the service per job, at steady state.

    python bench/worker_sqs.py [--jobs N] [--backlog B] [--concurrency C]

``rows(...)`` returns the figures for another script to print.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the moto server the tests start, started the same way

from drain import STORE_URL, delete_store_keys, stop_process  # noqa: E402 - bench/drain.py, beside this file
from sqs_server import BROKER_URL, CREDENTIALS, MotoServer, client  # noqa: E402

TASKS = HERE / "worker_apps" / "tq_tasks.py"
BATCH = 10


@dataclass(frozen=True)
class Row:
    consumer: str
    jobs: int
    seconds: float
    api_calls: int

    @property
    def rate(self) -> float:
        return self.jobs / self.seconds

    @property
    def calls_per_job(self) -> float:
        return self.api_calls / self.jobs


class Bench:
    """One moto server logging every call, and the queues the bench made."""

    def __init__(self) -> None:
        self.log = Path(f"/tmp/tqadmin-bench-moto-{os.getpid()}.log")
        self.server = MotoServer(log=self.log)
        self.client = client(self.server.endpoint)
        self.own_calls = 0
        self.env = {**os.environ, **CREDENTIALS, "AWS_ENDPOINT_URL": self.server.endpoint}

    def calls_so_far(self) -> int:
        return sum(1 for line in self.log.read_text(errors="replace").splitlines() if '"POST / ' in line)

    def declare(self, queue: str) -> str:
        from tqadmin_sqs import SqsPlugin

        from tqadmin.plugin.base import BrokerConfig

        config = BrokerConfig(url=BROKER_URL, options={"endpoint_url": self.server.endpoint})
        os.environ.update(CREDENTIALS)
        with SqsPlugin().transport(config) as transport:
            transport.declare(queue)
        return str(self.client.get_queue_url(QueueName=queue)["QueueUrl"])

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

    def measure(self, label: str, url: str, jobs: int, backlog: int, start: list[str]) -> Row:
        self.feed(url, backlog, 0)
        fed = backlog
        process = subprocess.Popen(start, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while self.depth(url) >= backlog:  # not started yet
                time.sleep(0.01)
            began, calls_before, own_before = time.perf_counter(), self.calls_so_far(), self.own_calls
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                left = self.depth(url)
                if fed < jobs and left < backlog:
                    more = min(jobs - fed, backlog - left)
                    self.feed(url, more, fed)
                    fed += more
                elif fed >= jobs and left == 0:
                    break
                time.sleep(0.02)
            seconds = time.perf_counter() - began
            calls = self.calls_so_far() - calls_before - (self.own_calls - own_before)
            return Row(label, jobs, seconds, calls)
        finally:
            stop_process(process, grace_s=30)

    def close(self) -> None:
        self.server.stop()
        self.log.unlink(missing_ok=True)


def plain_loop(endpoint: str, url: str) -> None:
    """The alternative: receive 10 (long poll), run each, delete the batch; until SIGTERM."""
    sqs = client(endpoint)
    running = [True]
    signal.signal(signal.SIGTERM, lambda *_: running.__setitem__(0, False))
    while running[0]:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
        for message in got:
            json.loads(message["Body"])  # what a consumer does with a job at the least
        if got:
            entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)]
            sqs.delete_message_batch(QueueUrl=url, Entries=entries)


def rows(jobs: int = 3000, backlog: int = 50, concurrency: int = 8) -> list[Row]:
    """The plain loop's figures, then the worker's, measured in one run on one moto server."""
    bench = Bench()
    prefix = f"bench-sqs-{uuid.uuid4().hex[:6]}"
    try:
        plain_url = bench.declare(f"{prefix}-plain")
        plain = bench.measure(
            "plain boto3 loop",
            plain_url,
            jobs,
            backlog,
            [sys.executable, __file__, "--plain-loop", bench.server.endpoint, plain_url],
        )
        worker_url = bench.declare(f"{prefix}-worker")
        store = f"{STORE_URL}?prefix={prefix}"
        worker = bench.measure(
            "tqadmin worker",
            worker_url,
            jobs,
            backlog,
            [
                *(sys.executable, "-m", "tqadmin.cli", "--broker", BROKER_URL, "--store", store, "worker"),
                *("--queue", f"{prefix}-worker", "--tasks", str(TASKS), "--concurrency", str(concurrency)),
            ],
        )
        return [plain, worker]
    finally:
        for url in bench.client.list_queues(QueueNamePrefix=prefix).get("QueueUrls", []):
            bench.client.delete_queue(QueueUrl=url)
        delete_store_keys(prefix)
        bench.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--backlog", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--plain-loop", nargs=2, metavar=("ENDPOINT", "URL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.plain_loop:
        plain_loop(*args.plain_loop)
        return
    plain, worker = rows(args.jobs, args.backlog, args.concurrency)
    print(
        f"\n{args.jobs} no-op jobs, {args.backlog} kept queued, SQS = moto's server on 127.0.0.1, one run\n"
    )
    for row in (plain, worker):
        print(f"  {row.consumer:<18} {row.rate:>8,.0f} jobs/s   {row.calls_per_job:5.3f} API calls per job")
    ratio = worker.rate / plain.rate
    print("\nratios")
    goal = "met" if ratio >= 0.8 else "MISSED"
    print(f"  worker / plain loop throughput      {ratio:5.2f}x  (target >= 0.8x: {goal})")
    met = "met" if worker.calls_per_job <= 0.3 else "MISSED"
    print(f"  worker API calls per job            {worker.calls_per_job:5.3f}   (target <= 0.3: {met})")


if __name__ == "__main__":
    main()
