"""SQS's batched settle calls: DeleteMessageBatch and ChangeMessageVisibilityBatch, ten receipts a call.

The worker's acks and releases are queued, batched, sent again after a failure and renewed meanwhile by the
shared :class:`~tqadmin.plugin.kit.leased.LeasedConsumer` (:mod:`tqadmin.plugin.kit.settling`); what is SQS's
own is the call itself, which the consumer's renewals, a move's holds and give-backs use too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

BATCH = 10  # the most entries SQS takes in one DeleteMessageBatch or ChangeMessageVisibilityBatch


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
