"""Tick publishing through a broker transport: each job durable, mandatory and confirmed before it counts.

The scheduler marks a tick fired only after this returns, so anything short of a confirmation raises and
leaves the tick pending, to be published again (under the same job id) after a back-off or by the next leader.
"""

from __future__ import annotations

from collections.abc import Iterable

from tqadmin.errors import Nacked
from tqadmin.pipeline.job import Job
from tqadmin.pipeline.publisher import messages_for
from tqadmin.plugin.transport import BrokerTransport


class TransportPublish:
    """``publish(queue, job)`` to ``queue``, declaring each queue once."""

    def __init__(self, transport: BrokerTransport) -> None:
        self._transport = transport
        self._declared: set[str] = set()

    def declare(self, queues: Iterable[str]) -> None:
        for queue in queues:
            if queue not in self._declared:
                self._transport.declare(queue)
                self._declared.add(queue)

    def __call__(self, queue: str, job: Job) -> None:
        self.declare((queue,))
        result = self._transport.publish(messages_for([job], queue), window=1)
        if not result.all_confirmed:
            if result.error is not None:
                raise result.error
            raise Nacked(f"the broker did not confirm {job.id} on queue {queue!r}")
