"""What dedup costs a worker per job: claim + complete on the state store, one by one and batched.

One run, same Redis: prints jobs/s and the ratio to the one-by-one Redis path, plus two raw-redis references
measured in the same run (a plain GET+SET pair per job, the least any two-round-trip dedup could cost).

    .venv/bin/python bench/store.py [--jobs 5000] [--batch 50]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import redis

from tqadmin.store import open_store
from tqadmin.store.completion.base import StateStore

REDIS_URL = "redis://127.0.0.1:6379/0"


def one_by_one(store: StateStore, ids: list[str]) -> None:
    for job_id in ids:
        store.complete(store.claim(job_id, "bench", 30))


def batched(size: int) -> Callable[[StateStore, list[str]], None]:
    def run(store: StateStore, ids: list[str]) -> None:
        for start in range(0, len(ids), size):
            store.complete_many(store.claim_many(ids[start : start + size], "bench", 30))

    return run


def raw_get_set(client: redis.Redis, prefix: str, ids: list[str]) -> None:
    for job_id in ids:
        client.get(f"{prefix}:raw:{job_id}")
        client.set(f"{prefix}:raw:{job_id}", 1, ex=60)


def timed(fn: Callable[[], None], jobs: int) -> float:
    start = time.perf_counter()
    fn()
    return jobs / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=50)
    args = parser.parse_args()
    prefix = f"bench{uuid.uuid4().hex[:8]}"
    redis_store = open_store(f"{REDIS_URL}?prefix={prefix}")
    client = redis.Redis.from_url(REDIS_URL)
    rows: list[tuple[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        sqlite_store = open_store(f"sqlite:///{Path(tmp) / 'bench.db'}?prefix={prefix}")
        cases: list[tuple[str, Callable[[list[str]], None]]] = [
            ("redis store, one by one", lambda ids: one_by_one(redis_store, ids)),
            (f"redis store, batches of {args.batch}", lambda ids: batched(args.batch)(redis_store, ids)),
            ("sqlite store, one by one", lambda ids: one_by_one(sqlite_store, ids)),
            (f"sqlite store, batches of {args.batch}", lambda ids: batched(args.batch)(sqlite_store, ids)),
            ("raw redis GET+SET (reference)", lambda ids: raw_get_set(client, prefix, ids)),
        ]
        try:
            for name, case in cases:
                ids = [uuid.uuid4().hex for _ in range(args.jobs)]
                rows.append((name, timed(lambda case=case, ids=ids: case(ids), args.jobs)))  # type: ignore[misc]
        finally:
            redis_store.delete_prefix()  # type: ignore[attr-defined]
            for key in client.scan_iter(match=f"{prefix}:raw:*", count=1000):
                client.delete(key)
            sqlite_store.close()
            redis_store.close()
    base = rows[0][1]
    print(f"{'dedup path (claim + complete per job)':<40} {'jobs/s':>10} {'vs one by one':>14}")
    for name, rate in rows:
        print(f"{name:<40} {rate:>10,.0f} {rate / base:>13.2f}x")


if __name__ == "__main__":
    main()
