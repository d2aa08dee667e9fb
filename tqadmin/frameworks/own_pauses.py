"""Pauses another framework keeps itself, readable without writing: shown beside tqadmin's own, never changed.

Sidekiq (Pro and Enterprise) pauses a queue by adding its name to the Redis set ``paused``
(``Sidekiq::Queue#pause!``; its workers stop fetching from it). The Redis plugin reads that set with its
listing (one ``SMEMBERS``) and marks such a queue's figures ``state`` :data:`PAUSED`; every face says it as
:func:`said` does: paused, by whom (the framework), and how that framework resumes it, since tqadmin's own
``resume`` refuses another framework's queue.
"""

from __future__ import annotations

from collections.abc import Iterable

from tqadmin.plugin.models import QueueStats

PAUSED = "paused"
SIDEKIQ_PAUSED_SET = "paused"
_RESUMED_BY = {
    "sidekiq:": "Sidekiq's own pause: Sidekiq::Queue.new(NAME).unpause! or its Web UI resumes it",
}


def said(queue: QueueStats) -> str | None:
    """``paused by Sidekiq itself (...)`` for a queue its own framework paused; ``None`` otherwise."""
    if queue.state != PAUSED or queue.read_only is None:
        return None
    how = next((way for prefix, way in _RESUMED_BY.items() if queue.name.startswith(prefix)), None)
    return f"paused by its framework ({how})" if how else "paused by its framework"


def labels(queues: Iterable[QueueStats]) -> dict[str, str]:
    """What each queue another framework paused says, by queue name."""
    return {q.name: text for q in queues if (text := said(q)) is not None}
