"""What tqadmin needs to know of a queue (URL, ARN, FIFO, redrive policy, size limit), and creating one.

A queue the user created is used as it is: its visibility timeout, redrive policy and DLQ are theirs. Only a
queue that does not exist is created, with ``Q-dlq`` and a redrive policy naming it. Lookups are cached per
face for a while: the worker's copies and the admin's transfers resolve a queue once, not per message.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any

import botocore.exceptions

from tqadmin.errors import QueueNotFound
from tqadmin_sqs.client import codes, translated
from tqadmin_sqs.naming import check_name, dlq_name, is_fifo, name_of_arn

DEFAULT_MAX_BYTES = 262_144  # SQS's default MaximumMessageSize
DLQ_RETENTION_S = 1_209_600  # 14 days, the longest SQS keeps a message: a dead letter waits for a person
MAX_RECEIVE_COUNT = 10  # the redrive policy of the queues tqadmin creates: peeks and crashes count too
CACHE_S = 60.0
INFO_ATTRIBUTES = ["QueueArn", "RedrivePolicy", "FifoQueue", "MaximumMessageSize", "VisibilityTimeout"]


@dataclass(frozen=True, slots=True)
class QueueInfo:
    name: str
    url: str
    arn: str
    fifo: bool
    redrive_target: str | None  # the DLQ its redrive policy names
    max_receive_count: int | None
    max_bytes: int
    visibility_timeout_s: int

    @property
    def dlq(self) -> str:
        """Where tqadmin dead-letters this queue's messages: its redrive target, else ``Q-dlq``."""
        return self.redrive_target or dlq_name(self.name)


def redrive_of(attributes: dict[str, Any]) -> tuple[str | None, int | None]:
    """The DLQ and maxReceiveCount its RedrivePolicy names (none when absent or unreadable)."""
    raw = attributes.get("RedrivePolicy")
    if not raw:
        return None, None
    try:
        policy = json.loads(raw)
        target = name_of_arn(str(policy["deadLetterTargetArn"]))
        count = int(policy["maxReceiveCount"])
    except (ValueError, KeyError, TypeError):
        return None, None
    return target, count


def info_from(name: str, url: str, attributes: dict[str, Any]) -> QueueInfo:
    target, count = redrive_of(attributes)
    return QueueInfo(
        name=name,
        url=url,
        arn=str(attributes.get("QueueArn", "")),
        fifo=str(attributes.get("FifoQueue", "false")).lower() == "true",
        redrive_target=target,
        max_receive_count=count,
        max_bytes=int(attributes.get("MaximumMessageSize") or DEFAULT_MAX_BYTES),
        visibility_timeout_s=int(attributes.get("VisibilityTimeout") or 30),
    )


class Queues:
    """Queue lookups of one client, cached for :data:`CACHE_S`; thread-safe."""

    def __init__(self, client: Any, place: str) -> None:
        self.client = client
        self.place = place
        self._lock = threading.Lock()
        self._known: dict[str, tuple[float, QueueInfo]] = {}

    def info(self, name: str) -> QueueInfo:
        """The queue named ``name``; :class:`QueueNotFound` when it does not exist."""
        with self._lock:
            cached = self._known.get(name)
        if cached is not None and time.monotonic() - cached[0] < CACHE_S:
            return cached[1]
        with translated(self.place, name):
            url = self.client.get_queue_url(QueueName=name)["QueueUrl"]
            attributes = self.client.get_queue_attributes(QueueUrl=url, AttributeNames=INFO_ATTRIBUTES)
        found = info_from(name, url, attributes.get("Attributes", {}))
        with self._lock:
            self._known[name] = (time.monotonic(), found)
        return found

    def forget(self, name: str) -> None:
        with self._lock:
            self._known.pop(name, None)

    def exists(self, name: str) -> bool:
        try:
            self.info(name)
        except QueueNotFound:
            return False
        return True

    def declare(self, name: str) -> QueueInfo:
        """The queue, created with ``Q-dlq`` and a redrive policy when it does not exist; an existing queue
        without a redrive policy gets ``Q-dlq`` beside it (tqadmin's dead letters go there) and is not
        changed."""
        check_name(name)
        try:
            found = self.info(name)
        except QueueNotFound:
            dlq = self._create(dlq_name(name), {"MessageRetentionPeriod": str(DLQ_RETENTION_S)})
            policy = {"deadLetterTargetArn": dlq.arn, "maxReceiveCount": MAX_RECEIVE_COUNT}
            return self._create(name, {"RedrivePolicy": json.dumps(policy)})
        if found.redrive_target is None and not self.exists(found.dlq):
            self._create(found.dlq, {"MessageRetentionPeriod": str(DLQ_RETENTION_S)})
        return found

    def _create(self, name: str, attributes: dict[str, str]) -> QueueInfo:
        if is_fifo(name):
            attributes = {**attributes, "FifoQueue": "true"}
        try:
            with translated(self.place, name):
                try:
                    self.client.create_queue(QueueName=name, Attributes=attributes)
                except botocore.exceptions.ClientError as exc:
                    # Someone created it at the same moment with other settings: theirs is used as it is.
                    if not codes(exc) & {"QueueAlreadyExists", "QueueNameExists"}:
                        raise
        finally:
            self.forget(name)
        return self.info(name)
