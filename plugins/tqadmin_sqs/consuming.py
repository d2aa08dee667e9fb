"""The worker's side of SQS: long-poll receives, batched deletes, visibility kept alive, and copies.

A received message stays this consumer's while its visibility timeout runs (``lease_s``, set on every
receive, so the queue's own timeout is left as the user configured it). The worker's monitor extends the
visibility of everything it holds, prefetched messages included, through :meth:`SqsConsumer.extend`
(ChangeMessageVisibilityBatch), so a job longer than the timeout runs once. The consumer counts a
delivery's deadline from the answer that brought it, less a margin; once that passed (or SQS refused to
extend it) the delivery is no longer ours and is never settled: SQS already gave it back, perhaps to another
consumer, and deleting it then would delete someone else's work (moto would do it; AWS might not). Those
deadlines, the window and the renewal are the shared :class:`~tqadmin.plugin.leased.LeasedConsumer`'s; acks
and releases go to :class:`~tqadmin_sqs.settling.Settler`, which sends them in SQS's batches of ten.

Retries and dead letters are copies: sent first (confirmed by SQS), the original deleted after. A retry
waits in ``DelaySeconds`` (whole seconds, up to 900, rounded up); a longer one is sent with 900 and an
``x-tq-not-before`` attribute, and a copy that comes back before it is due is sent again for the rest of
its wait without being handed out. FIFO queues take no per-message delay: there a retry's copy carries the
not-before time and is hidden again by visibility when it comes early, which keeps its group waiting, as
FIFO order wants.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence
from queue import Empty, SimpleQueue
from typing import Any

from tqadmin.errors import NotAuthorized, QueueNotFound, TqadminError
from tqadmin.masking import shown
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.leased import LeasedConsumer
from tqadmin.plugin.models import HEADER_RETRY_COUNT, Message
from tqadmin.plugin.transport import Outcome
from tqadmin_sqs.capabilities import MAX_DELAY_S
from tqadmin_sqs.client import LONG_POLL_S, translate
from tqadmin_sqs.codec import NOT_BEFORE, due_in, not_before_header, to_message, without
from tqadmin_sqs.queues import QueueInfo, Queues
from tqadmin_sqs.sending import Outgoing, Sender
from tqadmin_sqs.settling import Settler, settle_batch

log = logging.getLogger("tqadmin.worker")

MAX_VISIBILITY_S = 43_200  # 12 hours: the most SQS keeps a received message invisible
RECEIVE_BATCH = 10
WAIT_S = 5  # a long poll's wait: stop() is honoured within it
SAFETY_S = 1.0  # a delivery counts as lost this long before its deadline (a tenth of short leases)
RECEIVE_ATTRIBUTES: dict[str, Any] = {
    "MessageSystemAttributeNames": ["All"],
    "MessageAttributeNames": ["All"],
}


def visibility_for(seconds: float) -> int:
    return max(1, min(MAX_VISIBILITY_S, math.ceil(seconds)))


def delay_for(seconds: float) -> int:
    """Whole seconds of DelaySeconds for a wait: a fraction rounds up (the declared precision)."""
    return max(0, math.ceil(seconds - 1e-9))


class SqsConsumer(LeasedConsumer[str]):
    loop_name = "the SQS consumer's loop"
    extend_batch = RECEIVE_BATCH
    transient = ()  # the receiver waits out what is transient; what it hands over ends the run
    fatal = ()

    def __init__(self, queues: Queues, queue: QueueInfo, prefetch: int, lease_s: float) -> None:
        self.visibility_s = visibility_for(lease_s)
        super().__init__(prefetch, lease_s, safety_s=min(SAFETY_S, self.visibility_s / 10))
        self.client = client = queues.client
        self.place = place = queues.place
        self.queue = queue
        self.queues = queues
        self._sender = Sender(client, place, parallel=1)
        self._settler: Settler | None = None
        self._inbox: SimpleQueue[list[Delivery] | TqadminError] = SimpleQueue()

    # -- the I/O thread and its receiver ------------------------------------------------------------------

    def opened(self) -> None:
        """The polls run in a receiver thread of their own so that a stop is honoured at once, not after
        the poll in flight: what that poll still brings is given back. The receiver and the settler run
        under the base's :class:`~tqadmin.plugin.background.Background`: either dying ends the run."""
        self._settler = Settler(self.client, self.place, self.queue.url, self.queue.name, self.background)
        self.background.start("tq-sqs-receive", lambda: self._receive_loop(self._inbox))

    def closed(self) -> None:
        self._stop.set()
        if self._settler is not None:
            self._settler.close()

    def fetch(self, room: int) -> list[Delivery]:
        """What the receiver brought, less the copies that came before they are due (and everything once
        stopping: given back)."""
        try:
            received = self._inbox.get(timeout=0.1)
        except Empty:
            return []
        if isinstance(received, TqadminError):
            raise received
        return [d for d in received if self._due(d)]

    def _receive_loop(self, inbox: SimpleQueue[list[Delivery] | TqadminError]) -> None:
        while not self._stop.is_set():
            room = self._room()
            if room == 0:
                continue
            try:
                received = self._receive(room)
            except (NotAuthorized, QueueNotFound) as exc:
                inbox.put(exc)
                return
            except TqadminError as exc:
                if self._stop.is_set():  # stopped while the poll was out: nothing to hand out any more
                    return
                delay = self.retrying.failed()
                log.warning("receive from %s failed (%s); again in %.1f s", self.queue.name, exc, delay)
                self.retrying.wait(delay)
                continue
            self.retrying.succeeded()
            if self._stop.is_set():  # the run loop may be gone: give them back from here
                self._give_back(received)
                return
            inbox.put(received)

    def _room(self) -> int:
        """How many to receive now, waiting for room: while jobs run, receives wait until a batch of ten
        (or half the prefetch, when smaller) fits, so that a busy worker pays one receive per batch."""
        most = min(RECEIVE_BATCH, self.prefetch)
        least = min(most, max(1, self.prefetch // 2))
        room = self.room()
        if room < least:
            self.pause(0.5)
            return 0
        return min(most, room)

    def _receive(self, count: int) -> list[Delivery]:
        try:
            answer = self.client.receive_message(
                QueueUrl=self.queue.url,
                MaxNumberOfMessages=count,
                WaitTimeSeconds=min(WAIT_S, LONG_POLL_S),
                VisibilityTimeout=self.visibility_s,
                **RECEIVE_ATTRIBUTES,
            )
        except Exception as exc:
            raise translate(exc, self.place, self.queue.name) from None
        # A long poll hands messages over when it answers, so the visibility runs from about now; the
        # safety margin covers the answer's way back. They count against the prefetch from now on.
        deliveries = [
            Delivery(to_message(raw), str(raw["ReceiptHandle"])) for raw in answer.get("Messages", [])
        ]
        self.hold(deliveries, time.monotonic() + self.visibility_s)
        return deliveries

    def _due(self, delivery: Delivery) -> bool:
        """Whether to hand ``delivery`` out: not once stopping (given back), nor before its not-before time
        (deferred)."""
        wait_s = 0.0 if self._stop.is_set() else due_in(delivery.message)
        if not self._stop.is_set() and wait_s <= 0:
            return True
        self.take(delivery)
        if wait_s > 0:
            self._defer(delivery, wait_s)
        else:
            self._give_back([delivery])
        return False

    def _defer(self, delivery: Delivery, wait_s: float) -> None:
        """A copy that came before it is due: hidden again (FIFO) or sent again for the rest of its wait."""
        receipt = self._receipt(delivery)
        assert self._settler is not None
        if self.queue.fifo:
            self._settler.change_visibility([receipt], visibility_for(wait_s))
            return
        copy = Outgoing(self.queue, delivery.message, delay_for(min(wait_s, MAX_DELAY_S)), copy=True)
        if self._sender.send([copy])[0].outcome is Outcome.CONFIRMED:
            self._settler.delete(receipt, wait=True)

    # -- any thread ----------------------------------------------------------------------------------------

    @staticmethod
    def _receipt(delivery: Delivery) -> str:
        """A delivery's token: the receipt handle of the receive that brought it."""
        token = delivery.token
        assert isinstance(token, str)
        return token

    def ack(self, delivery: Delivery) -> bool:
        token = self.take(delivery)
        if not isinstance(token, str) or self._settler is None:
            return False
        self._settler.delete(token)
        return True

    def release(self, deliveries: Sequence[Delivery]) -> None:
        taken = [t for t in map(self.take, deliveries) if isinstance(t, str)]
        if taken and self._settler is not None:
            self._settler.change_visibility(taken, 0)

    def _give_back(self, deliveries: Sequence[Delivery]) -> None:
        """Deliveries never handed out (received while stopping): visible again at once."""
        receipts = [self._receipt(d) for d in deliveries]
        for start in range(0, len(receipts), RECEIVE_BATCH):
            try:
                settle_batch(self.client, self.queue.url, receipts[start : start + RECEIVE_BATCH], 0)
            except Exception as exc:  # they come back when their visibility timeout ends anyway
                log.warning(
                    "could not give back messages of %s: %s", self.queue.name, translate(exc, self.place)
                )

    def renew(self, deliveries: Sequence[Delivery], lease_s: float) -> list[Delivery]:
        receipts = [self._receipt(d) for d in deliveries]
        try:
            ok, _ = settle_batch(self.client, self.queue.url, receipts, visibility_for(lease_s))
        except Exception as exc:
            raise translate(exc, self.place, self.queue.name) from None
        return [d for index, d in enumerate(deliveries) if index not in ok]

    def retry_later(self, delivery: Delivery, delay_s: float, headers: Mapping[str, Any]) -> bool:
        if not self.alive(delivery):
            return False
        message = delivery.message
        updated = {**without(message.headers, [NOT_BEFORE]), **headers}
        delay = delay_for(delay_s)
        if delay and (self.queue.fifo or delay > MAX_DELAY_S):
            updated.update(not_before_header(time.time() + delay))
        copy = Message(message.body, updated, message.properties, message.id)
        send_delay = 0 if self.queue.fifo else min(delay, int(MAX_DELAY_S))
        return self._copy_then_delete(delivery, Outgoing(self.queue, copy, send_delay, copy=True))

    def dead_letter(self, delivery: Delivery, headers: Mapping[str, Any]) -> bool:
        if not self.alive(delivery):
            return False
        message = delivery.message
        # The DLQ copy drops what only a retry needs: the retry count (a replay, even SQS's own redrive,
        # then gives the job its whole retry budget again) and a not-before time; x-tq-attempts says it all.
        updated = {**without(message.headers, [NOT_BEFORE, HEADER_RETRY_COUNT]), **headers}
        try:
            target = self.queues.info(self.queue.dlq)
        except TqadminError as exc:
            job = shown(message.id or "?")
            log.error("cannot dead-letter job %s: %s; it goes back to %s", job, exc, self.queue.name)  # noqa: TRY400 - one line, no traceback
            self.release([delivery])
            return False
        copy = Message(message.body, updated, message.properties, message.id)
        return self._copy_then_delete(delivery, Outgoing(target, copy, copy=True))

    def _copy_then_delete(self, delivery: Delivery, out: Outgoing) -> bool:
        sent = self._sender.send([out])[0]
        if sent.outcome is not Outcome.CONFIRMED:
            log.error(
                "could not store the copy of job %s in %s (%s): %s; the original goes back to %s",
                shown(out.message.id or "?"),
                out.queue.name,
                sent.outcome.value,
                sent.error,
                self.queue.name,
            )
            self.release([delivery])
            return False
        token = self.take(delivery)
        if not isinstance(token, str) or self._settler is None:
            return False  # its visibility ran out meanwhile: the original comes back, dedup absorbs it
        return self._settler.delete(token, wait=True)
