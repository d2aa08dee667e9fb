"""Worker and publisher throughput on the local RabbitMQ: tqadmin against Celery, Dramatiq and raw pika.

One run, same broker, same machine. Each consumer drains a queue pre-filled with N no-op jobs; its rate is
measured from its first consumed message to the empty queue (start-up excluded), by polling the queue depth.
The publisher is measured publishing N jobs with confirms, against pika's publish-and-wait-each loop.

    python bench/worker.py [--jobs N] [--concurrency C] [--dedup-concurrency C] [--prefetch P]

With dedup on, every job costs a claim and a completion in Redis; the worker's job threads group-commit
those (calls made while a batch is on the wire go out together as the next batch), so more threads mean
fewer round trips per job: that run uses ``--dedup-concurrency`` threads.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pika
from tqadmin_rabbitmq import RabbitMQPlugin

from tqadmin.pipeline.job import new_job
from tqadmin.pipeline.publisher import publish_jobs
from tqadmin.plugin.base import BrokerConfig

AMQP = "amqp://guest:guest@127.0.0.1:5672/%2F"
STORE_URL = "redis://127.0.0.1:6379/0"
HERE = Path(__file__).parent
APPS = HERE / "worker_apps"


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

    def delete_all(self) -> None:
        for name in self.created:
            for suffix in ("", ".dlq", ".DQ", ".XQ"):
                self.channel.queue_delete(name + suffix)
        for tier in transport_tiers(self.created):
            self.channel.queue_delete(tier)
        self.connection.close()


def delete_store_keys(prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(STORE_URL)
    keys = list(client.scan_iter(f"*{prefix}*", count=1000))
    for start in range(0, len(keys), 1000):
        client.delete(*keys[start : start + 1000])
    client.close()


def transport_tiers(queues: list[str]) -> list[str]:
    from tqadmin_rabbitmq.naming import tier_queue
    from tqadmin_rabbitmq.tiers import DelayTiers

    return [tier_queue(q, t) for q in queues for t in DelayTiers.up_to(60).tiers_s if t > 0]


def drain_rate(broker: Broker, queue: str, total: int, start: Callable[[], subprocess.Popen[bytes]]) -> float:
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


def report(title: str, rows: list[tuple[str, float]], ratios: list[tuple[str, float, float | None]]) -> None:
    """Print a worker benchmark's rates and its ratios against their targets (bench/worker_*.py)."""
    print(f"\n{title}\n")
    width = max(len(label) for label, _ in rows)
    for label, rate in rows:
        print(f"  {label:<{width}}  {rate:>9,.0f} jobs/s")
    print("\nratios")
    width = max(len(label) for label, _, _ in ratios)
    for label, ratio, target in ratios:
        goal = f"(target >= {target:g}x: {'met' if ratio >= target else 'MISSED'})" if target else ""
        print(f"  {label:<{width}}  {ratio:5.2f}x  {goal}")


def arguments(description: str) -> argparse.ArgumentParser:
    """The options every worker benchmark takes (bench/worker_redis.py too)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--concurrency", type=int, default=8, help="tqadmin worker job threads, dedup off")
    parser.add_argument("--dedup-concurrency", type=int, default=32, help="job threads, dedup on")
    parser.add_argument("--prefetch", type=int, default=256, help="prefetch of every consumer")
    return parser


def main() -> None:
    args = arguments(__doc__.splitlines()[0]).parse_args()
    n, prefetch = args.jobs, str(args.prefetch)
    tag = uuid.uuid4().hex[:8]
    broker = Broker()
    results: dict[str, float] = {}
    store = f"{STORE_URL}?prefix=bench-{tag}"  # the run's claims and heartbeats, deleted at the end
    tq = [sys.executable, "-m", "tqadmin.cli", "--store", store, "worker", "--tasks", "tq_tasks"]
    tq += ["--prefetch", prefetch]
    try:
        queue = f"bench_pub_{tag}"
        broker.created.append(queue)
        results["tqadmin publish (windowed confirms)"] = fill_tqadmin(queue, n)
        queue = f"bench_pubraw_{tag}"
        broker.created.append(queue)
        results["pika publish, confirm each"] = publish_confirm_each(queue, max(n // 4, 1000))

        queue = f"bench_pika_{tag}"
        broker.created.append(queue)
        fill_tqadmin(queue, n)
        results["raw pika consumer"] = drain_rate(
            broker, queue, n, spawn(sys.executable, str(APPS / "pika_consumer.py"), queue, prefetch)
        )
        for label, extra in (
            ("tqadmin worker, dedup off", ["--no-dedup", "--concurrency", str(args.concurrency)]),
            ("tqadmin worker, dedup on", ["--concurrency", str(args.dedup_concurrency)]),
        ):
            queue = f"bench_tq{len(results)}_{tag}"
            broker.created.append(queue)
            fill_tqadmin(queue, n)
            results[label] = drain_rate(broker, queue, n, spawn(*tq, "--queue", queue, *extra))

        queue = f"bench_celery_{tag}"
        broker.created.append(queue)
        env = {"BENCH_QUEUE": queue, "BENCH_PREFETCH": prefetch}
        os.environ.update(env)
        sys.path.insert(0, str(APPS))
        import celery_app

        for _ in range(n):
            celery_app.noop.apply_async(queue=queue)
        celery = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "celery_app",
            "worker",
            "--pool",
            "solo",
            "-Q",
            queue,
            "--loglevel",
            "WARNING",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ]
        results["Celery --pool solo, acks_late"] = drain_rate(broker, queue, n, spawn(*celery, env=env))

        queue = f"bench_dramatiq_{tag}"
        broker.created.append(queue)
        os.environ["BENCH_QUEUE"] = queue
        import dramatiq_app

        for _ in range(n):
            dramatiq_app.noop.send()
        dramatiq_cmd = [sys.executable, "-m", "dramatiq", "dramatiq_app", "--processes", "1"]
        results["Dramatiq, 1 process"] = drain_rate(
            broker, queue, n, spawn(*dramatiq_cmd, env={"BENCH_QUEUE": queue})
        )
    finally:
        broker.delete_all()
        delete_store_keys(f"bench-{tag}")

    print(f"\n{n} no-op jobs, RabbitMQ on 127.0.0.1, one run on a shared machine (figures are noisy)\n")
    width = max(map(len, results))
    for label, rate in results.items():
        print(f"  {label:<{width}}  {rate:>9,.0f} jobs/s")
    celery = results["Celery --pool solo, acks_late"]
    print("\nratios")
    ratios = [
        ("tqadmin worker dedup off / Celery solo", results["tqadmin worker, dedup off"] / celery, 2.0),
        ("tqadmin worker dedup on  / Celery solo", results["tqadmin worker, dedup on"] / celery, 1.2),
        (
            "tqadmin worker dedup off / Dramatiq",
            results["tqadmin worker, dedup off"] / results["Dramatiq, 1 process"],
            None,
        ),
        (
            "tqadmin worker dedup off / raw pika",
            results["tqadmin worker, dedup off"] / results["raw pika consumer"],
            None,
        ),
        (
            "tqadmin publish / pika confirm-each",
            results["tqadmin publish (windowed confirms)"] / results["pika publish, confirm each"],
            3.0,
        ),
    ]
    for label, ratio, target in ratios:
        goal = f"(target >= {target:g}x: {'met' if ratio >= target else 'MISSED'})" if target else ""
        print(f"  {label:<40}  {ratio:5.2f}x  {goal}")


if __name__ == "__main__":
    main()
