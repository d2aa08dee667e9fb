"""How long RabbitMQ lets a consumer hold a delivery unacked before it closes the channel.

RabbitMQ's ``consumer_timeout`` (30 minutes by default) closes the channel of a consumer that holds a delivery
longer; every other delivery on that channel goes back to the queue, and the job that ran too long is run
again. A queue can lower or raise it with the ``x-consumer-timeout`` argument or a ``consumer-timeout`` policy
key (RabbitMQ 3.12 and later), which the management API shows; the node-wide value it does not show, so the
default stands in for it, said so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DEFAULT_CONSUMER_TIMEOUT_S = 1800.0


def consumer_timeout_s(queue_document: Mapping[str, Any]) -> tuple[float | None, str]:
    """The queue's consumer timeout in seconds (``None``: none at all) and where that value comes from."""
    arguments = queue_document.get("arguments") or {}
    policy = queue_document.get("effective_policy_definition") or {}
    for source, table, key in (
        ("the queue's x-consumer-timeout argument", arguments, "x-consumer-timeout"),
        ("the queue's consumer-timeout policy", policy, "consumer-timeout"),
    ):
        value = table.get(key) if isinstance(table, Mapping) else None
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            return (value / 1000 if value else None), source
    return (
        DEFAULT_CONSUMER_TIMEOUT_S,
        "RabbitMQ's default consumer_timeout (unless the node's config changes it)",
    )


def job_timeout_warning(
    queue: str, job_timeout_s: float | None, queue_document: Mapping[str, Any]
) -> str | None:
    """A warning when runs of up to ``job_timeout_s`` (``None``: no limit) can outlast the consumer
    timeout."""
    limit, source = consumer_timeout_s(queue_document)
    if limit is None or (job_timeout_s is not None and job_timeout_s <= limit):
        return None
    asked = "no --job-timeout" if job_timeout_s is None else f"--job-timeout {job_timeout_s:g} s"
    return (
        f"{asked} on {queue!r} exceeds the consumer timeout of {limit:g} s ({source}): RabbitMQ closes the"
        " channel of a run that long and the job runs again; lower --job-timeout or raise x-consumer-timeout"
    )
