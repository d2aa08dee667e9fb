"""The worker's side of SQS: long-poll receives, batched deletes, visibility kept alive, and copies.

A received message stays this consumer's while its visibility timeout runs (``lease_s``, set on every
receive, so the queue's own timeout is left as the user configured it). The worker's monitor extends the
visibility of everything it holds, prefetched messages included, through :meth:`SqsConsumer.extend`
(ChangeMessageVisibilityBatch), so a job longer than the timeout runs once. The consumer counts a
delivery's deadline from the answer that brought it, less a margin; once that passed (or SQS refused to
extend it) the delivery is no longer ours and is never settled: SQS already gave it back, perhaps to another
consumer, and deleting it then would delete someone else's work (moto would do it; AWS might not).

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
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tqadmin.errors import NotAuthorized, QueueNotFound, TqadminError
from tqadmin.plugin.background import Background
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.models import HEADER_RETRY_COUNT, Message
from tqadmin.plugin.retrying import Retrying
from tqadmin.plugin.transport import Consumer, Outcome
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


class _Token:
    """A receipt handle and until when it is ours (``time.monotonic()``); settled or lost at most once."""

    __slots__ = ("deadline", "done", "receipt")

    def __init__(self, receipt: str, deadline: float) -> None:
        self.receipt = receipt
        self.deadline = deadline
        self.done = False


def visibility_for(seconds: float) -> int:
    return max(1, min(MAX_VISIBILITY_S, math.ceil(seconds)))


def delay_for(seconds: float) -> int:
    """Whole seconds of DelaySeconds for a wait: a fraction rounds up (the declared precision)."""
    return max(0, math.ceil(seconds - 1e-9))


class SqsConsumer(Consumer):
    def __init__(self, queues: Queues, queue: QueueInfo, prefetch: int, lease_s: float) -> None:
        self.client = client = queues.client
        self.place = place = queues.place
        self.queue = queue
        self.queues = queues
        self.prefetch = max(1, prefetch)
        self.visibility_s = visibility_for(lease_s)
        self.safety_s = min(SAFETY_S, self.visibility_s / 10)
        self._sender = Sender(client, place, parallel=1)
        self._settler: Settler | None = None
        self._cond = threading.Condition()
        self._held = 0  # handed out and not settled: what counts against the prefetch
        self._stop = threading.Event()
        self._drained = threading.Event()
        self.background = Background(self.stop)
        self.retrying = Retrying(sleep=self._stop.wait)  # receives that keep failing; a stop cuts it short

    # -- the I/O thread and its receiver ------------------------------------------------------------------

    def run(self, on_message: Callable[[Delivery], None]) -> None:
        """Hand out what a receiver thread's long polls bring, until stopped and drained. The polls run in
        a thread of their own so that a stop is honoured at once, not after the poll in flight: what that
        poll still brings is given back. The receiver and the settler run under one
        :class:`~tqadmin.plugin.background.Background`: either dying ends this loop with the fault."""
        self._settler = Settler(self.client, self.place, self.queue.url, self.queue.name, self.background)
        inbox: queue.SimpleQueue[list[Delivery] | TqadminError] = queue.SimpleQueue()
        self.background.start("tq-sqs-receive", lambda: self._receive_loop(inbox))
        try:
            with self.background.io_loop("the SQS consumer's loop"):
                while not (self._stop.is_set() and self._drained.is_set()):
                    self.background.check()
                    try:
                        received = inbox.get(timeout=0.1)
                    except queue.Empty:
                        continue
                    if isinstance(received, TqadminError):
                        raise received
                    for delivery in received:
                        self._hand_out(delivery, on_message)
        finally:
            self._stop.set()
            self._settler.close()

    def _receive_loop(self, inbox: queue.SimpleQueue[list[Delivery] | TqadminError]) -> None:
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
            with self._cond:
                self._held += len(received)  # they count against the prefetch from now on
            inbox.put(received)

    def _room(self) -> int:
        """How many to receive now, waiting for room: while jobs run, receives wait until a batch of ten
        (or half the prefetch, when smaller) fits, so that a busy worker pays one receive per batch."""
        most = min(RECEIVE_BATCH, self.prefetch)
        least = min(most, max(1, self.prefetch // 2))
        with self._cond:
            room = self.prefetch - self._held
            if room < least:
                self._cond.wait(0.5)
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
        # safety margin covers the answer's way back.
        deadline = time.monotonic() + self.visibility_s
        return [
            Delivery(to_message(raw), _Token(raw["ReceiptHandle"], deadline))
            for raw in answer.get("Messages", [])
        ]

    def _hand_out(self, delivery: Delivery, on_message: Callable[[Delivery], None]) -> None:
        wait_s = 0.0 if self._stop.is_set() else due_in(delivery.message)
        if self._stop.is_set() or wait_s > 0:
            with self._cond:
                self._held -= 1
                self._cond.notify_all()
            if wait_s > 0:
                self._defer(delivery, wait_s)
            else:
                self._give_back([delivery])
            return
        on_message(delivery)

    def _defer(self, delivery: Delivery, wait_s: float) -> None:
        """A copy that came before it is due: hidden again (FIFO) or sent again for the rest of its wait."""
        token = self._token(delivery)
        assert self._settler is not None
        if self.queue.fifo:
            self._settler.change_visibility([token.receipt], visibility_for(wait_s))
            return
        copy = Outgoing(self.queue, delivery.message, delay_for(min(wait_s, MAX_DELAY_S)), copy=True)
        if self._sender.send([copy])[0].outcome is Outcome.CONFIRMED:
            self._settler.delete(token.receipt, wait=True)

    # -- any thread ----------------------------------------------------------------------------------------

    @staticmethod
    def _token(delivery: Delivery) -> _Token:
        token = delivery.token
        assert isinstance(token, _Token)
        return token

    def _take(self, delivery: Delivery) -> _Token | None:
        """The delivery's token if it is still ours, marked settled (its prefetch slot freed)."""
        token = self._token(delivery)
        with self._cond:
            if token.done:
                return None
            token.done = True
            self._held -= 1
            self._cond.notify_all()
        if time.monotonic() >= token.deadline - self.safety_s:
            return None
        return token

    def stop(self) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()

    def drained(self) -> None:
        self._drained.set()

    def alive(self, delivery: Delivery) -> bool:
        token = self._token(delivery)
        return not token.done and time.monotonic() < token.deadline - self.safety_s

    def ack(self, delivery: Delivery) -> bool:
        token = self._take(delivery)
        if token is None or self._settler is None:
            return False
        self._settler.delete(token.receipt)
        return True

    def release(self, deliveries: Sequence[Delivery]) -> None:
        taken = [t for t in (self._take(d) for d in deliveries) if t is not None]
        if taken and self._settler is not None:
            self._settler.change_visibility([t.receipt for t in taken], 0)

    def _give_back(self, deliveries: Sequence[Delivery]) -> None:
        """Deliveries never handed out (received while stopping): visible again at once."""
        receipts = [self._token(d).receipt for d in deliveries]
        for start in range(0, len(receipts), RECEIVE_BATCH):
            try:
                settle_batch(self.client, self.queue.url, receipts[start : start + RECEIVE_BATCH], 0)
            except Exception as exc:  # they come back when their visibility timeout ends anyway
                log.warning(
                    "could not give back messages of %s: %s", self.queue.name, translate(exc, self.place)
                )

    def extend(self, deliveries: Sequence[Delivery], lease_s: float) -> list[Delivery]:
        seconds = visibility_for(lease_s)
        now = time.monotonic()
        live: list[Delivery] = []
        lost: list[Delivery] = []
        for delivery in deliveries:
            token = self._token(delivery)
            if not token.done:
                (live if now < token.deadline - self.safety_s else lost).append(delivery)
        for start in range(0, len(live), RECEIVE_BATCH):
            lost += self._extend_batch(live[start : start + RECEIVE_BATCH], seconds)
        for delivery in lost:
            self._take(delivery)
        return lost

    def _extend_batch(self, batch: list[Delivery], seconds: int) -> list[Delivery]:
        asked_at = time.monotonic()
        tokens = [self._token(d) for d in batch]
        try:
            ok, _ = settle_batch(self.client, self.queue.url, [t.receipt for t in tokens], seconds)
        except Exception as exc:
            log.warning("could not extend visibility in %s: %s", self.queue.name, translate(exc, self.place))
            return []  # not lost yet: the next renewal tries again before the deadline
        for index in ok:
            tokens[index].deadline = asked_at + seconds
        return [d for index, d in enumerate(batch) if index not in ok]

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
            log.error("cannot dead-letter job %s: %s; it goes back to %s", message.id, exc, self.queue.name)  # noqa: TRY400 - one line, no traceback
            self.release([delivery])
            return False
        copy = Message(message.body, updated, message.properties, message.id)
        return self._copy_then_delete(delivery, Outgoing(target, copy, copy=True))

    def _copy_then_delete(self, delivery: Delivery, out: Outgoing) -> bool:
        sent = self._sender.send([out])[0]
        if sent.outcome is not Outcome.CONFIRMED:
            log.error(
                "could not store the copy of job %s in %s (%s): %s; the original goes back to %s",
                out.message.id,
                out.queue.name,
                sent.outcome.value,
                sent.error,
                self.queue.name,
            )
            self.release([delivery])
            return False
        token = self._take(delivery)
        if token is None or self._settler is None:
            return False  # its visibility ran out meanwhile: the original comes back, dedup absorbs it
        return self._settler.delete(token.receipt, wait=True)
