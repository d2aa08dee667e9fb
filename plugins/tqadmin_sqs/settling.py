"""Deletes and visibility changes sent in batches of ten by one thread, so a busy worker pays one call per
ten messages settled, not one per message.

A job thread hands its settlement over and goes on (an ack), or waits for SQS's answer (a retry's or dead
letter's original, deleted only once its copy is confirmed). A settlement waits at most :data:`LINGER_S`
for nine others before it is sent; closing the settler sends what is left. Each visibility change keeps its
own timeout in a shared batch (a FIFO copy hidden for 300 s beside a release at 0 s).

The thread runs under the consumer's :class:`~tqadmin.plugin.background.Background`: should it die, the
consumer's loop ends with the fault, and whoever waits for it (a waiting delete, :meth:`Settler.close`)
stops waiting: the message was not deleted, comes back, and the completion store absorbs the repeat.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tqadmin.plugin.background import Background
from tqadmin_sqs.client import translate

log = logging.getLogger("tqadmin.worker")

BATCH = 10
LINGER_S = 0.05
WAIT_S = 120.0  # the longest a delete waits for SQS's answer: botocore's retries of a slow call, and more


@dataclass(slots=True)
class _Pending:
    receipt: str
    visibility_s: int | None  # None: delete
    done: threading.Event | None = None
    ok: bool = False


@dataclass(slots=True)
class _Queue:
    items: list[_Pending] = field(default_factory=list)
    since: float = 0.0


class Settler:
    """Batches of DeleteMessageBatch and ChangeMessageVisibilityBatch for one queue."""

    def __init__(
        self, client: Any, place: str, queue_url: str, queue_name: str, background: Background | None = None
    ) -> None:
        self._client = client
        self._place = place
        self._url = queue_url
        self._name = queue_name
        self._cond = threading.Condition()
        self._deletes = _Queue()
        self._changes = _Queue()
        self._closing = False
        self._background = background or Background()
        self._thread = self._background.start("tq-sqs-settle", self._loop)

    def delete(self, receipt: str, wait: bool = False) -> bool:
        """Delete the message received with ``receipt``; with ``wait``, whether SQS confirmed it."""
        return self._add(self._deletes, _Pending(receipt, None), wait)

    def change_visibility(self, receipts: Sequence[str], seconds: int) -> None:
        for receipt in receipts:
            self._add(self._changes, _Pending(receipt, seconds), wait=False)

    def close(self) -> None:
        """Send what is pending and stop the thread (what a dead thread left is not sent: it comes back)."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._thread.join(timeout=WAIT_S)

    def _add(self, queue: _Queue, item: _Pending, wait: bool) -> bool:
        item.done = threading.Event() if wait else None
        if self._background.fault is not None:
            return False  # the thread died: nothing is sent any more, the worker is on its way out
        with self._cond:
            closed = self._closing  # the thread is gone or going: then it is sent from here
            if not closed:
                first = not queue.items
                if first:
                    queue.since = time.monotonic()
                queue.items.append(item)
                if first or wait or len(queue.items) >= BATCH:  # the first starts the linger's clock
                    self._cond.notify_all()
        if closed:
            self._send([item])
        elif item.done is not None:
            self._background.wait(item.done, WAIT_S)
        return item.ok

    def _loop(self) -> None:
        while True:
            with self._cond:
                batches = self._due()
                while not batches and not self._closing:
                    self._cond.wait(self._wait_s())
                    batches = self._due()
                closing = self._closing
                if closing:  # everything left, however few
                    batches += [self._split(q, len(q.items)) for q in (self._deletes, self._changes)]
            for batch in batches:
                self._send(batch)
            if closing:
                return

    def _due(self) -> list[list[_Pending]]:
        """Batches ready to go: full ones, ones a caller waits for, and ones that lingered long enough."""
        now = time.monotonic()
        ready = []
        for queue in (self._deletes, self._changes):
            waited = any(item.done is not None for item in queue.items)
            while len(queue.items) >= BATCH or (queue.items and (waited or now - queue.since >= LINGER_S)):
                ready.append(self._split(queue, BATCH))
                queue.since = now
        return ready

    def _wait_s(self) -> float | None:
        pending = [q.since for q in (self._deletes, self._changes) if q.items]
        return max(0.0, LINGER_S - (time.monotonic() - min(pending))) if pending else None

    @staticmethod
    def _split(queue: _Queue, count: int) -> list[_Pending]:
        taken, queue.items = queue.items[:count], queue.items[count:]
        return taken

    def _send(self, batch: list[_Pending]) -> None:
        if not batch:
            return
        for start in range(0, len(batch), BATCH):
            self._send_one(batch[start : start + BATCH])

    def _send_one(self, batch: list[_Pending]) -> None:
        try:
            receipts = [i.receipt for i in batch]
            if batch[0].visibility_s is None:
                ok, failure = settle_batch(self._client, self._url, receipts, None)
            else:
                seconds = [i.visibility_s or 0 for i in batch]
                ok, failure = settle_batch(self._client, self._url, receipts, seconds)
        except Exception as exc:
            error = translate(exc, self._place, self._name)
            log.warning(
                "could not settle %d message(s) of %s: %s; they come back", len(batch), self._name, error
            )
            ok, failure = set(), None
        except BaseException:
            self._finish(batch, set())
            raise
        if failure:
            log.warning(
                "SQS did not settle %d message(s) of %s (%s); they come back and dedup absorbs the repeat",
                len(batch) - len(ok),
                self._name,
                failure,
            )
        self._finish(batch, ok)

    @staticmethod
    def _finish(batch: list[_Pending], ok: set[int]) -> None:
        for index, item in enumerate(batch):
            item.ok = index in ok
            if item.done is not None:
                item.done.set()


def settle_batch(
    client: Any, queue_url: str, receipts: Sequence[str], visibility_s: int | Sequence[int] | None
) -> tuple[set[int], str | None]:
    """One DeleteMessageBatch (``visibility_s`` None) or ChangeMessageVisibilityBatch of up to 10 receipts
    (one timeout for all, or one each): the indexes SQS settled, and the code of the first it refused.
    Raises what botocore raises."""
    entries: list[dict[str, Any]] = [{"Id": str(i), "ReceiptHandle": r} for i, r in enumerate(receipts)]
    if visibility_s is None:
        answer = client.delete_message_batch(QueueUrl=queue_url, Entries=entries)
    else:
        seconds = [visibility_s] * len(entries) if isinstance(visibility_s, int) else visibility_s
        for entry, timeout in zip(entries, seconds, strict=True):
            entry["VisibilityTimeout"] = timeout
        answer = client.change_message_visibility_batch(QueueUrl=queue_url, Entries=entries)
    failed = answer.get("Failed", [])
    return {int(e["Id"]) for e in answer.get("Successful", [])}, (
        str(failed[0].get("Code", "?")) if failed else None
    )
