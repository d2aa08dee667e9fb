"""The worker harness of ``worker_harness.py`` on SQS: the same workers, jobs and effects in Redis, with
moto's server as the broker (its figures are exact, so depths here are counts)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from worker_harness import Pipeline

from tests.support.sqs_server import BROKER_URL, SqsQueues
from tqadmin.config import Settings
from tqadmin.plugin.registry import plugin_for_url


class SqsPipeline(Pipeline):
    def __init__(self, queue: str, logs: Path, queues: SqsQueues) -> None:
        super().__init__(queue, logs)
        self.queues = queues
        queues.names += [queue, self.dlq]

    @property
    def dlq(self) -> str:
        return f"{self.queue}-dlq"

    def start(self, *options: str, broker: str | None = None, verbose: bool = True) -> Any:
        return super().start(*options, broker=broker or BROKER_URL, verbose=verbose)

    def declare(self, queue: str) -> None:
        settings = Settings(broker_url=BROKER_URL, broker_options={"endpoint_url": self.queues.endpoint})
        with plugin_for_url(BROKER_URL).transport(settings.broker_config()) as transport:
            transport.declare(queue)

    def publish_raw(self, bodies: list[bytes]) -> None:
        for body in bodies:
            self.queues.send(self.queue, body.decode())

    def depth(self, queue: str | None = None) -> int:
        return self.queues.depth(queue or self.queue)

    def pending(self) -> int:
        return self.depth()

    def dead_letters(self) -> list[tuple[Any, bytes]]:
        return [(m.get("MessageAttributes", {}), m["Body"].encode()) for m in self.queues.drain(self.dlq)]

    def delete_queues(self) -> None:
        self.queues.close()


@pytest.fixture(name="sqs_pipeline")
def sqs_pipeline_fixture(
    unique: str, tmp_path: Path, sqs_env: str, sqs_queues: SqsQueues
) -> Iterator[SqsPipeline]:
    p = SqsPipeline(f"tqe_{unique}", tmp_path, sqs_queues)
    yield p
    p.cleanup()
