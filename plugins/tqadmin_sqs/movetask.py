"""Replay with SQS's own redrive: a message move task out of a dead-letter queue, followed to its end.

SQS runs one task per source queue at a time, at most 500 messages a second, with no filter and no limit,
and only out of a queue that some queue's redrive policy names as its DLQ. The task copies messages as they
are (``x-tq-replays`` is not incremented). Where the service has no move-task API (moto answers HTTP 500),
:func:`run_move_task` returns ``None`` and the caller moves the messages through the client.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import botocore.exceptions

from tqadmin.errors import BrokerError
from tqadmin.plugin.models import ActionReport
from tqadmin_sqs.client import codes, status_of, translate, translated
from tqadmin_sqs.queues import QueueInfo, Queues

POLL_S = 1.0
MISSING_API_CODES = frozenset(
    {"InvalidAction", "UnknownOperationException", "UnknownOperation", "NotImplemented"}
)
DONE = ("COMPLETED", "FAILED", "CANCELLED")

Progress = Callable[[str], None]


def lacks_api(exc: botocore.exceptions.ClientError) -> bool:
    """Whether an error says the service has no such operation (an emulator), not that the call failed."""
    found = codes(exc)
    return bool(found & MISSING_API_CODES) or (status_of(exc) >= 500 and all(c.isdigit() for c in found))


def dead_letter_sources(queues: Queues, dlq: QueueInfo) -> list[str]:
    """URLs of the queues whose redrive policy names ``dlq``."""
    urls: list[str] = []
    with translated(queues.place, dlq.name):
        for page in queues.client.get_paginator("list_dead_letter_source_queues").paginate(QueueUrl=dlq.url):
            urls += page.get("queueUrls", [])
    return urls


def run_move_task(
    queues: Queues, dlq: QueueInfo, destination: QueueInfo | None, progress: Progress
) -> ActionReport | None:
    """Start a move task out of ``dlq`` to ``destination`` (``None``: each message's source queue) and wait
    for it; ``None`` when the service has no move-task API."""
    tasks = _tasks(queues, dlq)
    if tasks is None:
        return None
    running = [t for t in tasks if t.get("Status") in ("RUNNING", "CANCELLING")]
    if running:
        task = running[0]
        raise BrokerError(
            f"a message move task out of {dlq.name} is already running ({_figures(task)}); SQS runs one per"
            " queue: wait for it (or cancel it: aws sqs cancel-message-move-task); nothing was started"
        )
    request: dict[str, Any] = {"SourceArn": dlq.arn}
    if destination is not None:
        request["DestinationArn"] = destination.arn
    with translated(queues.place, dlq.name):
        handle = queues.client.start_message_move_task(**request)["TaskHandle"]
    where = destination.name if destination is not None else "their source queues"
    progress(f"replay: SQS message move task started, {dlq.name} -> {where} (at most 500 messages/s)")
    return _follow(queues, dlq, handle, where, progress)


def _tasks(queues: Queues, dlq: QueueInfo) -> list[dict[str, Any]] | None:
    try:
        answer = queues.client.list_message_move_tasks(SourceArn=dlq.arn, MaxResults=10)
    except botocore.exceptions.ClientError as exc:
        if lacks_api(exc):
            return None
        raise translate(exc, queues.place, dlq.name) from None
    except botocore.exceptions.BotoCoreError as exc:
        raise translate(exc, queues.place, dlq.name) from None
    return list(answer.get("Results", []))


def _follow(queues: Queues, dlq: QueueInfo, handle: str, where: str, progress: Progress) -> ActionReport:
    last = ""
    while True:
        time.sleep(POLL_S)
        tasks = _tasks(queues, dlq) or []
        task = next((t for t in tasks if t.get("TaskHandle") == handle), tasks[0] if tasks else {})
        figures = _figures(task)
        if figures != last:
            progress(f"replay: {figures}")
            last = figures
        status = task.get("Status")
        if status not in DONE:
            continue
        moved = int(task.get("ApproximateNumberOfMessagesMoved", 0))
        total = int(task.get("ApproximateNumberOfMessagesToMove", moved))
        if status == "FAILED":
            raise BrokerError(
                f"the SQS message move task out of {dlq.name} failed after {moved} of {total} message(s):"
                f" {task.get('FailureReason', 'no reason given')}; the rest is still in {dlq.name}"
            )
        return ActionReport(
            action="replay",
            source=dlq.name,
            target=where,
            matched=total,
            moved=moved,
            detail="server-side: an SQS message move task",
            not_done=(f"cancelled: {total - moved} message(s) left in {dlq.name}",)
            if status == "CANCELLED"
            else (),
        )


def _figures(task: dict[str, Any]) -> str:
    moved = task.get("ApproximateNumberOfMessagesMoved", 0)
    total = task.get("ApproximateNumberOfMessagesToMove")
    return f"{task.get('Status', '?').lower()}, {moved}{f' of {total}' if total is not None else ''} moved"
