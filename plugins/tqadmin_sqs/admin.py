"""The admin face of SQS: figures from GetQueueAttributes, messages through receives.

SQS has no call that lists queues with their figures: a listing is ListQueues (1,000 names a page) and one
GetQueueAttributes per queue, run a few at a time, in daemon threads (:func:`each_of`). Consumers do not
exist on SQS; rates and the age of the oldest message exist only in CloudWatch: those figures are ``None``,
with the reason in the capabilities.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar, cast

import botocore.exceptions

from tqadmin.errors import BrokerError, QueueNotFound
from tqadmin.plugin.base import BrokerAdmin, BrokerConfig, TransferSession
from tqadmin.plugin.capabilities import Capabilities
from tqadmin.plugin.models import ActionReport, DeathRecord, Message, PeekResult, QueueListing, QueueStats
from tqadmin_sqs.capabilities import CAPABILITIES
from tqadmin_sqs.client import codes, make_client, translate, translated, where
from tqadmin_sqs.movetask import dead_letter_sources, run_move_task
from tqadmin_sqs.naming import dlq_name, name_of_arn, name_of_url, origin_of_dlq
from tqadmin_sqs.queues import Queues, redrive_of
from tqadmin_sqs.transfer import SqsTransferSession

PURGE_IN_PROGRESS = frozenset({"PurgeQueueInProgress", "AWS.SimpleQueueService.PurgeQueueInProgress"})
PARALLEL = 8  # GetQueueAttributes calls in flight during a listing
T = TypeVar("T")
FIGURES = [
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
    "RedrivePolicy",
    "FifoQueue",
]


class SqsAdmin(BrokerAdmin):
    capabilities: ClassVar[Capabilities] = CAPABILITIES

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.place = where(config)
        self.queues = Queues(make_client(config), self.place)

    # -- figures -------------------------------------------------------------------------------------------

    def list_queues(self) -> QueueListing:
        urls = self._queue_urls()
        found = [a for a in each_of(self._figures, urls, PARALLEL, "tq-sqs-list") if a is not None]
        by_name = {name_of_url(url): attributes for url, attributes in found}
        stats = [self._stats(name, attributes, by_name) for name, attributes in sorted(by_name.items())]
        return QueueListing(tuple(stats), broker=self.place)

    def _queue_urls(self) -> list[str]:
        urls: list[str] = []
        with translated(self.place):
            for page in self.queues.client.get_paginator("list_queues").paginate(
                PaginationConfig={"PageSize": 1000}
            ):
                urls += page.get("QueueUrls", [])
        return urls

    def _figures(self, url: str) -> tuple[str, dict[str, Any]] | None:
        """A queue's attributes; ``None`` when it was deleted since it was listed."""
        try:
            answer = self.queues.client.get_queue_attributes(QueueUrl=url, AttributeNames=FIGURES)
        except Exception as exc:
            error = translate(exc, self.place, name_of_url(url))
            if isinstance(error, QueueNotFound):
                return None
            raise error from None
        return url, dict(answer.get("Attributes", {}))

    @staticmethod
    def _stats(name: str, attributes: dict[str, Any], every: dict[str, dict[str, Any]]) -> QueueStats:
        ready = int(attributes.get("ApproximateNumberOfMessages", 0))
        unacked = int(attributes.get("ApproximateNumberOfMessagesNotVisible", 0))
        delayed = int(attributes.get("ApproximateNumberOfMessagesDelayed", 0))
        target, _ = redrive_of(attributes)
        dlq = target or (dlq_name(name) if dlq_name(name) in every else None)
        dlq_figures = every.get(dlq) if dlq else None
        return QueueStats(
            name=name,
            messages=ready + unacked + delayed,
            ready=ready,
            unacked=unacked,
            consumers=None,
            dlq=dlq,
            dlq_messages=(
                int(dlq_figures.get("ApproximateNumberOfMessages", 0))
                + int(dlq_figures.get("ApproximateNumberOfMessagesNotVisible", 0))
                if dlq_figures is not None
                else None
            ),
            kind="fifo" if str(attributes.get("FifoQueue", "")).lower() == "true" else "standard",
            delayed=delayed,
        )

    def queue_exists(self, queue: str) -> bool:
        return self.queues.exists(queue)

    # -- messages ------------------------------------------------------------------------------------------

    def peek(self, queue: str, count: int) -> PeekResult:
        """Receive up to ``count`` messages (hidden while the look lasts, so each is seen once), then make
        them visible again at once."""
        info = self.queues.info(queue)
        messages: list[Message] = []
        with SqsTransferSession(self.queues, queue, bounded=False) as session:
            while len(messages) < count:
                taken = session.fetch(count - len(messages))
                if not taken:
                    break
                messages += [d.message for d in taken]
        messages.sort(key=_sent_order)
        risk = self.peek_risk(queue)
        cost = self.capabilities.peek_cost + (f"; {risk}" if risk else "")  # the queue name as it is: data
        return PeekResult(queue, tuple(messages), cost, delivery_limit=info.max_receive_count)

    def peek_risk(self, queue: str) -> str | None:
        info = self.queues.info(queue)
        if info.max_receive_count is None:
            return None
        return (
            f"{queue}'s redrive policy moves a message to {info.dlq} once it has been received"
            f" {info.max_receive_count} times, and each look is a receive: looking can dead-letter a message"
            " that never ran"
        )

    def open_transfer(self, queue: str) -> TransferSession:
        return SqsTransferSession(self.queues, queue)

    def purge(self, queue: str) -> int:
        info = self.queues.info(queue)
        with translated(self.place, queue):
            figures = self.queues.client.get_queue_attributes(QueueUrl=info.url, AttributeNames=FIGURES[:3])
        count = sum(int(v) for v in figures.get("Attributes", {}).values())
        try:
            self.queues.client.purge_queue(QueueUrl=info.url)
        except Exception as exc:
            if isinstance(exc, botocore.exceptions.ClientError) and codes(exc) & PURGE_IN_PROGRESS:
                raise BrokerError(
                    f"{queue} was purged less than 60 s ago, and SQS allows one purge of a queue every 60 s:"
                    " nothing was purged now; try again in a minute"
                ) from None
            raise translate(exc, self.place, queue) from None
        return count

    def server_side_replay(
        self, dlq: str, target: str | None, progress: Callable[[str], None]
    ) -> ActionReport | None:
        """An SQS message move task out of ``dlq``: to ``target``, else to the one queue whose redrive
        policy names ``dlq``. ``None`` (the client path) where the service has no move tasks, where several
        queues share ``dlq``, or for a ``Q-dlq`` that no redrive policy names (tqadmin's DLQ of a queue the
        user made without one). A queue that is no DLQ at all is refused, and nothing moves."""
        info = self.queues.info(dlq)
        sources = dead_letter_sources(self.queues, info)
        if not sources:
            origin = origin_of_dlq(dlq)
            if origin is not None and self.queues.exists(origin):
                return None
            raise BrokerError(
                f"{dlq} is not a dead-letter queue: no queue's redrive policy names it, nor is it a queue's"
                " Q-dlq; nothing was moved (move its messages with `tqadmin move`)"
            )
        if target is None and len(sources) > 1:
            return None
        destination = self.queues.info(target if target is not None else name_of_url(sources[0]))
        return run_move_task(self.queues, info, destination, progress)

    def deaths(self, message: Message) -> tuple[DeathRecord, ...]:
        """A message SQS itself moved to a DLQ (its redrive policy's maxReceiveCount) names its source."""
        source = message.properties.get("DeadLetterQueueSourceArn")
        if not source:
            return ()
        return (
            DeathRecord(
                queue=name_of_arn(str(source)),
                reason="maxReceiveCount",
                count=message.delivery_count,
                details=(("moved by", "the SQS redrive policy"),),
            ),
        )

    def close(self) -> None:
        self.queues.client.close()


