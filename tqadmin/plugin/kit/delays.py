"""Folding delay queues into the work queues they feed, written once for every plugin and every screen.

A broker that applies retry delays with queues of its own (RabbitMQ's TTL tiers: 25 of them per work queue
at the default 60 s cap) would bury the queues an on-call engineer looks for. A plugin marks such a queue
with :attr:`QueueStats.delay_for`; :func:`fold_delays` adds its messages to that work queue's ``delayed``,
and :func:`work_queues` is what a listing shows unless asked for everything.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from tqadmin.plugin.models import QueueStats


def fold_delays(queues: Sequence[QueueStats]) -> tuple[QueueStats, ...]:
    """Every queue with ``delayed`` set to the messages of the delay queues that feed it (0 when none);
    the delay queues themselves are kept, unchanged, for a view that asks for them."""
    waiting: Counter[str] = Counter()
    for queue in queues:
        if queue.delay_for is not None:
            waiting[queue.delay_for] += queue.messages
    return tuple(
        queue if queue.delay_for is not None else dataclasses.replace(queue, delayed=waiting[queue.name])
        for queue in queues
    )


def work_queues(queues: Iterable[QueueStats], include_delay_queues: bool = False) -> list[QueueStats]:
    """The queues a listing shows: delay queues only when asked for (``--all``, or a key on the board)."""
    return [q for q in queues if include_delay_queues or q.delay_for is None]


def delay_queues_of(queues: Iterable[QueueStats], work_queue: str) -> list[QueueStats]:
    """The delay queues that feed ``work_queue``, in natural order of their names (``2s`` before ``10s``)."""
    return sorted((q for q in queues if q.delay_for == work_queue), key=lambda q: _natural(q.name))


def _natural(name: str) -> list[tuple[int, str]]:
    return [(int(part), "") if part.isdigit() else (-1, part) for part in re.split(r"(\d+)", name)]
