"""Safe transfers on SQS: receive with a visibility timeout, send copies, delete originals only after.

SQS has no read without a receive, so a session holds what it fetched invisible (a visibility timeout it
renews while it runs) and gives back, visible at once, whatever it did not delete when it closes. A
standard queue keeps no strict order, so "oldest first" is as SQS hands them out. A message SQS delivers
again in the same session (its visibility ran out, or a standard queue's repeat) is never handed out twice:
the session keeps its newest receipt, and deletes the repeat of one it already moved.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from tqadmin.errors import BrokerError, Nacked, QueueNotFound, Unroutable
from tqadmin.plugin.base import Delivery, TransferSession
from tqadmin.plugin.models import Message
from tqadmin.plugin.transport import Outcome
from tqadmin_sqs.client import translated
from tqadmin_sqs.codec import to_message
from tqadmin_sqs.consuming import RECEIVE_ATTRIBUTES, RECEIVE_BATCH
from tqadmin_sqs.queues import Queues
from tqadmin_sqs.sending import Outgoing, Sender
from tqadmin_sqs.settling import settle_batch

VISIBILITY_S = 60  # how long a fetched message stays hidden without renewal (a killed session: back after it)
RENEW_WITHIN_S = 30
WAIT_S = 1  # a receive waits this long for messages before the queue counts as drained


@dataclass(slots=True)
class _Token:
    message_id: str
    receipt: str
    deadline: float


class SqsTransferSession(TransferSession):
    def __init__(self, queues: Queues, queue: str, bounded: bool = True) -> None:
        self._queues = queues
        self._client = queues.client
        self._place = queues.place
        self._info = queues.info(queue)
        with translated(self._place, queue):
            attributes = self._client.get_queue_attributes(
                QueueUrl=self._info.url, AttributeNames=["ApproximateNumberOfMessages"]
            )["Attributes"]
        self._count = int(attributes.get("ApproximateNumberOfMessages", 0))
        self._bounded = bounded
        self._held: dict[str, _Token] = {}  # message id -> token: handed out, not deleted or given back
        self._seen: set[str] = set()  # every message id handed out in this session
        self._deleted: set[str] = set()
        self._closed = False

    def count_at_start(self) -> int:
        return self._count

    def fetch(self, limit: int) -> Sequence[Delivery]:
        self._renew()
        want = min(limit, self._count - len(self._seen)) if self._bounded else limit
        taken: list[Delivery] = []
        while len(taken) < want:
            fresh = self._receive(min(RECEIVE_BATCH, want - len(taken)))
            if fresh is None:
                break
            taken += fresh
        return taken

    def _receive(self, count: int) -> list[Delivery] | None:
        """New deliveries of one receive (maybe none, when all were repeats); ``None`` when drained."""
        asked_at = time.monotonic()
        with translated(self._place, self._info.name):
            answer = self._client.receive_message(
                QueueUrl=self._info.url,
                MaxNumberOfMessages=count,
                WaitTimeSeconds=WAIT_S,
                VisibilityTimeout=VISIBILITY_S,
                **RECEIVE_ATTRIBUTES,
            )
        received = answer.get("Messages", [])
        if not received:
            return None
        fresh: list[Delivery] = []
        repeats: list[str] = []
        for raw in received:
            message_id = str(raw["MessageId"])
            token = _Token(message_id, str(raw["ReceiptHandle"]), asked_at + VISIBILITY_S)
            if message_id in self._deleted:
                repeats.append(token.receipt)
            elif message_id in self._seen:
                if message_id in self._held:
                    self._held[message_id] = token
            else:
                self._seen.add(message_id)
                self._held[message_id] = token
                fresh.append(Delivery(to_message(raw), token))
        if repeats:
            self._settle(repeats, None)
        return fresh

    def publish_confirmed(self, items: Sequence[tuple[str, Message]]) -> None:
        if not items:
            return
        outgoing = []
        for queue, message in items:
            try:
                target = self._queues.info(queue)
            except QueueNotFound:
                raise Unroutable(
                    f"{self._place} has no queue named {queue!r} (create it, or pick another target);"
                    " the originals were left in place"
                ) from None
            outgoing.append(Outgoing(target, message, copy=True))
        sent = Sender(self._client, self._place).send(outgoing)
        unknown = [s for s in sent if s.outcome is Outcome.UNKNOWN]
        if unknown and unknown[0].error is not None:
            raise unknown[0].error
        refused = [s for s in sent if s.outcome is not Outcome.CONFIRMED]
        if refused:
            raise Nacked(
                f"{len(refused)} of {len(sent)} copies were refused: {refused[0].error};"
                " their originals were left in place"
            )

    def ack(self, deliveries: Sequence[Delivery]) -> None:
        tokens = self._take(deliveries)
        self._deleted.update(t.message_id for t in tokens)
        self._settle([t.receipt for t in tokens], None)

    def release(self, deliveries: Sequence[Delivery]) -> None:
        self._settle([t.receipt for t in self._take(deliveries)], 0)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        held, self._held = list(self._held.values()), {}
        self._settle([t.receipt for t in held], 0)

    def _take(self, deliveries: Sequence[Delivery]) -> list[_Token]:
        taken = []
        for delivery in deliveries:
            token = delivery.token
            assert isinstance(token, _Token)
            current = self._held.pop(token.message_id, None)
            if current is not None:
                taken.append(current)
        return taken

    def _renew(self) -> None:
        """Keep what this session holds hidden while it runs."""
        soon = time.monotonic() + RENEW_WITHIN_S
        due = [t for t in self._held.values() if t.deadline < soon]
        asked_at = time.monotonic()
        for start in range(0, len(due), RECEIVE_BATCH):
            batch = due[start : start + RECEIVE_BATCH]
            with translated(self._place, self._info.name):
                ok, _ = settle_batch(self._client, self._info.url, [t.receipt for t in batch], VISIBILITY_S)
            for index in ok:
                batch[index].deadline = asked_at + VISIBILITY_S

    def _settle(self, receipts: Sequence[str], visibility_s: int | None) -> None:
        refused = 0
        failure = None
        for start in range(0, len(receipts), RECEIVE_BATCH):
            batch = receipts[start : start + RECEIVE_BATCH]
            with translated(self._place, self._info.name):
                ok, code = settle_batch(self._client, self._info.url, batch, visibility_s)
            refused += len(batch) - len(ok)
            failure = failure or code
        if refused:
            what = "delete" if visibility_s is None else "give back"
            raise BrokerError(
                f"{self._place} would not {what} {refused} message(s) of {self._info.name} ({failure});"
                " they come back when their visibility timeout ends (a rerun handles them again)"
            )
