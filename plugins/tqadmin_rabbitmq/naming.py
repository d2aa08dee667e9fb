"""Names tqadmin gives the queues it declares on RabbitMQ; driver-free, so the listing can read them."""

from __future__ import annotations

import re
from collections.abc import Collection

TASK_EXCHANGE = "task_exchange"  # the durable direct exchange jobs are published to (docs/interface.md)
RETRY_INFIX = ".retry."


def tier_queue(queue: str, delay_s: float) -> str:
    """``Q.retry.5s`` or ``Q.retry.1500ms``: the delay queue of one tier."""
    ms = round(delay_s * 1000)
    label = f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"
    return f"{queue}{RETRY_INFIX}{label}"


def is_delay_queue_of(name: str, queue: str) -> bool:
    """Whether ``name`` is one of ``queue``'s retry tiers, whose expired messages go back to ``queue``."""
    return name.startswith(queue + RETRY_INFIX)


_TIER = re.compile(r"(?P<queue>.+)\.retry\.\d+m?s")


def tier_work_queue(name: str, queues: Collection[str]) -> str | None:
    """The work queue ``name`` is a retry tier of (``Q`` for ``Q.retry.5s``), when ``Q`` is listed too."""
    match = _TIER.fullmatch(name)
    return match["queue"] if match and match["queue"] in queues else None
