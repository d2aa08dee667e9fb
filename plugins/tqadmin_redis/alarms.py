"""Broker-wide conditions that endanger queued work, read from ``INFO`` (and ``CONFIG GET save``).

Redis has no resource alarm that blocks publishers the way RabbitMQ's does; what loses or refuses work on
Redis is an eviction policy that may drop keys, a full ``maxmemory`` (writes refused), a persistence write
that failed, or no persistence at all (a restart empties every queue).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tqadmin.plugin.models import Alarm

MEMORY_ALARM = 0.9


def alarms_of(node: str, info: Mapping[str, Any], save: str | None) -> list[Alarm]:
    """The alarms of one server. ``save`` is its ``save`` setting, ``None`` when it may not be read."""
    found = []
    policy = str(info.get("maxmemory_policy", "noeviction"))
    if policy != "noeviction":
        found.append(
            Alarm(node, "eviction", f"maxmemory-policy is {policy}: Redis may evict queues; use noeviction")
        )
    used, limit = int(info.get("used_memory", 0)), int(info.get("maxmemory", 0))
    if limit and used > MEMORY_ALARM * limit:
        found.append(
            Alarm(node, "memory", f"memory {used * 100 // limit}% of maxmemory: writes are refused when full")
        )
    if str(info.get("rdb_last_bgsave_status", "ok")) != "ok":
        found.append(Alarm(node, "persistence", "the last RDB save failed: Redis may refuse writes"))
    if int(info.get("aof_enabled", 0)) and str(info.get("aof_last_write_status", "ok")) != "ok":
        found.append(
            Alarm(node, "persistence", "the last AOF write failed: Redis refuses writes until it works")
        )
    if not int(info.get("aof_enabled", 0)) and save == "":
        found.append(
            Alarm(node, "no_persistence", "neither AOF nor RDB snapshots: a restart loses every queue")
        )
    return found
