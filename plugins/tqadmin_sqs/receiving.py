"""SQS's long polls, one at a time in a thread of their own, asked for by the consumer's I/O turn.

A long poll waits up to :data:`WAIT_S` inside botocore, where nothing can cut it short: run in the I/O thread
it would hold a stop back until it answered. Here the I/O turn asks for a poll (:meth:`Receiver.ask`) and
takes its answer when it comes (:meth:`Receiver.answer`), so a stop is honoured at once; a poll's error is
handed to the I/O turn as it is, where the shared policy of
:class:`~tqadmin.plugin.kit.leased.LeasedConsumer` waits out what is transient and ends the run on the rest.
Only one poll is out at a time, so a failing SQS is polled again only after that policy's backoff.

What a poll brings once the run has ended (the consumer closed while it was out) is made visible again at
once, from here: no one is left to hand it out.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from queue import Empty, SimpleQueue
from typing import Any

from tqadmin.errors import TqadminError
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.kit.background import Background
from tqadmin_sqs.client import LONG_POLL_S, translate, translated
from tqadmin_sqs.codec import to_message
from tqadmin_sqs.queues import QueueInfo
from tqadmin_sqs.settling import BATCH, settle_batch

log = logging.getLogger("tqadmin.worker")

WAIT_S = 5  # a long poll's wait: how long a poll with nothing to bring stays out
RECEIVE_ATTRIBUTES: dict[str, Any] = {
    "MessageSystemAttributeNames": ["All"],
    "MessageAttributeNames": ["All"],
}

Hold = Callable[[Sequence[Delivery], float], None]
"""The consumer's :meth:`~tqadmin.plugin.kit.leased.LeasedConsumer.hold`."""


class Receiver:
    """Long polls of one queue, one at a time, in the thread ``tq-sqs-receive``."""

    def __init__(
        self,
        client: Any,
        place: str,
        queue: QueueInfo,
        *,
        visibility_s: int,
        hold: Hold,
        background: Background,
    ) -> None:
        self.client = client
        self.place = place
        self.queue = queue
        self.visibility_s = visibility_s
        self._hold = hold
        self._background = background
        self._asks: SimpleQueue[int | None] = SimpleQueue()  # a poll's count; None ends the thread
        self._answers: SimpleQueue[list[Delivery] | TqadminError] = SimpleQueue()
        self._lock = threading.Lock()
        self._closed = False
        self.asked = False  # a poll is out or its answer not yet taken (the I/O thread's)

    def start(self) -> None:
        self._background.start("tq-sqs-receive", self._loop)

    def ask(self, count: int) -> None:
        """Send a poll for up to ``count`` messages, unless one is out already."""
        if not self.asked:
            self.asked = True
            self._asks.put(count)

    def answer(self, timeout_s: float) -> list[Delivery]:
        """The deliveries of the poll out, once it answered within ``timeout_s`` (else none yet); raises
        the poll's ``TqadminError``."""
        if not self.asked:
            return []
        try:
            got = self._answers.get(timeout=timeout_s)
        except Empty:
            return []
        self.asked = False
        if isinstance(got, TqadminError):
            raise got
        return got

    def close(self) -> None:
        """No more polls; what an answer brought and nobody took is made visible again at once."""
        with self._lock:
            self._closed = True
            left: list[Delivery] = []
            while not self._answers.empty():
                got = self._answers.get()
                if not isinstance(got, TqadminError):
                    left += got
        self._asks.put(None)
        self.give_back(left)

    def _loop(self) -> None:
        while (count := self._asks.get()) is not None:
            try:
                got: list[Delivery] | TqadminError = self._receive(count)
            except TqadminError as exc:
                got = exc
            with self._lock:
                if not self._closed:
                    self._answers.put(got)
                    continue
            if not isinstance(got, TqadminError):
                self.give_back(got)

    def _receive(self, count: int) -> list[Delivery]:
        with translated(self.place, self.queue.name):
            answer = self.client.receive_message(
                QueueUrl=self.queue.url,
                MaxNumberOfMessages=count,
                WaitTimeSeconds=min(WAIT_S, LONG_POLL_S),
                VisibilityTimeout=self.visibility_s,
                **RECEIVE_ATTRIBUTES,
            )
        # A long poll hands messages over when it answers, so the visibility runs from about now; the
        # consumer's safety margin covers the answer's way back. They count against the prefetch from now.
        deliveries = [
            Delivery(to_message(raw), str(raw["ReceiptHandle"])) for raw in answer.get("Messages", [])
        ]
        self._hold(deliveries, time.monotonic() + self.visibility_s)
        return deliveries

    def give_back(self, deliveries: Sequence[Delivery]) -> None:
        """Deliveries never handed out: visible again at once (else when their visibility ends)."""
        receipts = [str(d.token) for d in deliveries]
        for start in range(0, len(receipts), BATCH):
            try:
                settle_batch(self.client, self.queue.url, receipts[start : start + BATCH], 0)
            except Exception as exc:  # they come back when their visibility timeout ends anyway
                log.warning(
                    "could not give back messages of %s: %s", self.queue.name, translate(exc, self.place)
                )
