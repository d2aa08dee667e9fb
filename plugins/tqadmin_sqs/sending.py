"""SendMessageBatch with an outcome per message: the one way this plugin writes messages.

A batch holds at most 10 entries and 256 KiB in all; SQS answers HTTP 200 with the entries it refused in
``Failed``, so each message has its own outcome: confirmed (in ``Successful``), failed (in ``Failed``, or
refused by the plugin before sending: too large, no such queue), or unknown (the call itself failed after
boto3's retries, so SQS may or may not have it). A message is never reported confirmed without SQS's word.

FIFO queues: every message keeps its group (``MessageGroupId``, else its job id: each job a group of its
own), and gets a deduplication id. A first publish uses a digest of the job id, so SQS drops a repeat of
the same job within its 5-minute window; every copy (retry, dead letter, move, replay) gets a fresh one,
because SQS would drop a copy that reuses its original's id even after the original was deleted: a loss.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from tqadmin.errors import BrokerError, TqadminError
from tqadmin.plugin.models import Message
from tqadmin.plugin.transport import Outcome
from tqadmin_sqs.client import translate
from tqadmin_sqs.codec import encode, message_size
from tqadmin_sqs.queues import QueueInfo

BATCH = 10
BATCH_BYTES = 262_144
_TOKEN = re.compile(r"^[!-~]{1,128}$")  # what SQS takes as a group or deduplication id


@dataclass(frozen=True, slots=True)
class ToSend:
    """One message for one queue; ``copy`` when it is a copy of a message already sent once."""

    queue: QueueInfo
    message: Message
    delay_s: int = 0
    copy: bool = False


@dataclass(frozen=True, slots=True)
class Sent:
    outcome: Outcome
    error: TqadminError | None = None


def fifo_token(text: str) -> str:
    """``text`` as a group or deduplication id: itself when SQS takes it, else its digest."""
    return text if _TOKEN.match(text) else hashlib.sha256(text.encode("utf-8")).hexdigest()


def entry(out: ToSend, entry_id: str) -> tuple[dict[str, Any], int]:
    """A SendMessageBatch entry and its size; raises what makes SQS refuse it (too large)."""
    body, attributes = encode(out.message, out.queue.max_bytes)
    item: dict[str, Any] = {"Id": entry_id, "MessageBody": body}
    if attributes:
        item["MessageAttributes"] = attributes
    if out.queue.fifo:
        job = out.message.id or str(uuid.uuid4())
        group = out.message.properties.get("MessageGroupId") or job
        item["MessageGroupId"] = fifo_token(str(group))
        item["MessageDeduplicationId"] = uuid.uuid4().hex if out.copy else fifo_token(f"tq:{job}")
    elif out.delay_s:
        item["DelaySeconds"] = out.delay_s
    return item, message_size(body, attributes)


class Sender:
    """Sends for one client; ``parallel`` batches in flight at once for large publishes."""

    def __init__(self, client: Any, place: str, parallel: int = 4) -> None:
        self.client = client
        self.place = place
        self.parallel = max(1, parallel)

    def send(self, messages: Sequence[ToSend]) -> list[Sent]:
        """Each message's outcome, in order."""
        results: list[Sent | None] = [None] * len(messages)
        batches = self._batches(messages, results)
        if self.parallel == 1 or len(batches) <= 1:
            for batch in batches:
                self._send_batch(messages, batch, results)
        else:
            with ThreadPoolExecutor(self.parallel, thread_name_prefix="tq-sqs-send") as pool:
                list(pool.map(lambda batch: self._send_batch(messages, batch, results), batches))
        return [r if r is not None else Sent(Outcome.UNKNOWN) for r in results]

    def _batches(
        self, messages: Sequence[ToSend], results: list[Sent | None]
    ) -> list[list[tuple[int, dict[str, Any]]]]:
        """Entries grouped by queue into batches of at most 10 and 256 KiB; refusals recorded at once."""
        by_queue: dict[str, list[list[tuple[int, dict[str, Any]]]]] = {}
        sizes: dict[int, int] = {}
        for index, out in enumerate(messages):
            try:
                item, size = entry(out, str(index))
            except TqadminError as exc:
                results[index] = Sent(Outcome.FAILED, exc)
                continue
            batches = by_queue.setdefault(out.queue.url, [[]])
            current = batches[-1]
            if len(current) >= BATCH or (current and sizes[id(current)] + size > BATCH_BYTES):
                current = []
                batches.append(current)
            current.append((index, item))
            sizes[id(current)] = sizes.get(id(current), 0) + size
        return [batch for batches in by_queue.values() for batch in batches if batch]

    def _send_batch(
        self,
        messages: Sequence[ToSend],
        batch: list[tuple[int, dict[str, Any]]],
        results: list[Sent | None],
    ) -> None:
        queue = messages[batch[0][0]].queue
        try:
            answer = self.client.send_message_batch(QueueUrl=queue.url, Entries=[item for _, item in batch])
        except Exception as exc:
            error = translate(exc, self.place, queue.name)
            for index, _ in batch:
                results[index] = Sent(Outcome.UNKNOWN, error)
            return
        for ok in answer.get("Successful", []):
            results[int(ok["Id"])] = Sent(Outcome.CONFIRMED)
        for failed in answer.get("Failed", []):
            reason = f"{failed.get('Code', '?')}: {failed.get('Message', '')}".rstrip(": ")
            results[int(failed["Id"])] = Sent(
                Outcome.FAILED, BrokerError(f"{self.place} refused a message for {queue.name}: {reason}")
            )
        for index, _ in batch:  # neither successful nor failed: SQS did not say
            if results[index] is None:
                results[index] = Sent(Outcome.UNKNOWN, BrokerError(f"{self.place} did not report a message"))
