"""Safe transfers on SQS: receive with a visibility timeout, send copies, delete originals only after.

SQS has no read without a receive, so a session holds what it fetched invisible (a visibility timeout it
renews while it runs) and gives back, visible at once, whatever it did not delete when it closes. A
standard queue keeps no strict order, so "oldest first" is as SQS hands them out. A message SQS delivers
again in the same session (its visibility ran out, or a standard queue's repeat) is never handed out twice:
the session keeps its newest receipt, and deletes the repeat of one it already moved.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tqadmin.errors import BrokerError, Nacked, QueueNotFound, Unroutable
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.kit.sessions import HeldSession
from tqadmin.plugin.models import Message
from tqadmin.plugin.transport import Outcome
from tqadmin_sqs.client import translated
from tqadmin_sqs.codec import to_message
from tqadmin_sqs.consuming import RECEIVE_BATCH
from tqadmin_sqs.queues import Queues
from tqadmin_sqs.receiving import RECEIVE_ATTRIBUTES
from tqadmin_sqs.sending import Sender, ToSend
from tqadmin_sqs.settling import settle_batch

VISIBILITY_S = 60  # how long a fetched message stays hidden without renewal (a killed session: back after it)
WAIT_S = 1  # a receive waits this long for messages before the queue counts as drained


@dataclass(frozen=True, slots=True)
class _Token:
    message_id: str
    receipt: str


class SqsTransferSession(HeldSession[_Token]):
    def __init__(self, queues: Queues, queue: str, bounded: bool = True) -> None:
        self._queues = queues
        self._client = queues.client
        self._place = queues.place
        self._info = queues.info(queue)
        with translated(self._place, queue):
            attributes = self._client.get_queue_attributes(
                QueueUrl=self._info.url, AttributeNames=["ApproximateNumberOfMessages"]
            )["Attributes"]
        self._seen: set[str] = set()  # every message id handed out in this session
        self._deleted: set[str] = set()
        count = int(attributes.get("ApproximateNumberOfMessages", 0))
        super().__init__(count, bounded=bounded, lease_s=VISIBILITY_S)

    def take(self, want: int) -> Sequence[Delivery]:
        taken: list[Delivery] = []
        while len(taken) < want:
            fresh = self._receive(min(RECEIVE_BATCH, want - len(taken)))
            if fresh is None:
                break
            taken += fresh
        return taken

    def _receive(self, count: int) -> list[Delivery] | None:
        """New deliveries of one receive (maybe none, when all were repeats); ``None`` when drained."""
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
            token = _Token(str(raw["MessageId"]), str(raw["ReceiptHandle"]))
            if token.message_id in self._deleted:
                repeats.append(token.receipt)
            elif token.message_id in self._seen:
                if token.message_id in self.held:
                    self.held[token.message_id] = token  # its newest receipt is the one that settles it
            else:
                self._seen.add(token.message_id)
                fresh.append(Delivery(to_message(raw), token))
        if repeats:
            self._settle_receipts(repeats, None)
        return fresh

    def token(self, delivery: Delivery) -> _Token:
        assert isinstance(delivery.token, _Token)
        return delivery.token

    def key(self, token: _Token) -> str:
        return token.message_id

    def publish(self, items: Sequence[tuple[str, Message]]) -> None:
        outgoing = []
        for queue, message in items:
            try:
                target = self._queues.info(queue)
            except QueueNotFound:
                raise Unroutable(
                    f"{self._place} has no queue named {queue!r} (create it, or pick another target);"
                    " the originals were left in place"
                ) from None
            outgoing.append(ToSend(target, message, copy=True))
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

    def remove(self, tokens: Sequence[_Token]) -> None:
        self._deleted.update(t.message_id for t in tokens)
        self._settle_receipts([t.receipt for t in tokens], None)

    def give_back(self, tokens: Sequence[_Token]) -> None:
        self._settle_receipts([t.receipt for t in tokens], 0)

    def renew(self, tokens: Sequence[_Token]) -> None:
        """Keep what this session holds hidden while it runs (a refused renewal: that one may come back)."""
        for start in range(0, len(tokens), RECEIVE_BATCH):
            receipts = [t.receipt for t in tokens[start : start + RECEIVE_BATCH]]
            with translated(self._place, self._info.name):
                settle_batch(self._client, self._info.url, receipts, VISIBILITY_S)

    def _settle_receipts(self, receipts: Sequence[str], visibility_s: int | None) -> None:
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
