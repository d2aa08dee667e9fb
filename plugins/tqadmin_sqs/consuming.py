"""The worker's side of SQS: long-poll receives, batched deletes, visibility kept alive, and copies.

A received message stays this consumer's while its visibility timeout runs (``lease_s``, set on every
receive, so the queue's own timeout is left as the user configured it). The worker's monitor extends the
visibility of everything it holds, prefetched messages included, through :meth:`SqsConsumer.extend`
(ChangeMessageVisibilityBatch), so a job longer than the timeout runs once. The consumer counts a
delivery's deadline from the answer that brought it, less a margin; once that passed (or SQS refused to
extend it) the delivery is no longer ours and is never settled: SQS already gave it back, perhaps to another
consumer, and deleting it then would delete someone else's work (moto would do it; AWS might not).

Everything but SQS's calls is the shared :class:`~tqadmin.plugin.kit.leased.LeasedConsumer`'s: the deadlines,
the window and the renewal; the acks and releases, sent by its settler thread in SQS's batches of ten after
a short linger, sent again after a failure and renewed while they wait (an outage loses no settle); and the
error policy of the I/O turn, whose polls run in :mod:`tqadmin_sqs.receiving`'s thread.

Retries and dead letters are copies: sent first (confirmed by SQS), the original deleted after (the base's
:meth:`~tqadmin.plugin.kit.leased.LeasedConsumer.ack_answered`, which waits for SQS's answer). A retry
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
from typing import Any

from tqadmin.errors import NotAuthorized, QueueNotFound, TqadminError
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.kit.leased import LeasedConsumer
from tqadmin.plugin.models import HEADER_RETRY_COUNT, Message
from tqadmin.plugin.transport import Outcome
from tqadmin.show.masking import shown
from tqadmin_sqs.capabilities import MAX_DELAY_S
from tqadmin_sqs.client import translated
from tqadmin_sqs.codec import NOT_BEFORE, due_in, not_before_header, without
from tqadmin_sqs.queues import QueueInfo, Queues
from tqadmin_sqs.receiving import Receiver
from tqadmin_sqs.sending import Sender, ToSend
from tqadmin_sqs.settling import BATCH, settle_batch

log = logging.getLogger("tqadmin.worker")

MAX_VISIBILITY_S = 43_200  # 12 hours: the most SQS keeps a received message invisible
RECEIVE_BATCH = 10
SAFETY_S = 1.0  # a delivery counts as lost this long before its deadline (a tenth of short leases)
LINGER_S = 0.05  # how long an ack waits for nine others before its batch goes
ANSWER_WAIT_S = 0.1  # how long an I/O turn waits for a poll's answer before it looks again (a stop, a fault)


def visibility_for(seconds: float) -> int:
    return max(1, min(MAX_VISIBILITY_S, math.ceil(seconds)))


def delay_for(seconds: float) -> int:
    """Whole seconds of DelaySeconds for a wait: a fraction rounds up (the declared precision)."""
    return max(0, math.ceil(seconds - 1e-9))


class SqsConsumer(LeasedConsumer[str]):
    broker_name = "SQS"
    loop_name = "the SQS consumer's loop"
    settler = "tq-sqs-settle"
    settle_batch = BATCH
    settle_linger_s = LINGER_S
    extend_batch = BATCH
    fatal = (NotAuthorized, QueueNotFound)  # a queue deleted under the worker ends its run

    def __init__(self, queues: Queues, queue: QueueInfo, prefetch: int, lease_s: float) -> None:
        self.visibility_s = visibility_for(lease_s)
        super().__init__(prefetch, lease_s, safety_s=min(SAFETY_S, self.visibility_s / 10))
        self.client = client = queues.client
        self.place = place = queues.place
        self.queue = queue
        self.queues = queues
        self._sender = Sender(client, place, parallel=1)
        self._receiver = Receiver(
            client, place, queue, visibility_s=self.visibility_s, hold=self.hold, background=self.background
        )

    # -- the I/O thread ----------------------------------------------------------------------------------

    def opened(self) -> None:
        self._receiver.start()

    def closed(self) -> None:
        self._receiver.close()

    def fetch(self, room: int) -> list[Delivery]:
        """Ask for a poll when a batch fits, and hand out what it brought, less the copies that came before
        they are due (and everything once stopping: given back)."""
        count = self._count(room)
        if count:
            self._receiver.ask(count)
        elif not self._receiver.asked:
            self.pause()  # the window is full: a settle or a stop wakes the turn
            return []
        return [d for d in self._receiver.answer(ANSWER_WAIT_S) if self._due(d)]

    def _count(self, room: int) -> int:
        """How many to receive now: while jobs run, receives wait until a batch of ten (or half the
        prefetch, when smaller) fits, so that a busy worker pays one receive per batch."""
        most = min(RECEIVE_BATCH, self.prefetch)
        least = min(most, max(1, self.prefetch // 2))
        return 0 if room < least else min(most, room)

    def _due(self, delivery: Delivery) -> bool:
        """Whether to hand ``delivery`` out: not once stopping (given back), nor before its not-before time
        (deferred)."""
        if self._stop.is_set():  # from here: the settler may have flushed and ended already
            if self.take(delivery) is not None:
                self._receiver.give_back([delivery])
            return False
        wait_s = due_in(delivery.message)
        if wait_s <= 0:
            return True
        receipt = self.take(delivery)
        if receipt is not None:
            self._defer(receipt, delivery, wait_s)
        return False

    def _defer(self, receipt: str, delivery: Delivery, wait_s: float) -> None:
        """A copy that came before it is due: hidden again (FIFO) or sent again for the rest of its wait.
        Should either fail, it comes back when its visibility ends and is deferred then."""
        if self.queue.fifo:
            try:
                with translated(self.place, self.queue.name):
                    settle_batch(self.client, self.queue.url, [receipt], visibility_for(wait_s))
            except TqadminError as exc:
                log.warning("could not hide an early retry of %s again: %s", self.queue.name, exc)
            return
        copy = ToSend(self.queue, delivery.message, delay_for(min(wait_s, MAX_DELAY_S)), copy=True)
        if self._sender.send([copy])[0].outcome is Outcome.CONFIRMED:
            self.settles.ack(receipt, delivery)

    # -- the settler thread and any thread --------------------------------------------------------------

    def settle(self, acks: Sequence[str], releases: Sequence[str]) -> list[str]:
        """Releases (visible again at once), then acks (deleted), ten of each at most: the acks SQS refused.
        A receipt SQS refused had passed to another consumer (its visibility ran out), which runs it."""
        with translated(self.place, self.queue.name):
            if releases:
                settle_batch(self.client, self.queue.url, releases, 0)
            if not acks:
                return []
            ok, _code = settle_batch(self.client, self.queue.url, acks, None)
        return [receipt for index, receipt in enumerate(acks) if index not in ok]

    def renew(self, deliveries: Sequence[Delivery], lease_s: float) -> list[Delivery]:
        receipts = [self.token(d) for d in deliveries]
        with translated(self.place, self.queue.name):
            ok, _ = settle_batch(self.client, self.queue.url, receipts, visibility_for(lease_s))
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
        return self._copy_then_delete(delivery, ToSend(self.queue, copy, send_delay, copy=True))

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
        return self._copy_then_delete(delivery, ToSend(target, copy, copy=True))

    def _copy_then_delete(self, delivery: Delivery, out: ToSend) -> bool:
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
        # False when its visibility ran out meanwhile, or SQS did not answer in time: the original comes
        # back, and the completion store absorbs the repeat
        return self.ack_answered(delivery)
