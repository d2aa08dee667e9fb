"""Worker throughput on the local Redis: tqadmin against Celery, RQ and Dramatiq on Redis, and a raw loop.

One run, same Redis, same machine. Each consumer drains a queue pre-filled with N no-op jobs; its rate is
measured from its first consumed job to the empty queue (start-up excluded), by polling what it has left:

- tqadmin worker (dedup off and on): the stream's length (an entry is deleted when settled);
- Celery on its Redis transport (``--pool solo``, acks_late): the list plus kombu's unacked hash;
- RQ's SimpleWorker (no fork per job): the queue's list plus its started registry;
- Dramatiq's RedisBroker (one process): its message hash (a message leaves it when acked);
- the ceiling, a raw redis-py ``XREADGROUP`` + ``XACK`` loop in batches of the prefetch: the group's lag
  plus pending.

    python bench/worker_redis.py [--jobs N] [--concurrency C] [--dedup-concurrency C] [--prefetch P]

:func:`run` returns the rows (label, jobs per second) and :func:`ratios` the ratios against the targets,
for a report that gathers every broker.
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).parent))  # bench/ is not a package

from drain import (
    APPS,
    CHECKOUT,
    Left,
    Sample,
    arguments,
    bench_path,
    celery_solo,
    drain_rate,
    fill_celery,
    report,
    spawn,
    tqadmin_sample,
    tqadmin_worker,
)

from tqadmin.pipeline.job import new_job
from tqadmin.pipeline.publisher import publish_jobs
from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.registry import plugin_for_url

REDIS_URL = "redis://127.0.0.1:6379/0"
RQ_JOBS_MAX = 5000  # RQ is an order of magnitude slower: fewer jobs give its rate as well

TQ_OFF, TQ_ON = "tqadmin worker, dedup off", "tqadmin worker, dedup on"
CELERY, RQ, DRAMATIQ, RAW = (
    "Celery on Redis, --pool solo, acks_late",
    "RQ SimpleWorker",
    "Dramatiq RedisBroker, 1 process",
    "raw redis-py XREADGROUP + XACK loop",
)


Row = tuple[str, float]
"""A consumer and its jobs per second."""

bench_path()


def tqadmin_redis(
    prefix: str, jobs: int, extra: list[str], queue: str = "tq", tree: Path = CHECKOUT
) -> Sample:
    """`tqadmin worker` (run from the checkout ``tree``) on a Redis stream, its store on the same Redis
    (bench/worker.py uses it too)."""
    from tqadmin_redis.naming import Layout

    client = redis.Redis.from_url(REDIS_URL)
    broker = f"{REDIS_URL}?prefix={prefix}"
    store = f"{REDIS_URL}?prefix={prefix}-store"
    fill_tqadmin(broker, queue, jobs)
    stream = Layout(prefix).queue(queue).stream
    left = Left(lambda: int(client.xlen(stream)))
    try:
        command = tqadmin_worker(broker, store, queue, *extra)
        return tqadmin_sample(left, queue, jobs, command, store, tree)
    finally:
        client.close()


def run(
    jobs: int = 20000, concurrency: int = 8, dedup_concurrency: int = 8, prefetch: int = 256
) -> list[Row]:
    tag = uuid.uuid4().hex[:8]
    client = redis.Redis.from_url(REDIS_URL)
    prefix = f"bench-{tag}"
    broker = f"{REDIS_URL}?prefix={prefix}"
    rows: list[Row] = []
    try:
        from tqadmin_redis.naming import GROUP, Layout

        layout = Layout(prefix)
        for label, extra in (
            (TQ_OFF, ["--no-dedup", "--concurrency", str(concurrency)]),
            (TQ_ON, ["--concurrency", str(dedup_concurrency)]),
        ):
            queue = f"tq{len(rows)}"
            sample = tqadmin_redis(prefix, jobs, [*extra, "--prefetch", str(prefetch)], queue)
            rows.append((label, sample.rate))

        queue = "raw"
        fill_tqadmin(broker, queue, jobs)
        stream = layout.queue(queue).stream

        def raw_left() -> int:
            (group,) = [g for g in client.xinfo_groups(stream) if g["name"] == GROUP.encode()]
            return int(group["lag"] or 0) + int(group["pending"])

        consumer = spawn(
            sys.executable, str(APPS / "redis_stream_consumer.py"), stream, GROUP, str(prefetch), REDIS_URL
        )
        rows.append((RAW, drain_rate(Left(raw_left), queue, jobs, consumer)))

        rows.append((CELERY, celery_rate(f"{prefix}-celery:", jobs, prefetch)))
        rows.append((RQ, rq_rate(client, f"bench_rq_{tag}", min(jobs, RQ_JOBS_MAX))))
        rows.append((DRAMATIQ, dramatiq_rate(client, f"{prefix}-dramatiq", jobs)))
    finally:
        keys = [
            k
            for pattern in (f"{prefix}*", f"rq:*bench_rq_{tag}*")
            for k in client.scan_iter(pattern, count=1000)
        ]
        for start in range(0, len(keys), 1000):
            client.delete(*keys[start : start + 1000])
        client.srem("rq:queues", f"rq:queue:bench_rq_{tag}")
    return rows


def fill_tqadmin(broker: str, queue: str, total: int) -> None:
    with plugin_for_url(broker).transport(BrokerConfig(url=broker, timeout_s=30)) as transport:
        report = publish_jobs(transport, [new_job("noop") for _ in range(total)], queue=queue)
    assert report.all_confirmed, report.error


def celery_rate(keyprefix: str, jobs: int, prefetch: int) -> float:
    """Celery's solo worker on its Redis transport, its keys under ``keyprefix`` (deleted by the caller)."""
    queue = "bench_celery"
    env = {
        "BENCH_QUEUE": queue,
        "BENCH_PREFETCH": str(prefetch),
        "BENCH_BROKER": REDIS_URL,
        "BENCH_KEYPREFIX": keyprefix,
    }
    fill_celery(env, jobs)
    client = redis.Redis.from_url(REDIS_URL)
    left = Left(lambda: int(client.llen(keyprefix + queue)) + int(client.hlen(keyprefix + "unacked")))
    try:
        return drain_rate(left, queue, jobs, celery_solo(queue, env))
    finally:
        client.close()


