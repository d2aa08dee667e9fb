"""SQS queue names: what SQS allows, FIFO queues, and the dead-letter queue tqadmin gives a queue.

Driver-free, so that the plugin class (loaded by the CLI only to read its options) can name DLQs.
"""

from __future__ import annotations

import re

from tqadmin.errors import UsageError

FIFO_SUFFIX = ".fifo"
DLQ_SUFFIX = "-dlq"
SEPARATOR = "-"  # SQS names allow no dot (but in ".fifo"): names made of parts join them with a hyphen
MAX_NAME = 80
_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def is_fifo(queue: str) -> bool:
    return queue.endswith(FIFO_SUFFIX)


def dlq_name(queue: str) -> str:
    """``Q-dlq``; a FIFO queue's DLQ must be FIFO too, so ``orders.fifo`` gets ``orders-dlq.fifo``."""
    if is_fifo(queue):
        return queue.removesuffix(FIFO_SUFFIX) + DLQ_SUFFIX + FIFO_SUFFIX
    return queue + DLQ_SUFFIX


def check_name(queue: str) -> str:
    """``queue`` when SQS accepts it as a queue name; a usage error saying what SQS allows otherwise."""
    stem = queue.removesuffix(FIFO_SUFFIX)
    if not (0 < len(queue) <= MAX_NAME and _NAME.match(stem)):
        raise UsageError(
            f"{queue!r} is not a valid SQS queue name: 1 to {MAX_NAME} letters, digits, '-' and '_'"
            f" (no dot, but a FIFO queue's name ends in {FIFO_SUFFIX})"
        )
    return queue


def name_of_arn(arn: str) -> str:
    """The queue name at the end of an SQS ARN (``arn:aws:sqs:REGION:ACCOUNT:NAME``)."""
    return arn.rsplit(":", 1)[-1]


def name_of_url(url: str) -> str:
    """The queue name at the end of a queue URL (``https://sqs.REGION.amazonaws.com/ACCOUNT/NAME``)."""
    return url.rstrip("/").rsplit("/", 1)[-1]


def origin_of_dlq(dlq: str) -> str | None:
    """The queue whose ``Q-dlq`` this is, by name (``orders-dlq`` -> ``orders``), or ``None``."""
    fifo = is_fifo(dlq)
    stem = dlq.removesuffix(FIFO_SUFFIX) if fifo else dlq
    if not stem.endswith(DLQ_SUFFIX) or stem == DLQ_SUFFIX:
        return None
    return stem.removesuffix(DLQ_SUFFIX) + (FIFO_SUFFIX if fifo else "")
