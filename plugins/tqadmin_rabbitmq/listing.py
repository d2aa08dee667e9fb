"""Turn the management API's queue and node documents into QueueStats and Alarms, checking their shape.

Pure functions over decoded JSON (no I/O), so the mapping is tested without a broker. Anything that is not
the shape RabbitMQ documents raises :class:`BadResponse` naming the field: a wrong figure on an on-call
screen is worse than an error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from tqadmin.errors import BadResponse
from tqadmin.plugin.kit.delays import fold_delays
from tqadmin.plugin.models import Alarm, QueueStats, dlq_name
from tqadmin_rabbitmq.naming import is_delay_queue_of, tier_work_queue

# What one poll asks for: the figures we show and nothing else, so the broker serialises little.
QUEUE_COLUMNS = (
    "name",
    "type",
    "state",
    "messages",
    "messages_ready",
    "messages_unacknowledged",
    "consumers",
    "arguments",
    "effective_policy_definition",
    "head_message_timestamp",
    "message_stats.publish_details.rate",
    "message_stats.deliver_get_details.rate",
    "message_stats.ack_details.rate",
)
NODE_COLUMNS = ("name", "running", "mem_alarm", "disk_free_alarm")


@dataclass(frozen=True, slots=True)
class QueuePage:
    items: tuple[Mapping[str, Any], ...]
    page_count: int
    total_count: int


@dataclass(frozen=True, slots=True)
class DeadLetterTarget:
    """Where a queue's rejected messages go by its arguments or policy: an exchange and maybe a key."""

    exchange: str
    routing_key: str | None


# Resolves an exchange and routing key to the queue it routes to, or None (may ask the broker).
Router = Callable[[DeadLetterTarget, str], str | None]


def parse_queue_page(document: Any, where: str) -> QueuePage:
    """One page of ``GET /api/queues/<vhost>?page=..``: ``{"items": [...], "page_count": N, ...}``."""
    if not isinstance(document, Mapping):
        raise BadResponse(f"{where} sent a queue page that is not a JSON object: {_kind(document)}")
    items = document.get("items")
    page_count = document.get("page_count")
    total = document.get("total_count", len(items) if isinstance(items, list) else None)
    if not isinstance(items, list) or not _is_int(page_count) or not _is_int(total):
        raise BadResponse(f"{where} sent a queue page without an 'items' list and 'page_count' number")
    return QueuePage(parse_queue_list(items, where), page_count, total)


def parse_queue_list(document: Any, where: str) -> tuple[Mapping[str, Any], ...]:
    """The unpaged ``GET /api/queues/<vhost>`` (or a page's ``items``): a list of named queue objects."""
    if not isinstance(document, list):
        raise BadResponse(f"{where} sent a queue list that is not a JSON array: {_kind(document)}")
    for item in document:
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise BadResponse(f"{where} sent a queue entry without a 'name': {_kind(item)}")
    return tuple(document)


def dead_letter_target(item: Mapping[str, Any], where: str) -> DeadLetterTarget | None:
    """The queue's DLX: its arguments win over its policy, as in RabbitMQ itself."""
    arguments = _mapping(item, "arguments", where)
    policy = _mapping(item, "effective_policy_definition", where)
    exchange = arguments.get("x-dead-letter-exchange", policy.get("dead-letter-exchange"))
    if not isinstance(exchange, str):
        return None
    key = arguments.get("x-dead-letter-routing-key", policy.get("dead-letter-routing-key"))
    return DeadLetterTarget(exchange, key if isinstance(key, str) else None)


def to_stats(items: Sequence[Mapping[str, Any]], now: float, route: Router, where: str) -> list[QueueStats]:
    """Map every queue entry, linking each to its dead-letter queue and that queue's depth.

    The DLQ is where the queue's DLX (arguments, then policy) routes its messages; failing that, tqadmin's
    own convention ``Q.dlq`` when such a queue exists. Retry tiers (``Q.retry.5s`` beside ``Q``) are marked
    as delay queues of ``Q`` and their messages counted in its ``delayed``.
    """
    depth = {str(item["name"]): _count(item, "messages", where) for item in items}
    heads = {str(item["name"]): _head_age(item, now, where) for item in items}
    stats = []
    for item in items:
        name = str(item["name"])
        dlq = _dlq_of(item, name, depth, route, where)
        stats.append(
            QueueStats(
                name=name,
                messages=depth[name],
                ready=_count(item, "messages_ready", where),
                unacked=_count(item, "messages_unacknowledged", where),
                consumers=_count(item, "consumers", where),
                publish_rate=_rate(item, "publish_details", where),
                deliver_rate=_rate(item, "deliver_get_details", where),
                ack_rate=_rate(item, "ack_details", where),
                oldest_age_s=heads[name] if _count(item, "messages_ready", where) else None,
                dlq=dlq,
                dlq_messages=depth.get(dlq) if dlq is not None else None,
                dlq_oldest_age_s=heads.get(dlq) if dlq is not None else None,
                state=_text(item, "state", "running", where),
                kind=_text(item, "type", "classic", where),
                delay_for=tier_work_queue(name, depth),
            )
        )
    return list(fold_delays(stats))