def rq_rate(client: redis.Redis, queue: str, jobs: int) -> float:
    import rq_app
    from rq import Queue

    rq_queue = Queue(queue, connection=client)
    pipe = client.pipeline()
    for n in range(jobs):
        rq_queue.enqueue(rq_app.noop, n, pipeline=pipe)
    pipe.execute()
    left = Left(lambda: int(client.llen(f"rq:queue:{queue}")) + int(client.zcard(f"rq:wip:{queue}")))
    return drain_rate(left, queue, jobs, spawn(sys.executable, str(APPS / "rq_app.py"), queue, REDIS_URL))


def dramatiq_rate(client: redis.Redis, namespace: str, jobs: int) -> float:
    queue = "bench_dramatiq"
    env = {"BENCH_QUEUE": queue, "BENCH_KEYPREFIX": namespace, "BENCH_REDIS": REDIS_URL}
    os.environ.update(env)
    import dramatiq_redis_app

    for n in range(jobs):
        dramatiq_redis_app.noop.send(n)
    command = [sys.executable, "-m", "dramatiq", "dramatiq_redis_app", "--processes", "1"]
    left = Left(lambda: int(client.hlen(f"{namespace}:{queue}.msgs")))
    return drain_rate(left, queue, jobs, spawn(*command, env=env))


def ratios(rows: list[Row]) -> list[tuple[str, float, float | None]]:
    """(label, ratio, target or None) for the figures the Redis plugin is held to."""
    rate = dict(rows)
    return [
        ("tqadmin dedup off / Celery on Redis", rate[TQ_OFF] / rate[CELERY], 3.0),
        ("tqadmin dedup off / raw XREADGROUP loop", rate[TQ_OFF] / rate[RAW], 0.5),
        ("tqadmin dedup on  / Celery on Redis", rate[TQ_ON] / rate[CELERY], 1.5),
        ("tqadmin dedup off / RQ SimpleWorker", rate[TQ_OFF] / rate[RQ], None),
        ("tqadmin dedup off / Dramatiq on Redis", rate[TQ_OFF] / rate[DRAMATIQ], None),
    ]


def main() -> None:
    args = arguments(__doc__.splitlines()[0]).parse_args()
    rows = run(args.jobs, args.concurrency, args.dedup_concurrency, args.prefetch)
    rq_jobs = min(args.jobs, RQ_JOBS_MAX)
    title = f"{args.jobs} no-op jobs (RQ: {rq_jobs}), Redis on 127.0.0.1, one run on a shared machine"
    report(title, rows, ratios(rows))


if __name__ == "__main__":
    main()
