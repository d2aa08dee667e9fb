"""``tqadmin cron`` whose jobs go to a Redis list, in order, instead of to a broker: for the cron's process
tests, which count job ids in that list to prove each tick was published exactly once across leader kills,
without depending on a broker being up.

Run as ``[*CRON_WITH_SINK, "cron", ...]`` (the CLI's arguments) with
``TQADMIN_CRON_SINK=redis://host:port/db#LIST`` in the environment; ``#LIST?delay=S`` waits ``S`` seconds
before each write, like a slow broker confirm, so that a kill lands between a tick's claim and its publish.
The cron is the product's: only its publish target, the command's ``_publisher``, is this sink.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urldefrag

import redis

from tqadmin.commands.context import CommandContext
from tqadmin.connect.redis_client import translated
from tqadmin.errors import UsageError
from tqadmin.pipeline.job import Job
from tqadmin.show.masking import mask_url

SINK_ENV = "TQADMIN_CRON_SINK"
CRON_WITH_SINK = [sys.executable, str(Path(__file__).resolve())]


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


@contextmanager
def sink_publisher(ctx: CommandContext, queues: set[str]) -> Iterator[RedisListSink]:
    recorder = RedisListSink(os.environ[SINK_ENV], ctx.settings.timeout_s)
    try:
        yield recorder
    finally:
        recorder.close()


if __name__ == "__main__":
    from tqadmin.cli import main
    from tqadmin.commands import cron

    cron._publisher = sink_publisher  # the one seam: where the jobs go
    sys.exit(main())
