"""A publish target for tests and dry runs of the cron: every job appended to a Redis list, in order.

Selected by ``TQADMIN_CRON_SINK=redis://host:port/db#LIST``; ``#LIST?delay=S`` waits ``S`` seconds before each
write, like a slow broker confirm, so that a kill lands between a tick's claim and its publish. The chaos
tests count job ids in that list to prove each tick was published exactly once across leader kills, without
depending on a broker being up. redis-py is imported when a sink is made, so the cron's other modules stay
driver-free.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urldefrag

from tqadmin.errors import UsageError
from tqadmin.masking import mask_url
from tqadmin.pipeline.job import Job
from tqadmin.redis_client import translated

if TYPE_CHECKING:
    import redis

SINK_ENV = "TQADMIN_CRON_SINK"


class RedisListSink:
    """``publish(queue, job)`` that RPUSHes ``{"queue": ..., "job": ...}``; the reply is the confirmation."""

    def __init__(self, url: str, timeout_s: float = 10.0) -> None:
        server, fragment = urldefrag(url)
        key, _, query = fragment.partition("?")
        if not key:
            raise UsageError(f"{SINK_ENV} must name the list after '#': redis://host:6379/0#LIST")
        try:
            self._delay_s = float(parse_qs(query).get("delay", ["0"])[0])
        except ValueError:
            raise UsageError(f"{SINK_ENV}: delay must be a number of seconds") from None
        import redis

        self._where = f"cron sink {mask_url(server)}"
        self._key = key
        self._client: redis.Redis = redis.Redis.from_url(
            server, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, decode_responses=True
        )

    def __call__(self, queue: str, job: Job) -> None:
        if self._delay_s:
            time.sleep(self._delay_s)
        record = json.dumps({"queue": queue, "job": job.to_dict()}, separators=(",", ":"))
        with translated(self._where, SINK_ENV):
            self._client.rpush(self._key, record)

    def close(self) -> None:
        self._client.close()
