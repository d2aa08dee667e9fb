"""Memory of tqadmin's Celery event listener under 5,000 events a second, on RabbitMQ and on Redis.

Synthetic Celery events (task-sent, -received, -started, -succeeded with a runtime, and worker heartbeats of
200 workers) are published through kombu as Celery's dispatcher publishes them (``celeryev`` topic exchange
on RabbitMQ; the fanout PUBLISH on Redis) at ``--rate`` a second for ``--seconds``, while the admin face
of each broker listens in this process (``celery_events`` on) and is read once a second, as the dashboard
reads it. Every 5 s: events applied, tasks and workers held, resident memory (VmRSS). A fifth of the tasks
never finish (their workers die), so the bounded table of open tasks is what is measured. A real worker on
2 cores sends far fewer: this is the stress case.

    python bench/celery_events.py [--rate 5000] [--seconds 150] [--brokers rabbitmq,redis] [--publishers 3]

Target: flat memory once the open-task table is full (the last sample within 10 % of the one at 60 s).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import time
import uuid
from collections.abc import Callable
from typing import Any

from kombu import Connection, Exchange, Producer
from tqadmin_rabbitmq.admin import RabbitMQAdmin
from tqadmin_redis.admin import RedisAdmin

from tqadmin.plugin.base import BrokerAdmin, BrokerConfig

URLS = {"rabbitmq": "amqp://guest:guest@127.0.0.1:5672/%2F", "redis": "redis://127.0.0.1:6379/0"}
EXCHANGE_TYPES = {"rabbitmq": "topic", "redis": "fanout"}  # Celery's event exchange on each
WORKERS = 200
# By then the table of open tasks is full (a fifth of the tasks never finish: 10,000 of them after about
# 50,000 tasks, 40 s at 5,000 events a second); past it memory must stay where it is.
WARMUP_S = 60.0


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def events(n: int) -> list[tuple[str, dict[str, Any]]]:
    """One task's events (a fifth never finish), or a worker's heartbeat every 50th."""
    if n % 50 == 0:
        host = f"celery@bench-{n // 50 % WORKERS}"
        return [("worker.heartbeat", {"type": "worker-heartbeat", "hostname": host, "freq": 2.0})]
    task, host = f"t-{uuid.uuid4().hex}", f"celery@bench-{n % WORKERS}"
    chain: list[tuple[str, dict[str, Any]]] = [
        ("task.sent", {"type": "task-sent", "uuid": task, "name": f"bench.task{n % 20}", "hostname": "web"}),
        (
            "task.received",
            {"type": "task-received", "uuid": task, "name": f"bench.task{n % 20}", "hostname": host},
        ),
        ("task.started", {"type": "task-started", "uuid": task, "hostname": host}),
    ]
    if n % 5:
        chain.append(
            ("task.succeeded", {"type": "task-succeeded", "uuid": task, "runtime": 0.01, "hostname": host})
        )
    return chain


def publish(broker: str, rate: float, seconds: float) -> int:
    published = 0
    with Connection(URLS[broker]) as connection:
        exchange = Exchange("celeryev", type=EXCHANGE_TYPES[broker], durable=True)
        producer = Producer(connection.channel(), exchange, serializer="json")
        producer.declare()
        started, n = time.monotonic(), 0
        while time.monotonic() - started < seconds:
            for key, event in events(n):
                producer.publish({**event, "timestamp": time.time()}, routing_key=key)
                published += 1
            n += 1
            ahead = published / rate - (time.monotonic() - started)
            if ahead > 0:
                time.sleep(ahead)
    return published


def run(broker: str, rate: float, seconds: float, processes: int) -> None:
    admin_of: dict[str, Callable[[BrokerConfig], BrokerAdmin]] = {
        "rabbitmq": RabbitMQAdmin,
        "redis": RedisAdmin,
    }
    admin = admin_of[broker](BrokerConfig(URLS[broker], celery_events=True))
    try:
        admin.framework_workers()  # starts the listener (and waits one heartbeat interval)
        spawn = multiprocessing.get_context("spawn")  # not a fork of a process with a listener thread
        pool = concurrent.futures.ProcessPoolExecutor(processes, mp_context=spawn)  # as real workers are
        publishers = [pool.submit(publish, broker, rate / processes, seconds) for _ in range(processes)]
        started, samples = time.monotonic(), []
        while not all(publisher.done() for publisher in publishers):
            reading = admin.framework_workers()
            elapsed = time.monotonic() - started
            if not samples or elapsed - samples[-1][0] >= 5:
                tasks = sum(s.done for s in reading.tasks.get("celery", {}).values())
                samples.append((elapsed, rss_mb(), len(reading.workers), tasks))
                _, rss, workers, _ = samples[-1]
                print(f"{broker:8} {elapsed:5.0f} s  RSS {rss:6.1f} MB  workers {workers:4}  done {tasks:7}")
            time.sleep(1)
        published = sum(publisher.result() for publisher in publishers)
        pool.shutdown()
        after_warmup = next((s for s in samples if s[0] >= WARMUP_S), samples[0])
        growth = samples[-1][1] / after_warmup[1] - 1
        print(
            f"{broker}: {published} events published at {published / seconds:.0f}/s;"
            f" RSS {after_warmup[1]:.1f} MB after {WARMUP_S:.0f} s,"
            f" {samples[-1][1]:.1f} MB at the end ({growth:+.1%}): "
            + ("flat" if abs(growth) <= 0.10 else "GROWING")
        )
    finally:
        admin.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=5000.0)
    parser.add_argument("--seconds", type=float, default=150.0)
    parser.add_argument("--brokers", default="rabbitmq,redis")
    parser.add_argument("--publishers", type=int, default=3, help="publishing processes")
    args = parser.parse_args()
    for broker in args.brokers.split(","):
        run(broker, args.rate, args.seconds, args.publishers)


if __name__ == "__main__":
    main()
