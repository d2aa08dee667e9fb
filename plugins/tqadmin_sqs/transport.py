"""The transport face of SQS: declare, publish with an outcome per message, and consume.

A message addressed to queue ``Q`` is sent to the SQS queue named ``Q``; publish has no addressing options.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from tqadmin.errors import TqadminError
from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.capabilities import TransportCapabilities
from tqadmin.plugin.transport import (
    BrokerTransport,
    Consumer,
    Outcome,
    Outgoing,
    PublishResult,
    publish_options,
)
from tqadmin_sqs.capabilities import TRANSPORT_CAPABILITIES
from tqadmin_sqs.client import make_client, where
from tqadmin_sqs.consuming import MAX_VISIBILITY_S, SqsConsumer
from tqadmin_sqs.queues import Queues
from tqadmin_sqs.sending import Sender, ToSend


class SqsTransport(BrokerTransport):
    capabilities: ClassVar[TransportCapabilities] = TRANSPORT_CAPABILITIES

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.place = where(config)
        self.client = make_client(config)
        self.queues = Queues(self.client, self.place)

    def declare(self, queue: str) -> None:
        self.queues.declare(queue)

    def publish_now(
        self, messages: Sequence[Outgoing], *, window: int, options: Mapping[str, str] | None
    ) -> PublishResult:
        publish_options(options, TRANSPORT_CAPABILITIES, "SQS")
        outcomes: list[Outcome | None] = [None] * len(messages)
        first_error: TqadminError | None = None
        resolved: list[tuple[int, ToSend]] = []
        for index, (queue, message) in enumerate(messages):
            try:
                info = self.queues.info(queue)
            except TqadminError as exc:  # no such queue: nothing was sent for it
                outcomes[index] = Outcome.FAILED
                first_error = first_error or exc
                continue
            resolved.append((index, ToSend(info, message)))
        sender = Sender(self.client, self.place, parallel=max(1, min(8, window // 10)))
        for (index, _), sent in zip(resolved, sender.send([o for _, o in resolved]), strict=True):
            outcomes[index] = sent.outcome
            first_error = first_error or sent.error
        return PublishResult(tuple(o or Outcome.FAILED for o in outcomes), first_error)

    def consumer(self, queue: str, *, prefetch: int, lease_s: float) -> Consumer:

        return SqsConsumer(self.queues, self.queues.info(queue), prefetch, lease_s)

    def consumer_warnings(self, queue: str, job_timeout_s: float | None) -> list[str]:
        if job_timeout_s is not None and job_timeout_s <= MAX_VISIBILITY_S:
            return []
        return [
            f"SQS keeps a received message invisible for at most {MAX_VISIBILITY_S // 3600} hours: a run of"
            f" {queue} longer than that is given to another worker too (set --job-timeout below it)"
        ]

    def close(self) -> None:
        self.client.close()