def _sent_order(message: Message) -> tuple[int, int]:
    return int(message.properties.get("SentTimestamp", 0)), int(
        message.properties.get("SequenceNumber", 0) or 0
    )


def each_of(work: Callable[[str], T], items: Sequence[str], parallel: int, name: str) -> list[T]:
    """``work(item)`` for every item, ``parallel`` at a time, in order; the first item's error (in their
    order) is raised, and no item is started after one failed. The threads are daemons, not a
    ``ThreadPoolExecutor``'s: Python's exit joins those, and they would go on through every item left, so a
    process that leaves a listing behind in a daemon thread (the exporter on SIGTERM) would wait for the
    rest of a listing of 10,000 queues."""
    results: list[T | None] = [None] * len(items)
    errors: dict[int, BaseException] = {}
    lock = threading.Lock()
    indexes = iter(range(len(items)))

    def run() -> None:
        while True:
            with lock:
                index = None if errors else next(indexes, None)
            if index is None:
                return
            try:
                results[index] = work(items[index])
            except BaseException as exc:  # raised by the caller's thread, below
                with lock:
                    errors[index] = exc

    threads = [threading.Thread(target=run, name=name, daemon=True) for _ in range(min(parallel, len(items)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[min(errors)]
    return cast("list[T]", results)  # every item has its result when none failed
