"""The worker end-to-end harness on the Redis broker: workers, jobs and dead letters on a Redis stream.

Keys live under a prefix of the test's own (the broker URL's ``?prefix=``), so tests run in parallel and the
clean-up deletes exactly what one test made. ``redis_url`` may name a Redis of the test's own (the restart
test's): broker, store and the tasks' counters then all live there.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis
from tqadmin_redis.naming import Layout
from worker_harness import REDIS_URL, Pipeline

from tqadmin.connect.redis_client import connect


@dataclass(frozen=True)
class Letter:
    """A dead letter as read from the DLQ stream (``headers`` like an AMQP message's properties)."""

    headers: dict[str, Any] = field(default_factory=dict)


class RedisPipeline(Pipeline):
    def __init__(self, queue: str, logs: Path, redis_url: str = REDIS_URL) -> None:
        super().__init__(queue, logs)
        self.redis_url = redis_url
        self.raw: Any = connect(
            redis_url, 10, "the test's Redis", "--broker"
        )  # a cluster client on a cluster
        if not isinstance(self.raw, redis.RedisCluster):
            self.redis = redis.Redis.from_url(redis_url, decode_responses=True)
        self.prefix = f"tqb-{queue}"
        self.broker_url = f"{redis_url}?prefix={self.prefix}"
        self.store_url = f"{redis_url}?prefix={self.store_prefix}"
        self.layout = Layout(self.prefix)
        self.task_env: dict[str, str] = {}

    def worker_env(self) -> dict[str, str]:
        return {"E2E_REDIS_URL": self.redis_url, **self.task_env}

    def publish_raw(self, bodies: list[bytes]) -> None:
        self.declare(self.queue)
        stream = self.layout.queue(self.queue).stream
        for body in bodies:
            self.raw.xadd(stream, {"body": body})

    def declare(self, queue: str) -> None:
        from tqadmin.plugin.base import BrokerConfig
        from tqadmin.plugin.registry import plugin_for_url

        with plugin_for_url(self.broker_url).transport(BrokerConfig(url=self.broker_url)) as transport:
            transport.declare(queue)

    def depth(self, queue: str | None = None) -> int:
        """Entries in the stream (ready or held), as XLEN counts them."""
        return int(self.raw.xlen(self.layout.queue(queue or self.queue).stream))

    def pending(self) -> int:
        """Entries in the work stream and its delay set: everything not yet done or dead."""
        keys = self.layout.queue(self.queue)
        return int(self.raw.xlen(keys.stream)) + int(self.raw.zcard(keys.delay))

    def dead_letters(self) -> list[tuple[Any, bytes]]:
        """Every dead letter (taken for good), oldest first, as ``(Letter(headers), body)``."""
        stream = self.layout.dlq(self.queue).stream
        entries = self.raw.xrange(stream)
        if entries:
            self.raw.xdel(stream, *[entry_id for entry_id, _ in entries])
        return [(Letter(json.loads(fields.get(b"headers", b"{}"))), fields[b"body"]) for _, fields in entries]

    def wait_for(self, condition: Callable[[], bool], timeout_s: float, what: str) -> None:
        try:
            super().wait_for(condition, timeout_s, what)
        except pytest.fail.Exception:
            stream = self.layout.queue(self.queue).stream
            state = {
                "groups": self.raw.xinfo_groups(stream),
                "consumers": self.raw.xinfo_consumers(stream, "tq"),
                "pending": self.raw.xpending_range(stream, "tq", "-", "+", 10),
                "leases": self.raw.hgetall(self.layout.queue(self.queue).consumers),
                "first": self.raw.xrange(stream, count=3),
            }
            pytest.fail(f"gave up waiting for {what}; the stream: {state}")

    def cleanup(self) -> None:
        self.stop_all()
        patterns = (f"{self.prefix}:*", f"{self.key}:*", f"*{self.id_prefix}*", f"*{self.store_prefix}*")
        keys = [key for pattern in patterns for key in self.raw.scan_iter(pattern, count=1000)]
        for start in range(0, len(keys), 1000):
            self.raw.delete(*keys[start : start + 1000])


class ClusterPipeline(RedisPipeline):
    """On a Redis Cluster, where a ``ctx.once`` effect writes keys of the job's own tag: jobs run the
    ``count_tagged`` task, whose run and effect counters are one key per job."""

    def __init__(self, queue: str, logs: Path, redis_url: str) -> None:
        super().__init__(queue, logs, redis_url)
        self.task_env = {"E2E_REDIS_CLUSTER": "1"}

    def _counters(self, kind: str) -> dict[str, int]:
        keys = list(self.raw.scan_iter(f"{self.key}:{kind}:*", count=1000))
        values = self.raw.mget_nonatomic(keys) if keys else []
        return {
            self.short(key.decode().partition("{")[2].rstrip("}")): int(value)
            for key, value in zip(keys, values, strict=True)
        }

    def effects(self) -> dict[str, int]:
        return self._counters("effect")

    def runs(self) -> dict[str, int]:
        return self._counters("run")


@pytest.fixture(name="redis_pipeline")
def redis_pipeline_fixture(unique: str, tmp_path: Path, isolated_env: Path) -> Iterator[RedisPipeline]:
    p = RedisPipeline(f"tqr_{unique}", tmp_path)
    yield p
    p.cleanup()