def to_alarms(document: Any, where: str) -> list[Alarm]:
    """Resource alarms and stopped nodes from ``GET /api/nodes``."""
    if not isinstance(document, list):
        raise BadResponse(f"{where} sent a node list that is not a JSON array: {_kind(document)}")
    alarms = []
    for node in document:
        if not isinstance(node, Mapping) or not isinstance(node.get("name"), str):
            raise BadResponse(f"{where} sent a node entry without a 'name': {_kind(node)}")
        name = node["name"]
        if node.get("running") is False:
            alarms.append(Alarm(name, "node_down", "the node is not running"))
            continue
        if node.get("mem_alarm") is True:
            alarms.append(Alarm(name, "memory", "memory alarm: publishers are blocked"))
        if node.get("disk_free_alarm") is True:
            alarms.append(Alarm(name, "disk", "disk alarm: publishers are blocked"))
    return alarms


def _dlq_of(
    item: Mapping[str, Any], name: str, depth: Mapping[str, int], route: Router, where: str
) -> str | None:
    target = dead_letter_target(item, where)
    if target is not None:
        routed = route(target, name)
        if routed is not None and is_delay_queue_of(name, routed):
            return None  # a retry tier dead-letters back into its work queue by design: that is no DLQ
        if routed is not None:
            return routed
    convention = dlq_name(name)
    return convention if convention in depth else None


def _count(item: Mapping[str, Any], key: str, where: str) -> int:
    # RabbitMQ omits the counts of a queue until its first stats emission (a few seconds): that is 0.
    value = item.get(key, 0)
    if not _is_int(value) or value < 0:
        raise BadResponse(f"{where} sent {key}={value!r} for queue {item['name']!r}: expected a count")
    return int(value)


def _rate(item: Mapping[str, Any], details: str, where: str) -> float | None:
    stats = item.get("message_stats")
    if stats is None:  # omitted for a queue that never saw traffic
        return 0.0
    if not isinstance(stats, Mapping):
        raise BadResponse(f"{where} sent message_stats for queue {item['name']!r} that is not an object")
    detail = stats.get(details)
    if detail is None:
        return 0.0
    rate = detail.get("rate") if isinstance(detail, Mapping) else None
    if not _is_number(rate):
        raise BadResponse(f"{where} sent {details}.rate={rate!r} for queue {item['name']!r}: not a number")
    return float(rate)


def _head_age(item: Mapping[str, Any], now: float, where: str) -> float | None:
    """Age of the head message by its ``timestamp`` property (whole seconds), which tqadmin's publisher sets
    to the time the message became due: for a retry, when its delay ended, so a retry that waited out its
    delay in a tier counts from then. Unknown (``None``) when the head carries no timestamp, and on quorum
    queues and streams, for which RabbitMQ reports no ``head_message_timestamp``. A classic queue keeps a
    delivered message at its head until it is acked (*ran* on 3.10): the caller shows no age when nothing is
    ready, and with messages ready the age may be that of one in flight."""
    stamp = item.get("head_message_timestamp")
    if stamp is None or stamp == "":
        return None
    if not _is_number(stamp):
        raise BadResponse(f"{where} sent head_message_timestamp={stamp!r} for queue {item['name']!r}")
    return max(0.0, round(now - float(stamp), 3))


def _text(item: Mapping[str, Any], key: str, default: str, where: str) -> str:
    value = item.get(key, default)
    if not isinstance(value, str):
        raise BadResponse(f"{where} sent {key}={value!r} for queue {item['name']!r}: expected text")
    return value


def _mapping(item: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = item.get(key)
    if value is None or value == []:  # RabbitMQ renders an empty table as []
        return {}
    if not isinstance(value, Mapping):
        raise BadResponse(f"{where} sent {key} for queue {item['name']!r} that is not an object")
    return value


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__
